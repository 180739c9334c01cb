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
"""The plugin inside a real dispatcher (Pike) or publisher (current).

Gnocchi is the fake session behind a real gnocchiclient (fakes.py).
"""

import threading

import fixtures
import yaml

from ceilometer_metriccache import index
from ceilometer_metriccache.tests import base

# Operator-style file: wildcards, a literal shadowed by an earlier
# pattern, per-definition archive policies, wildcard event types.
RESOURCES = [
    {'resource_type': 'host', 'archive_policy': 'high',
     'metrics': ['hardware.cpu.util', 'hardware.ipmi.*']},
    {'resource_type': 'generic', 'archive_policy': 'low',
     'metrics': ['hardware.ipmi.node.power', 'custom.?.rate',
                 'plain.metric'],
     'event_delete': ['thing.delete.*', 'thing.purge'],
     'event_update': 'thing.*.update',
     'event_attributes': {'id': 'resource_id'}},
    {'resource_type': 'swift_account', 'archive_policy': 'low',
     'metrics': ['storage.objects*']},
]


class TestRecord(base.TestCase):

    def setUp(self):
        super(TestRecord, self).setUp()
        self.path = self.write_resources(RESOURCES)
        # Pike's semantics: the default on Pike, opted into on current.
        self.host = self.make_host(resources_file=self.path,
                                   wildcard_metrics=True)

    def test_pattern_matched_metrics_end_to_end(self):
        if base.QUEENS:
            self.skipTest(base.QUEENS_WILDCARDS)
        self.record(self.host, [
            base.sample('hardware.ipmi.fan', 'node-1', 3.0, unit='RPM'),
            base.sample('hardware.ipmi.node.power', 'node-1', 90.0,
                        unit='W'),
            base.sample('hardware.cpu.util', 'node-1', 5.0, unit='%'),
            base.sample('custom.x.rate', 'thing-1', 7.0, unit='1/s'),
        ])
        metrics = self.session.metrics
        self.assertEqual('host', self.session.resources['node-1']['type'])
        self.assertEqual('generic',
                         self.session.resources['thing-1']['type'])
        # Matched by the first definition's pattern: its policy and the
        # sample's unit, the measure posted.
        fan = metrics[('node-1', 'hardware.ipmi.fan')]
        self.assertEqual('high', fan['archive_policy_name'])
        self.assertEqual('RPM', fan['unit'])
        self.assertEqual([3.0], [m['value'] for m in fan['measures']])
        # A literal of the second definition shadowed by the first
        # definition's earlier pattern resolves to the first (as the loop).
        power = metrics[('node-1', 'hardware.ipmi.node.power')]
        self.assertEqual('high', power['archive_policy_name'])
        self.assertEqual([90.0], [m['value'] for m in power['measures']])
        rate = metrics[('thing-1', 'custom.x.rate')]
        self.assertEqual('low', rate['archive_policy_name'])
        self.assertEqual([7.0], [m['value'] for m in rate['measures']])
        # No metric is ever created under a pattern's own name.
        self.assertEqual([], [k for k in metrics if '*' in k[1] or
                              '?' in k[1]])

    def test_upstream_loses_what_the_plugin_records(self):
        upstream = self.make_host(cls=self.upstream_class(),
                                  resources_file=self.path)
        samples = [base.sample('hardware.ipmi.fan', 'node-1', 3.0),
                   base.sample('hardware.cpu.util', 'node-1', 5.0)]
        if base.PIKE:
            # Pike indexes rd.metrics by the literal name: the whole
            # batch, the literal metric included, is lost.
            self.assertRaises(KeyError, self.record, upstream, samples)
            self.assertEqual({}, self.session.metrics)
        else:
            # Current ceilometer dropped wildcard matching (8099a9491),
            # and so does the plugin unless wildcard_metrics is set.
            default = self.make_host(resources_file=self.path)
            for host in (upstream, default):
                self.record(host, samples)
                self.assertNotIn(('node-1', 'hardware.ipmi.fan'),
                                 self.session.metrics)
        self.record(self.host, samples)
        self.assertIn(('node-1', 'hardware.ipmi.fan'), self.session.metrics)

    def test_unhandled_warned_once_per_name(self):
        warning = self.useFixture(fixtures.MockPatch(
            base.host_module.__name__ + '.LOG.warning')).mock
        for _ in range(3):
            self.record(self.host, [base.sample('nobody.wants.this', 'r1'),
                                    base.sample('nor.this', 'r1')])
        text = [str(call) for call in warning.call_args_list]
        self.assertEqual(1, sum('nobody.wants.this' in t for t in text))
        self.assertEqual(1, sum('nor.this' in t for t in text))

    def test_memo_and_logged_names_stay_bounded(self):
        host = self.make_host(resources_file=self.path, memo_size=50,
                              wildcard_metrics=True)
        self.useFixture(fixtures.MockPatch(
            base.host_module.__name__ + '.LOG'))
        for batch in range(20):
            self.record(host, [base.sample('unknown.%d.%d' % (batch, i),
                                           'r%d' % i) for i in range(100)])
        self.assertEqual(50, len(host.metric_index.metrics.memo))
        self.assertEqual(50, len(host._already_logged_metric_names))
        # Still right after 2000 evictions.
        self.assertIs(host.resources_definition[0],
                      self.lookup(host, 'hardware.ipmi.anything'))
        self.assertIsNone(self.lookup(host, 'unknown.0.0'))

    def test_concurrent_lookups(self):
        host = self.make_host(resources_file=self.path, memo_size=64,
                              wildcard_metrics=True)
        definitions = host.resources_definition
        names = ['hardware.ipmi.%d' % i for i in range(200)] + [
            'custom.%d.rate' % (i % 10) for i in range(200)] + [
            'miss.%d' % i for i in range(200)] + ['plain.metric']
        expected = dict((n, base.upstream_metric_loop(definitions, n))
                        for n in names)
        errors = []

        def worker(offset):
            for i in range(3000):
                name = names[(i * 13 + offset) % len(names)]
                got = self.lookup(host, name)
                if got is not expected[name]:
                    errors.append((name, got))
        threads = [threading.Thread(target=worker, args=(n,))
                   for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        self.assertLessEqual(len(host.metric_index.metrics.memo), 64)

    def test_swift_account_samples(self):
        self.assertTrue(self.host._is_swift_account_sample(
            self._as_sample('storage.objects.size')))
        self.assertFalse(self.host._is_swift_account_sample(
            self._as_sample('hardware.ipmi.fan')))
        self.assertFalse(self.host._is_swift_account_sample(
            self._as_sample('unknown')))

    def _as_sample(self, name):
        if base.PIKE:
            return base.sample(name, 'r1')
        from ceilometer import sample as sample_mod
        return sample_mod.Sample(name=name, type='gauge', unit='B',
                                 volume=1, user_id='u', project_id='p',
                                 resource_id='r1')


class TestEvents(base.TestCase):

    def setUp(self):
        super(TestEvents, self).setUp()
        self.host = self.make_host(resources_file=self.write_resources(
            RESOURCES))
        self.session.resources['thing-1'] = {'type': 'generic',
                                             'attributes': {'id': 'thing-1'}}

    def test_pattern_delete_event_ends_resource(self):
        base.publish_events(self.host, [
            base.event('thing.delete.end', 'thing-1')])
        self.assertIn('ended_at',
                      self.session.resources['thing-1']['attributes'])

    def test_lookup_and_operation(self):
        rd, op = self.host._get_resource_definition_from_event(
            'thing.delete.start')
        self.assertEqual(('generic', 'delete'), (rd.cfg['resource_type'], op))
        rd, op = self.host._get_resource_definition_from_event(
            'thing.x.update')
        self.assertEqual('update', op)
        self.assertIsNone(self.host._get_resource_definition_from_event(
            'other.delete.end'))

    def test_unknown_event_types_bounded(self):
        host = self.make_host(resources_file=self.write_resources(
            RESOURCES, 'r2.yaml'), memo_size=20)
        base.publish_events(host, [base.event('nope.%d' % i, 'x')
                                   for i in range(500)])
        self.assertEqual(20, len(host._already_logged_event_types))
        self.assertEqual(20, len(host.metric_index.events.memo))
        self.assertNotIn('ended_at',
                         self.session.resources['thing-1']['attributes'])


class TestBadFiles(base.TestCase):
    """Bad definitions are logged and skipped; the good ones still work."""

    BAD = [
        {'metrics': ['no.type']},                                # missing
        {'resource_type': 'generic', 'metrics': 'not.a.list'},   # type
        {'resource_type': 'generic'},                            # missing
        {'resource_type': 'generic', 'metrics': ['ok', 123]},    # entry
        {'resource_type': 'generic', 'metrics': ['ok2'],
         'event_delete': [['nested']],
         'event_attributes': {'id': 'resource_id'}},             # entry
        {'resource_type': 'generic', 'metrics': ['ev'],
         'event_delete': 'x.delete', 'event_attributes': {}},    # no id
    ]
    GOOD = {'resource_type': 'instance', 'metrics': ['cpu', 'disk.*']}

    def test_bad_definitions_skipped(self):
        path = self.write_resources(self.BAD + [self.GOOD])
        log = self.useFixture(fixtures.MockPatch(
            'ceilometer_metriccache.index.LOG')).mock
        host = self.make_host(resources_file=path, wildcard_metrics=True)
        upstream = self.make_host(cls=self.upstream_class(),
                                  resources_file=path)
        got = [rd.cfg for rd in host.resources_definition]
        # Upstream keeps definitions with non-string entries and fails
        # on them mid-batch; the plugin skips those too, nothing else.
        expected = [rd.cfg for rd in upstream.resources_definition
                    if 123 not in rd.cfg['metrics'] and
                    'event_delete' not in rd.cfg]
        self.assertEqual(expected, got)
        self.assertEqual(['instance'], [c['resource_type'] for c in got])
        logged = ' '.join(str(c) for c in log.error.call_args_list)
        self.assertEqual(2, log.error.call_count)
        self.assertIn('123', logged)
        self.assertIn('nested', logged)
        self.assertIs(host.resources_definition[0],
                      self.lookup(host, 'disk.read'))
        self.assertIsNone(self.lookup(host, 'ok'))
        self.record(host, [base.sample('disk.read', 'vm-1'),
                           base.sample('ok', 'vm-1')])
        self.assertIn(('vm-1', 'disk.read'), self.session.metrics)

    def test_bad_pattern_does_not_stop_the_agent(self):
        """A pattern 2.7's re rejects matches nothing, on any interpreter.

        Pike's loop raises on it (on 2.7) for any name that reaches it;
        the plugin logs it once at start-up and keeps every other entry.
        """
        path = self.write_resources([
            {'resource_type': 'instance', 'metrics': ['cpu', 'c[z-a]*'],
             'event_delete': ['vm.[!z-a]', 'vm.delete'],
             'event_attributes': {'id': 'resource_id'}},
            {'resource_type': 'generic', 'metrics': ['c*']}])
        self.useFixture(fixtures.MockPatchObject(
            index, '_LOGGED_BAD_PATTERNS', set()))
        log = self.useFixture(fixtures.MockPatch(
            'ceilometer_metriccache.index.LOG')).mock
        host = self.make_host(resources_file=path, wildcard_metrics=True)
        self.make_host(resources_file=path, wildcard_metrics=True)
        self.assertEqual(2, log.warning.call_count)
        logged = [c[0][1] for c in log.warning.call_args_list]
        self.assertEqual([('instance', 'metrics', 'c[z-a]*'),
                          ('instance', 'event_delete', 'vm.[!z-a]')],
                         [(a['type'], a['field'], a['entry'])
                          for a in logged])
        instance, generic = host.resources_definition
        self.assertIs(instance, self.lookup(host, 'cpu'))
        self.assertIs(generic, self.lookup(host, 'cb'))
        self.assertIsNone(host._get_resource_definition_from_event('vm.x'))
        self.assertEqual((instance, 'delete'),
                         host._get_resource_definition_from_event(
                             'vm.delete'))
        self.record(host, [base.sample('cb', 'r1'), base.sample('cpu', 'r2')])
        self.assertEqual(['r1', 'r2'], sorted(self.session.resources))

    def test_invalid_yaml_fails_like_upstream(self):
        path = self.write_resources([])
        with open(path, 'w') as f:
            f.write('resources: [unclosed\n')
        self.assertRaises(yaml.YAMLError, self.make_host,
                          cls=self.upstream_class(), resources_file=path)
        self.assertRaises(yaml.YAMLError, self.make_host,
                          resources_file=path)
