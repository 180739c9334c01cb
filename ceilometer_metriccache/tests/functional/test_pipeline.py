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
"""The plugin as ceilometer's pipeline loads it, end to end.

The publisher is found by URL scheme through the installed entry points
(``ceilometer.publisher.get_publisher``, what pipeline.yaml does), then
fed ceilometer Sample and Event objects; gnocchi is the fake session behind
a real gnocchiclient. On Pike the scheme loads DirectPublisher, which loads
the dispatcher of the same name.
"""

import copy
import itertools

from ceilometer import publisher as ceilo_publisher
from ceilometer import sample as sample_mod
from oslo_utils import netutils

from ceilometer_metriccache import index
from ceilometer_metriccache.tests import base
from ceilometer_metriccache.tests import fakes

RESOURCES = [
    {'resource_type': 'host', 'archive_policy': 'high',
     'metrics': ['hardware.cpu.util', 'hardware.ipmi.*']},
    {'resource_type': 'generic', 'metrics': ['other.*'],
     'event_delete': 'thing.delete.*',
     'event_attributes': {'id': 'resource_id'}},
]


def _samples(names, resources):
    return [sample_mod.Sample(name=name, type='gauge', unit='u',
                              volume=float(i), user_id='u', project_id='p',
                              resource_id=rid,
                              timestamp='2024-01-01T00:00:%02d' % (i % 60),
                              resource_metadata={})
            for i, (rid, name) in enumerate(itertools.product(resources,
                                                              names))]


class TestPipelineLoading(base.TestCase):

    def setUp(self):
        super(TestPipelineLoading, self).setUp()
        self.stub_clients()
        self.path = self.write_resources(RESOURCES)
        # Pike's semantics: the default on Pike, opted into on current.
        self.conf = self.make_conf(resources_file=self.path,
                                   wildcard_metrics=True)

    def _publisher(self, namespace, query=''):
        return ceilo_publisher.get_publisher(
            self.conf, self.publisher_url(self.path, query), namespace)

    def test_scheme_is_a_valid_url_scheme(self):
        self.assertEqual('gnocchi-metriccache',
                         netutils.urlsplit(self.publisher_url()).scheme)

    def test_samples_through_the_pipeline_publisher(self):
        if base.QUEENS:
            self.skipTest(base.QUEENS_WILDCARDS)
        pub = self._publisher('ceilometer.sample.publisher')
        if base.PIKE:
            from ceilometer.publisher import direct
            from ceilometer_metriccache import pike_dispatcher
            self.assertIsInstance(pub, direct.DirectPublisher)
            self.assertIsInstance(pub.get_sample_dispatcher(),
                                  pike_dispatcher.MetricCacheDispatcher)
        else:
            from ceilometer_metriccache import current_publisher
            self.assertIsInstance(pub,
                                  current_publisher.MetricCachePublisher)
        # One definition per resource, as in real streams.
        pub.publish_samples(
            _samples(['hardware.ipmi.fan', 'hardware.cpu.util', 'none'],
                     ['n1', 'n2']) + _samples(['other.x'], ['n2', 't1']))
        metrics = self.session.metrics
        self.assertEqual(['n1', 'n2', 't1'], sorted(self.session.resources))
        self.assertEqual('generic', self.session.resources['t1']['type'])
        self.assertEqual('high',
                         metrics[('n1', 'hardware.ipmi.fan')]
                         ['archive_policy_name'])
        self.assertEqual(1, len(metrics[('t1', 'other.x')]['measures']))
        self.assertNotIn(('n1', 'none'), metrics)

    def test_events_through_the_pipeline_publisher(self):
        self.session.resources['t1'] = {'type': 'generic',
                                        'attributes': {'id': 't1'}}
        pub = self._publisher('ceilometer.event.publisher')
        if base.PIKE:
            from ceilometer.event.storage import models
        else:
            from ceilometer.event import models
        pub.publish_events([models.Event(
            'm1', 'thing.delete.end', '2024-01-01T00:00:00',
            [models.Trait('resource_id', 1, 't1')], {})])
        self.assertIn('ended_at', self.session.resources['t1']['attributes'])

    def test_query_options_of_gnocchi_kept(self):
        if base.QUEENS:
            self.skipTest(base.QUEENS_WILDCARDS)
        if base.PIKE:
            # Pike's DirectPublisher takes ?dispatcher=; the dispatcher's
            # options live in [dispatcher_gnocchi] as for gnocchi://.
            pub = self._publisher('ceilometer.sample.publisher')
            self.assertEqual('gnocchi-metriccache', pub.dispatcher_name)
            return
        pub = self._publisher('ceilometer.sample.publisher',
                              '&archive_policy=medium&timeout=3')
        pub.publish_samples(_samples(['hardware.ipmi.fan'], ['n1']) +
                            _samples(['other.y'], ['t1']))
        metrics = self.session.metrics
        self.assertEqual('medium',
                         metrics[('t1', 'other.y')]['archive_policy_name'])
        # As for gnocchi://, a definition-level archive_policy (deprecated)
        # still beats the URL's override.
        self.assertEqual('high', metrics[('n1', 'hardware.ipmi.fan')]
                         ['archive_policy_name'])


class TestSameResultAsUpstream(base.TestCase):
    """Stock resource file: the same writes to gnocchi as upstream.

    One batch covers every metric listed in the installed release's file.
    """

    def test_same_gnocchi_state(self):
        names = sorted(set(
            m for c in base.load_stock_definitions()
            for m in (c['metrics'] if isinstance(c['metrics'], list)
                      else list(c['metrics'])) if not index.is_pattern(m)))
        names.append('not.handled.anywhere')
        # Queens' own publisher drops a batch (KeyError) where one
        # resource gets metrics of two definitions: one resource per
        # definition there, as in real streams.
        owner = {}
        for c in base.load_stock_definitions():
            for m in c['metrics']:
                owner[m] = c['resource_type']  # last definition wins

        def resource_id(i, name):
            if base.QUEENS:
                return 'res-%d-%s' % (i % 7, owner.get(name, ''))
            return 'res-%d' % (i % 7)
        batch = [base.sample(name, resource_id(i, name), float(i))
                 for i, name in enumerate(names * 2)]
        states = []
        for cls in (self.upstream_class(), self.plugin_class()):
            self.session = fakes.FakeGnocchiSession()
            host = self.make_host(cls=cls)
            self.record(host, copy.deepcopy(batch))
            states.append((self.session.resources, self.session.metrics))
        self.assertTrue(states[0][1])
        self.assertEqual(states[0], states[1])
