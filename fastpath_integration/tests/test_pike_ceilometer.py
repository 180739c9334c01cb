"""Pike's ceilometer-agent-notification 9.0.7 on CPython 2.7, plugin on.

The metric-cache dispatcher enabled as README tells Pike operators
(``- gnocchi-metriccache://`` in both pipelines), against the same
RabbitMQ and gnocchi as the current agents; the same checks as theirs.
"""

import os
import uuid

from fastpath_integration import bus
from fastpath_integration.harness import ceilometer
from fastpath_integration.tests import test_ceilometer

# A definition whose pattern no regex compiles (a reversed range).
BAD_PATTERN_RESOURCES = (
    '\n  - resource_type: generic\n'
    '    metrics:\n'
    '      - fastpath.bad[z-a]\n')


class PikeCeilometerTestCase(test_ceilometer.CeilometerTestCase):
    """Exact, wildcard, unmatched metrics and image.delete, on Pike."""

    agents_key = 'ceilometer_pike'

    def test_agent_runs_the_plugin_on_pike(self):
        agent = self.agents[self.agent]
        self.assertIn('/lib/python2.7/site-packages/ceilometer/dispatcher/',
                      agent['dispatcher'])
        with open(agent['log']) as f:
            self.assertNotIn('Traceback', f.read())


class PikeBadPatternTestCase(test_ceilometer.AgentTestBase):
    """A resource file with a pattern no regex compiles.

    Pike's own dispatcher only fails on the lookups that reach that
    pattern; the plugin compiles every pattern when it loads, and must
    not take the agent down with it: the agent starts, and the other
    definitions still deliver.
    """

    agents_key = 'ceilometer_pike'

    def test_bad_pattern_does_not_stop_the_agent(self):
        name = 'bad-pattern-%s' % uuid.uuid4().hex[:6]
        topic = 'notifications-pike-%s' % name
        agent = self.useFixture(ceilometer.CeilometerAgent(
            self.env['rundir'], name, topic, self.env['transport_url'],
            self.gnocchi, release='pike', publisher='plugin',
            resources_extra=BAD_PATTERN_RESOURCES))
        with open(os.path.join(
                self.env['rundir'], 'pike-ceilometer-%s' % name,
                'gnocchi_resources.yaml')) as f:
            self.assertIn('fastpath.bad[z-a]', f.read())
        notifier = bus.notifier(self.env['transport_url'], topic,
                                'ceilometer')
        self.addCleanup(notifier.transport.cleanup)
        rid = self.resource_id()
        wild = 'fastpath.wild.%s' % uuid.uuid4().hex[:8]
        bus.send_samples(notifier, [
            bus.sample('fastpath.exact.metric', rid, 5.0),
            bus.sample(wild, rid, 6.0)])
        self.assertEqual(5.0, self.wait_measures(
            'generic', rid, 'fastpath.exact.metric')[-1][2])
        self.assertEqual(6.0, self.wait_measures('generic', rid,
                                                 wild)[-1][2])
        self.assertIsNone(agent.service.proc.poll(), 'the agent exited')
