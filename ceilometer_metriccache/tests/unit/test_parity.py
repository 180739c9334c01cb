# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The contract: the same answer as upstream's own code, always.

For any event type, and for any metric name with Pike's semantics, the
index returns the very definition (and operation) upstream's fnmatch loop
returns, over the resource file shipped in the installed ceilometer and
over generated files with wildcards, overlapping patterns, literals
shadowed by earlier patterns and more than 256 patterns. On current
ceilometer the plugin's default ``metric_map`` is checked against the one
upstream's publisher builds.
"""

import copy

import fixtures
import hypothesis
from hypothesis import strategies as st

from ceilometer_metriccache import index
from ceilometer_metriccache.tests import base

# No target phase: nothing here calls target(), and on Python 2.7
# hypothesis 4.57 still runs its Pareto optimiser in that phase, which
# spent over 20 minutes shrinking one passing test of this module in CI.
SETTINGS = hypothesis.settings(max_examples=300, deadline=None,
                               phases=[phase for phase in hypothesis.Phase
                                       if phase.name != 'target'],
                               suppress_health_check=list(
                                   hypothesis.HealthCheck))

# Small alphabets so that generated names and entries collide often.
_LITERAL = st.text(alphabet='ab.', min_size=0, max_size=4)
_TOKEN = st.sampled_from(['a', 'b', '.', 'ab', '*', '?', '[ab]', '[!a]',
                          '[', ']', '[.]', '*.*'])
_ENTRY = st.one_of(_LITERAL, st.lists(_TOKEN, min_size=1, max_size=4).map(
    ''.join))
_NAME = st.text(alphabet='ab.[]!*?c', min_size=0, max_size=6)
_TYPES = st.sampled_from(['instance', 'generic', 'swift_account', 'volume'])


@st.composite
def _definition(draw):
    cfg = {'resource_type': draw(_TYPES),
           'metrics': draw(st.lists(_ENTRY, min_size=1, max_size=6))}
    for key in ('event_create', 'event_delete', 'event_update'):
        if draw(st.booleans()):
            entries = draw(st.lists(_ENTRY, min_size=1, max_size=3))
            cfg[key] = entries[0] if len(entries) == 1 else entries
    if any(k.startswith('event_') for k in cfg):
        cfg['event_attributes'] = {'id': 'resource_id'}
    return cfg


_FILES = st.lists(_definition(), min_size=1, max_size=8)


def _names_for(cfgs, draw):
    """Generated names plus every entry of the file, used as a name."""
    listed = set()
    for cfg in cfgs:
        listed.update(cfg['metrics'])
        for key in ('event_create', 'event_delete', 'event_update'):
            value = cfg.get(key, [])
            listed.update(value if isinstance(value, list) else [value])
    names = draw(st.lists(_NAME, max_size=30))
    return sorted(listed) + names


class ParityMixin(object):

    def assert_metric_parity(self, idx, definitions, names):
        for name in names:
            expected = base.upstream_metric_loop(definitions, name)
            got = idx.metric_lookup(name)
            self.assertIs(expected, got, 'metric %r' % name)
            if base.PIKE:
                self.assertEqual(base.upstream_is_swift(definitions, name),
                                 idx.any_swift_account(name), name)

    def assert_event_parity(self, idx, definitions, names):
        for name in names:
            expected = base.upstream_event_loop(definitions, name)
            got = idx.event_lookup(name)
            if expected is None:
                self.assertIsNone(got, 'event %r' % name)
            else:
                self.assertIs(expected[0], got[0], 'event %r' % name)
                self.assertEqual(expected[1], got[1], 'event %r' % name)


class TestGeneratedFiles(ParityMixin, base.TestCase):

    @SETTINGS
    @hypothesis.given(cfgs=_FILES, data=st.data(),
                      memo_size=st.sampled_from([1, 3, 10000]))
    def test_metric_and_event_parity(self, cfgs, data, memo_size):
        definitions = [base.make_definition(copy.deepcopy(c)) for c in cfgs]
        idx = index.DefinitionIndex(definitions, memo_size)
        names = _names_for(cfgs, data.draw)
        # Twice: the second pass answers from the memo (or, with a tiny
        # bound, after evictions) and must not differ.
        for _ in range(2):
            self.assert_metric_parity(idx, definitions, names)
            self.assert_event_parity(idx, definitions, names)

    @SETTINGS
    @hypothesis.given(data=st.data())
    def test_more_than_256_overlapping_patterns(self, data):
        # 40 definitions x 8 entries: 280 patterns, overlapping on
        # purpose (m1* covers m10*, m1?.x ...), with literals interleaved
        # so that some are shadowed by earlier patterns.
        cfgs = []
        for d in range(40):
            metrics = ['m%d*' % (d % 13), 'm%02d?.x' % d, 'm[%d-9]%d' % (
                d % 10, d % 7), '*.%d' % d, 'm%d.lit' % d,
                'm%d.[!x]*' % (d % 5), '?%d?' % (d % 9), 'm%d.??' % d]
            cfgs.append({'resource_type': 'generic', 'metrics': metrics})
        definitions = [base.make_definition(c) for c in cfgs]
        patterns = sum(1 for rd in definitions
                       for m in index.metric_entries(rd)
                       if index.is_pattern(m))
        self.assertGreater(patterns, 256)
        idx = index.DefinitionIndex(definitions, 64)
        names = data.draw(st.lists(
            st.text(alphabet='m0123456789.xy', min_size=1, max_size=6),
            min_size=1, max_size=60))
        names += ['m%d.lit' % d for d in range(40)]
        self.assert_metric_parity(idx, definitions, names)


class TestOddPatterns(ParityMixin, base.TestCase):
    """Entries fnmatch reads in surprising ways, as fnmatch reads them.

    Except the ones Python 2.7's re rejects (reversed ranges): 2.7's
    fnmatch raises on them, 3.x reads ``[z-ab]`` as ``[b]`` and ``[!z-a]``
    as "anything"; the plugin makes them match nothing on both.
    """

    BAD = ['[z-a]', '[!z-a]', 'a[z-ab]', '[a-\\]', 'x[b-a]*']
    ENTRIES = ['[', 'a[', '[]', '[]]', '[!]', '[!]]', 'a[b-]', '[]-a]',
               '[!]-a]', '\\', 'a\\*', '(a|b)', 'a.+', '^a$', '{a,b}',
               '**', '?', '', 'a]', '[b-a', 'x[z-a'] + BAD

    def setUp(self):
        super(TestOddPatterns, self).setUp()
        self.useFixture(fixtures.MockPatchObject(
            index, '_LOGGED_BAD_PATTERNS', set()))
        self.log = self.useFixture(fixtures.MockPatchObject(
            index, 'LOG')).mock

    def _definitions(self):
        cfgs = [{'resource_type': 'type%d' % i, 'metrics': [e],
                 'event_delete': e,
                 'event_attributes': {'id': 'resource_id'}}
                for i, e in enumerate(self.ENTRIES)]
        return [base.make_definition(c) for c in cfgs]

    def test_odd_entries(self):
        definitions = self._definitions()
        idx = index.DefinitionIndex(definitions, 8)
        names = self.ENTRIES + ['a', 'b', ']', 'z', 'a-', 'ab', 'a\\b',
                                'aa', 'a.b', '{a,b}', 'x', '-', '\\',
                                'xa', 'xab', 'x[z-a']
        with base.bad_patterns_match_nothing(self.BAD):
            self.assert_metric_parity(idx, definitions, names)
            self.assert_event_parity(idx, definitions, names)

    def test_bad_patterns_match_nothing_and_are_logged_once(self):
        for entry in self.BAD:
            self.assertIsNotNone(index.pattern_problem(entry), entry)
        for entry in self.ENTRIES[:-len(self.BAD)]:
            self.assertIsNone(index.pattern_problem(entry), entry)
        definitions = self._definitions()
        # A Pike agent builds one index per dispatcher (samples, events).
        for _ in range(2):
            index.DefinitionIndex(definitions, 8)
        # Over the bad entries alone, nothing resolves.
        idx = index.DefinitionIndex(
            [rd for rd in definitions
             if index.metric_entries(rd)[0] in self.BAD],
            8)
        for entry in self.BAD:
            for name in ('a', 'b', 'z', '-', '\\', 'xa', 'xab', entry):
                self.assertIsNone(idx.metric_lookup(name), name)
                self.assertIsNone(idx.event_lookup(name), name)
        logged = [c[0][1] for c in self.log.warning.call_args_list]
        # One line per bad entry and field, naming the definition.
        self.assertEqual(2 * len(self.BAD), len(logged))
        for entry in self.BAD:
            rtype = 'type%d' % self.ENTRIES.index(entry)
            self.assertEqual(
                [('metrics', rtype), ('event_delete', rtype)],
                [(a['field'], a['type']) for a in logged
                 if a['entry'] == entry])


class TestStockFile(ParityMixin, base.TestCase):
    """The gnocchi_resources.yaml of the installed ceilometer release.

    The plugin with its default settings, against upstream's own code:
    Pike's fnmatch loop on Pike, the ``metric_map`` current ceilometer's
    publisher builds on current releases.
    """

    def setUp(self):
        super(TestStockFile, self).setUp()
        self.host = self.make_host()
        self.upstream = self.make_host(cls=self.upstream_class())
        self.definitions = self.host.resources_definition
        self.listed = sorted(set(
            m for rd in self.definitions for m in index.metric_entries(rd)))
        self.events = sorted(set(
            e for rd in self.definitions for e, _ in index.event_entries(rd)))

    def assert_same_metric(self, name):
        """The plugin's answer is upstream's (each host has its copies)."""
        if base.PIKE:
            expected = base.upstream_metric_loop(
                self.upstream.resources_definition, name)
        else:
            expected = self.upstream.metric_map.get(name)
        got = self.lookup(self.host, name)
        self.assertEqual(expected is None, got is None, name)
        if expected is not None:
            self.assertEqual(expected.cfg, got.cfg, name)

    def test_nothing_dropped(self):
        self.assertEqual(
            [rd.cfg for rd in self.upstream.resources_definition],
            [rd.cfg for rd in self.definitions])
        self.assertGreater(len(self.listed), 100)

    def test_every_listed_metric(self):
        for name in self.listed:
            self.assert_same_metric(name)
        if base.PIKE:
            self.assert_metric_parity(self.host.metric_index,
                                      self.definitions, self.listed)

    def test_every_listed_event(self):
        self.assertTrue(self.events)
        self.assert_event_parity(self.host.metric_index, self.definitions,
                                 self.events)
        for name in self.events:
            self.assertEqual(
                base.upstream_event_loop(self.definitions, name),
                self.host._get_resource_definition_from_event(name))

    @SETTINGS
    @hypothesis.given(data=st.data())
    def test_generated_names(self, data):
        listed = st.sampled_from(self.listed)
        mutated = st.tuples(listed, st.text(max_size=3),
                            st.text(max_size=3)).map(
            lambda t: t[1] + t[0] + t[2])
        names = data.draw(st.lists(st.one_of(listed, mutated, st.text()),
                                   max_size=20))
        events = data.draw(st.lists(st.one_of(
            st.sampled_from(self.events), st.text(max_size=30)),
            max_size=10))
        for name in names:
            self.assert_same_metric(name)
        self.assert_event_parity(self.host.metric_index, self.definitions,
                                 events)


class TestCurrentDefault(base.TestCase):
    """Current ceilometer: upstream's metric semantics unless opted out."""

    RESOURCES = [
        {'resource_type': 'host', 'metrics': ['cpu', 'hardware.ipmi.*']},
        {'resource_type': 'generic', 'metrics': ['cpu', 'disk.read']},
    ]

    def setUp(self):
        super(TestCurrentDefault, self).setUp()
        if base.PIKE:
            self.skipTest(base.NOT_CURRENT)
        self.path = self.write_resources(self.RESOURCES)

    def _types(self, host, names):
        return [getattr(host.metric_map.get(n), 'cfg', {}).get(
            'resource_type') for n in names]

    def test_default_is_upstreams_metric_map(self):
        names = ['cpu', 'disk.read', 'hardware.ipmi.*', 'hardware.ipmi.fan',
                 'none']
        plugin = self.make_host(resources_file=self.path)
        upstream = self.make_host(cls=self.upstream_class(),
                                  resources_file=self.path)
        self.assertIs(dict, type(plugin.metric_map))
        self.assertEqual(self._types(upstream, names),
                         self._types(plugin, names))
        # What upstream's own code gives: last definition wins, entries
        # are literal names.
        self.assertEqual(['generic', 'generic', 'host', None, None],
                         self._types(plugin, names))

    def test_wildcard_metrics_opt_in(self):
        plugin = self.make_host(resources_file=self.path,
                                wildcard_metrics=True)
        self.assertEqual(['host', 'generic', 'host', 'host', None],
                         self._types(plugin, ['cpu', 'disk.read',
                                              'hardware.ipmi.*',
                                              'hardware.ipmi.fan', 'none']))
