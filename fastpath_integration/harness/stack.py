"""Everything the integration tests talk to, composed from the leaves.

The infrastructure (PostgreSQL, RabbitMQ, gnocchi; a real 3-node
sheepdog cluster with two copies and the sheepdog emulator), then the
OpenStack services on it: ceilometer agents and glance-apis of the
current release and of Pike. ``Stack.info`` says where each is; it is
written to a JSON file the tests read (``FASTPATH_INTEGRATION_ENV``).

One real cluster serves the whole run; every test works on its own
images, so its own VDIs. The emulator serves one thing the real cluster
cannot give on demand: a fault injected at a chosen byte of one VDI's
transfer (the glance fault tests upload to its backend). Where no real
sheepdog can be found or built, the real-cluster entries hold the reason
instead (``sheepdog_skip``) and the tests that need them skip with it.
"""

import concurrent.futures
import json
import logging
import os

import fixtures

from fastpath_integration.harness import ceilometer
from fastpath_integration.harness import devstack
from fastpath_integration.harness import glance
from fastpath_integration.harness import infrastructure
from fastpath_integration.harness import pike_sources
from fastpath_integration.harness import sheepdog
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)

STOCK_TOPIC = 'notifications-stock'
PIKE_TOPIC = 'notifications-pike'
PLUGIN_TOPIC = 'notifications'
# The backend id of the emulator in the current glance-apis.
EMULATOR_BACKEND = 'emulator'
# Real deployments: several sheep, objects replicated.
CLUSTER_NODES = 3
CLUSTER_COPIES = 2
# The devstack plugin's fastsheep-cluster, as its settings default.
DEVSTACK_NODES = 3
DEVSTACK_COPIES = 2


def describe(sheep):
    """What the tests need of a real cluster or of the emulator."""
    info = {'address': sheep.address, 'port': str(sheep.port),
            'dog': sheep.dog_path, 'bin_dir': sheep.bin_dir}
    if hasattr(sheep, 'knobs_file'):
        info['knobs_file'] = sheep.knobs_file
    return info


def install_project(rundir):
    """Install this project into every service venv that loads it.

    The current venvs get one wheel, pip installed, not editable and not
    from uWSGI's working directory, as devstack's install phase does;
    the Pike venvs get it the way a Pike operator installs it
    (pike_sources.install_project).
    """
    log = venvs.install_wheel(rundir, (glance.VENVS['current', 'uwsgi'],
                                       glance.VENVS['current', 'eventlet'],
                                       ceilometer.VENVS['current']))
    for service in (glance.VENVS['pike', 'eventlet'],
                    ceilometer.VENVS['pike']):
        pike_sources.install_project(service, log)


class Stack(fixtures.Fixture):
    """The services, and a JSON file saying where they are.

    ``plugins=False``: stock services only (file store, ``gnocchi://``),
    no sheepdog.
    """

    def __init__(self, rundir, plugins=True):
        super(Stack, self).__init__()
        self.rundir = rundir
        self.plugins = plugins

    def _setUp(self):
        self.info = {'rundir': self.rundir,
                     'report': os.path.join(self.rundir, 'report.txt')}
        # Venvs first, built side by side: a fresh machine spends most of
        # its time here (uWSGI and psycopg2 compile).
        built = (set(glance.VENVS.values()) | set(ceilometer.VENVS.values())
                 | {'gnocchi'})
        with concurrent.futures.ThreadPoolExecutor(len(built)) as ex:
            for future in [ex.submit(venvs.ensure_venv, service)
                           for service in sorted(built)]:
                future.result()
        if self.plugins:
            install_project(self.rundir)
        pg = self.useFixture(infrastructure.PostgreSQL(self.rundir))
        rabbit = self.useFixture(infrastructure.RabbitMQ(self.rundir))
        gnocchi = self.useFixture(infrastructure.Gnocchi(
            self.rundir, pg.urls['gnocchi']))
        self.info.update(transport_url=rabbit.url, gnocchi_url=gnocchi.url)
        self._agents(rabbit, gnocchi)
        cluster = emulator = None
        if self.plugins:
            cluster = self._real_cluster()
            emulator = self.useFixture(
                infrastructure.SheepdogEmulator(self.rundir))
            self.info['emulator'] = describe(emulator)
        for key, server in (('glance', 'uwsgi'),
                            ('glance_eventlet', 'eventlet')):
            api = self.useFixture(glance.Glance(
                self.rundir, key, sheepdog=cluster, server=server,
                db_url=pg.urls[key],
                backends={EMULATOR_BACKEND: emulator} if emulator else None))
            self.info[key] = {'url': api.url, 'backend': api.backend,
                              'conf': api.conf, 'pid': api.pid,
                              'server': server}
            if emulator:
                self.info[key]['fault_backend'] = EMULATOR_BACKEND
        if cluster is not None:
            # Pike's glance-api on 2.7: the plugin, the in-tree driver that
            # wrote what Pike clouds already hold, and that driver with
            # patches/glance_store.
            for key, store in (('glance_pike', 'fastsheep'),
                               ('glance_pike_intree', 'sheepdog'),
                               ('glance_pike_patched', 'patched')):
                api = self.useFixture(glance.Glance(
                    self.rundir, 'pike-glance-%s' % store, sheepdog=cluster,
                    release='pike', server='eventlet', store=store))
                self.info[key] = {'url': api.url, 'store': store,
                                  'conf': api.conf, 'pid': api.pid,
                                  'driver_file': api.driver_file,
                                  'server': 'eventlet-py27'}
            self._devstack_glance(pg)
        self.env_file = os.path.join(self.rundir, 'env.json')
        with open(self.env_file, 'w') as f:
            json.dump(self.info, f, indent=2)

    def _agents(self, rabbit, gnocchi):
        agents = {}
        for name, publisher, topic in (
                ('plugin', 'plugin' if self.plugins else 'stock',
                 PLUGIN_TOPIC),
                ('stock', 'stock', STOCK_TOPIC)):
            # The plugin agent opts into wildcard metrics, which the
            # suite's wildcard test checks end to end; the stock agent
            # shows upstream dropping those names. The first one creates
            # gnocchi's resource types for all.
            agent = self.useFixture(ceilometer.CeilometerAgent(
                self.rundir, name, topic, rabbit.url, gnocchi.url,
                publisher=publisher, upgrade=not agents,
                wildcard_metrics=publisher == 'plugin'))
            agents[name] = {'topic': topic, 'pid': agent.pid,
                            'log': agent.log, 'pipeline': agent.pipeline}
        self.info['ceilometer'] = agents
        if self.plugins:
            # Pike's agent on 2.7 with the plugin, as README says.
            agent = self.useFixture(ceilometer.CeilometerAgent(
                self.rundir, 'plugin', PIKE_TOPIC, rabbit.url, gnocchi.url,
                release='pike', publisher='plugin'))
            self.info['ceilometer_pike'] = {'plugin': {
                'topic': PIKE_TOPIC, 'pid': agent.pid, 'log': agent.log,
                'pipeline': agent.pipeline,
                'dispatcher': agent.dispatcher_file}}

    def _devstack_glance(self, pg):
        """The plugin's fastsheep-cluster and a glance-api on it.

        The cluster is built and started by devstack/lib/sheepdog, and
        glance's default store pointed at it by the same functions as in
        a stack.sh run (the uWSGI glance-api of the current release, one
        worker: one round trip is all its test does).
        """
        cluster = self.useFixture(devstack.DevstackCluster(
            self.rundir, nodes=DEVSTACK_NODES, copies=DEVSTACK_COPIES))
        self.info['devstack_sheepdog'] = dict(
            describe(cluster), nodes=DEVSTACK_NODES, copies=DEVSTACK_COPIES,
            isolated=cluster.isolated, pids=cluster.pids)
        api = self.useFixture(glance.Glance(
            self.rundir, 'glance_devstack', sheepdog=cluster,
            server='uwsgi', db_url=pg.urls['glance_devstack'], workers=1))
        self.info['glance_devstack'] = {
            'url': api.url, 'backend': api.backend, 'conf': api.conf,
            'pid': api.pid, 'server': 'uwsgi'}

    def _real_cluster(self):
        """The run's real cluster, or None with the reason in the info."""
        try:
            sheepdog.prefix()
        except sheepdog.Unavailable as exc:
            LOG.warning('real-cluster tests will skip: %s', exc)
            self.info['sheepdog_skip'] = str(exc)
            return None
        cluster = self.useFixture(sheepdog.SheepdogCluster(
            nodes=CLUSTER_NODES, copies=CLUSTER_COPIES))
        self.info['sheepdog'] = dict(
            describe(cluster), nodes=CLUSTER_NODES, copies=CLUSTER_COPIES,
            isolated=cluster.isolated)
        LOG.info('sheepdog: %d nodes, %d copies, gateway %s:%d',
                 CLUSTER_NODES, CLUSTER_COPIES, cluster.address,
                 cluster.port)
        return cluster
