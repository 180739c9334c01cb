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
"""The contract: the same answer as upstream's fnmatch loop, always.

For any metric name and event type, the index returns the very definition
(and operation) the loop returns, over the resource file shipped in the
installed ceilometer and over generated files with wildcards, overlapping
patterns, literals shadowed by earlier patterns and more than 256 patterns.
"""

import copy

import hypothesis
from hypothesis import strategies as st

from ceilometer_metriccache import index
from ceilometer_metriccache.tests import base

SETTINGS = hypothesis.settings(max_examples=300, deadline=None,
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
            got = idx.metric(name)
            self.assertIs(expected, got, 'metric %r' % name)
            swift = (idx.any_swift_account if base.PIKE
                     else idx.is_swift_account)
            self.assertEqual(base.upstream_is_swift(definitions, name),
                             swift(name), name)

    def assert_event_parity(self, idx, definitions, names):
        for name in names:
            expected = base.upstream_event_loop(definitions, name)
            got = idx.event(name)
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
    """Entries fnmatch reads in surprising ways, as fnmatch reads them."""

    ENTRIES = ['[', 'a[', '[]', '[]]', '[!]', '[!]]', '[z-a]', 'a[b-]',
               '\\', 'a\\*', '(a|b)', 'a.+', '^a$', '{a,b}', '**',
               '?', '', 'a]']

    def test_odd_entries(self):
        cfgs = [{'resource_type': 'generic', 'metrics': [e],
                 'event_delete': e,
                 'event_attributes': {'id': 'resource_id'}}
                for e in self.ENTRIES]
        definitions = [base.make_definition(c) for c in cfgs]
        idx = index.DefinitionIndex(definitions, 8)
        names = self.ENTRIES + ['a', 'b', ']', 'z', 'a-', 'ab', 'a\\b',
                                'aa', 'a.b', '{a,b}', 'x']
        self.assert_metric_parity(idx, definitions, names)
        self.assert_event_parity(idx, definitions, names)


class TestStockFile(ParityMixin, base.TestCase):
    """The gnocchi_resources.yaml of the installed ceilometer release."""

    def setUp(self):
        super(TestStockFile, self).setUp()
        self.host = self.make_host()
        self.definitions = self.host.resources_definition
        self.listed = sorted(set(
            m for rd in self.definitions for m in index.metric_entries(rd)))
        self.events = sorted(set(
            e for rd in self.definitions for e, _ in index.event_entries(rd)))

    def test_nothing_dropped(self):
        upstream = self.make_host(cls=self.upstream_class())
        self.assertEqual(
            [rd.cfg['resource_type'] for rd in upstream.resources_definition],
            [rd.cfg['resource_type'] for rd in self.definitions])
        self.assertGreater(len(self.listed), 100)

    def test_every_listed_metric(self):
        for name in self.listed:
            self.assertIs(base.upstream_metric_loop(self.definitions, name),
                          self.lookup(self.host, name), name)
        self.assert_metric_parity(self.host.metric_index, self.definitions,
                                  self.listed)

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
            self.assertIs(base.upstream_metric_loop(self.definitions, name),
                          self.lookup(self.host, name), name)
        self.assert_event_parity(self.host.metric_index, self.definitions,
                                 events)
