"""The real services the integration suite runs against.

PostgreSQL and RabbitMQ are reused when already running, else started as
private instances on free loopback ports in the run directory. gnocchi,
ceilometer and glance run from their own cached venvs. Glance and
ceilometer get their plugin configuration from devstack/lib/fastpath,
the functions the devstack plugin runs, so this suite tests what
devstack writes.
"""

import concurrent.futures
import glob
import json
import logging
import os
import shutil
import signal
import subprocess
import uuid

import fixtures
import requests

from fastpath_integration import bus
from fastpath_integration.harness import pike_ceilometer
from fastpath_integration.harness import pike_glance
from fastpath_integration.harness import pike_sources
from fastpath_integration.harness import processes
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)

TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
LIB_FASTPATH = os.path.join(TOPDIR, 'devstack', 'lib', 'fastpath')

GLANCE_BACKEND = 'fastsheep'
STOCK_TOPIC = 'notifications-stock'
PIKE_TOPIC = 'notifications-pike'
PLUGIN_TOPIC = 'notifications'


def devstack_lib(function, args, env=None, log=None):
    """Run one function of devstack/lib/fastpath, as the plugin does."""
    script = 'set -eu; source "$0"; %s "$@"' % function
    full_env = dict(os.environ)
    full_env.update(env or {})
    processes.run(['bash', '-c', script, LIB_FASTPATH] + list(args),
                  log=log, env=full_env)


def _is_root():
    return os.geteuid() == 0


def apt_install(packages, log):
    if not _is_root():
        raise RuntimeError('%s missing and not root: install them or run '
                           'them yourself' % ' '.join(packages))
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    processes.run(['apt-get', 'update'], log=log, env=env)
    processes.run(['apt-get', 'install', '-y'] + packages, log=log, env=env)


class PostgreSQL(fixtures.Fixture):
    """Databases for gnocchi's indexer and glance's registry.

    ``self.urls[name]`` is the SQLAlchemy URL of database ``name``.
    (glance on SQLite fails under uWSGI's concurrent workers with
    "database is locked"; devstack gives it a real database too.)
    """

    def __init__(self, rundir,
                 databases=('gnocchi', 'glance', 'glance_eventlet')):
        super(PostgreSQL, self).__init__()
        self.rundir = rundir
        self.databases = databases
        self.urls = {}

    def _bindir(self):
        found = sorted(glob.glob('/usr/lib/postgresql/*/bin/initdb'),
                       key=lambda p: int(p.split('/')[4]))
        return os.path.dirname(found[-1]) if found else None

    def _setUp(self):
        log = os.path.join(self.rundir, 'postgresql-setup.log')
        if processes.port_open(5432) and _is_root():
            self._reuse(log)
            return
        if self._bindir() is None:
            apt_install(['postgresql'], log)
        self._private(log)

    @staticmethod
    def _psql(sql, log, port=None):
        """Run SQL with psql as the postgres OS user.

        Over TCP to our private instance (trust), else over the local
        socket (peer auth).
        """
        cmd = ['runuser', '-u', 'postgres', '--', 'psql', '-q',
               '-v', 'ON_ERROR_STOP=1']
        if port is not None:
            cmd += ['-h', '127.0.0.1', '-p', str(port), '-U', 'postgres',
                    '-d', 'postgres']
        processes.run(cmd + ['-c', sql], log=log)

    def _reuse(self, log):
        """A cluster is already running: a throw-away role and dbs."""
        role = 'fastpath_%s' % uuid.uuid4().hex[:8]
        password = uuid.uuid4().hex
        self._psql("CREATE ROLE %s LOGIN PASSWORD '%s'" % (role, password),
                   log)
        self.addCleanup(self._psql, 'DROP ROLE %s' % role, log)
        for name in self.databases:
            db = '%s_%s' % (role, name)
            self._psql('CREATE DATABASE %s OWNER %s' % (db, role), log)
            self.addCleanup(self._psql,
                            'DROP DATABASE %s WITH (FORCE)' % db, log)
            self.urls[name] = 'postgresql://%s:%s@127.0.0.1:5432/%s' % (
                role, password, db)
        LOG.info('postgresql: reusing the running cluster (role %s)', role)

    def _private(self, log):
        bindir = self._bindir()
        base = os.path.join(self.rundir, 'postgresql')
        data = os.path.join(base, 'data')
        os.makedirs(data)
        as_postgres = []
        if _is_root():
            # initdb and postgres refuse to run as root.
            shutil.chown(base, 'postgres', 'postgres')
            shutil.chown(data, 'postgres', 'postgres')
            as_postgres = ['runuser', '-u', 'postgres', '--']
        processes.run(as_postgres + [
            os.path.join(bindir, 'initdb'), '-D', data, '-A', 'trust',
            '-U', 'postgres', '-E', 'UTF8'], log=log)
        port = processes.free_port()
        service = processes.Service(
            'postgresql', as_postgres + [
                os.path.join(bindir, 'postgres'), '-D', data,
                '-p', str(port), '-c', 'listen_addresses=127.0.0.1',
                '-k', base, '-c', 'fsync=off'],
            os.path.join(self.rundir, 'postgresql.log'),
            stop_signal=signal.SIGINT)
        self.useFixture(service)
        service.wait_ready(lambda: processes.port_open(port), 60)
        for name in self.databases:
            self._psql('CREATE DATABASE %s' % name, log, port=port)
            self.urls[name] = 'postgresql://postgres@127.0.0.1:%d/%s' % (
                port, name)
        LOG.info('postgresql: private instance on port %d', port)


class RabbitMQ(fixtures.Fixture):
    """A broker for oslo.messaging; ``self.url`` is the transport URL."""

    def __init__(self, rundir):
        super(RabbitMQ, self).__init__()
        self.rundir = rundir

    def _setUp(self):
        if os.environ.get('FASTPATH_TRANSPORT_URL'):
            self.url = os.environ['FASTPATH_TRANSPORT_URL']
            return
        if processes.port_open(5672):
            self.url = 'rabbit://guest:guest@127.0.0.1:5672/'
            LOG.info('rabbitmq: reusing the broker on port 5672')
            return
        server = '/usr/lib/rabbitmq/bin/rabbitmq-server'
        if not os.path.exists(server):
            apt_install(['rabbitmq-server'],
                        os.path.join(self.rundir, 'rabbitmq-setup.log'))
        self._private(server)

    def _private(self, server):
        base = os.path.join(self.rundir, 'rabbitmq')
        os.makedirs(base)
        port = processes.free_port()
        dist_port = processes.free_port()
        with open(os.path.join(base, 'enabled_plugins'), 'w') as f:
            f.write('[].\n')
        with open(os.path.join(base, 'rabbitmq.conf'), 'w') as f:
            f.write('listeners.tcp.1 = 127.0.0.1:%d\n' % port)
        env = dict(
            os.environ,
            # Cookie and CLI state stay in the run directory.
            HOME=base,
            RABBITMQ_NODENAME='fastpath%d@localhost' % port,
            RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
            RABBITMQ_NODE_PORT=str(port),
            RABBITMQ_DIST_PORT=str(dist_port),
            RABBITMQ_MNESIA_BASE=os.path.join(base, 'mnesia'),
            RABBITMQ_LOG_BASE=os.path.join(base, 'log'),
            RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(
                base, 'enabled_plugins'),
            RABBITMQ_CONFIG_FILE=os.path.join(base, 'rabbitmq'),
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=(
                '-kernel inet_dist_use_interface {127,0,0,1}'),
            ERL_EPMD_ADDRESS='127.0.0.1')
        epmd_before = self._epmd_pids()
        self.addCleanup(self._stop_epmd, epmd_before)
        service = processes.Service(
            'rabbitmq', [server], os.path.join(self.rundir, 'rabbitmq.log'),
            env=env, stop_timeout=30)
        self.useFixture(service)
        service.wait_ready(lambda: processes.port_open(port), 180)
        self.url = 'rabbit://guest:guest@127.0.0.1:%d/' % port
        LOG.info('rabbitmq: private node on port %d', port)

    @staticmethod
    def _epmd_pids():
        out = subprocess.run(['pgrep', '-x', 'epmd'], capture_output=True,
                             text=True).stdout
        return set(int(p) for p in out.split())

    def _stop_epmd(self, before):
        """Stop the epmd we started, never one that was already there.

        epmd daemonises out of our process group.
        """
        for pid in self._epmd_pids() - before:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


class Gnocchi(fixtures.Fixture):

    def __init__(self, rundir, indexer_url):
        super(Gnocchi, self).__init__()
        self.rundir = rundir
        self.indexer_url = indexer_url

    def _setUp(self):
        venv = venvs.ensure_venv('gnocchi')
        base = os.path.join(self.rundir, 'gnocchi')
        os.makedirs(os.path.join(base, 'storage'))
        port = processes.free_port()
        conf = os.path.join(base, 'gnocchi.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\n'
                    '[api]\nauth_mode = basic\nhost = 127.0.0.1\n'
                    'port = %d\nworkers = 2\n'
                    '[indexer]\nurl = %s\n'
                    '[storage]\ndriver = file\nfile_basepath = %s\n'
                    '[metricd]\nworkers = 1\nmetric_processing_delay = 1\n'
                    % (port, self.indexer_url,
                       os.path.join(base, 'storage')))
        env = venvs.venv_env(venv)
        bindir = os.path.join(venv, 'bin')
        processes.run([os.path.join(bindir, 'gnocchi-upgrade'),
                       '--config-file', conf],
                      log=os.path.join(self.rundir, 'gnocchi-upgrade.log'),
                      env=env, cwd=base)
        # gnocchi-api execs uWSGI; host and port come from the conf file
        # (passing them as flags leaks them to the app).
        # SIGINT: uWSGI's immediate shutdown; its SIGTERM waits for
        # workers that gnocchi keeps busy.
        api = self.useFixture(processes.Service(
            'gnocchi-api', [os.path.join(bindir, 'gnocchi-api'),
                            '--config-file', conf],
            os.path.join(self.rundir, 'gnocchi-api.log'), env=env, cwd=base,
            stop_signal=signal.SIGINT))
        self.useFixture(processes.Service(
            'gnocchi-metricd', [os.path.join(bindir, 'gnocchi-metricd'),
                                '--config-file', conf],
            os.path.join(self.rundir, 'gnocchi-metricd.log'), env=env,
            cwd=base))
        self.url = 'http://127.0.0.1:%d' % port
        api.wait_ready(lambda: requests.get(
            self.url + '/v1/status', auth=('admin', ''),
            timeout=2).status_code == 200, 120)
        LOG.info('gnocchi: %s', self.url)


class CeilometerAgent(fixtures.Fixture):
    """ceilometer-agent-notification publishing to gnocchi.

    ``publisher`` is ``stock`` (``gnocchi://``) or ``plugin``
    (``gnocchi://`` rewritten by devstack/lib/fastpath). Each agent
    listens on its own topic so that two can run side by side.
    ``wildcard_metrics`` sets the plugin's opt-in to Pike's semantics
    (``[metriccache] wildcard_metrics``); off, it keeps upstream's.
    """

    def __init__(self, rundir, name, publisher, topic, transport_url,
                 gnocchi_url, upgrade=True, wildcard_metrics=False):
        super(CeilometerAgent, self).__init__()
        self.upgrade = upgrade
        self.wildcard_metrics = wildcard_metrics
        self.rundir = rundir
        self.name = name
        self.publisher = publisher
        self.topic = topic
        self.transport_url = transport_url
        self.gnocchi_url = gnocchi_url

    def _setUp(self):
        venv = venvs.ensure_venv('ceilometer')
        base = os.path.join(self.rundir, 'ceilometer-%s' % self.name)
        os.makedirs(base)
        resources = os.path.join(base, 'gnocchi_resources.yaml')
        write_resources_file(venv, resources)
        query = ('?enable_filter_project=false&resources_definition_file=%s'
                 % resources)
        pipeline, event_pipeline = write_pipelines(base, 'gnocchi://' + query)
        if self.publisher == 'plugin':
            devstack_lib('configure_fastpath_ceilometer_pipelines',
                         [pipeline, event_pipeline],
                         log=os.path.join(base, 'configure.log'))
        conf = os.path.join(base, 'ceilometer.conf')
        self.log = os.path.join(self.rundir,
                                'ceilometer-%s.log' % self.name)
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\n'
                    'pipeline_cfg_file = %s\n'
                    'event_pipeline_cfg_file = %s\n'
                    '[oslo_messaging_notifications]\ntopics = %s\n'
                    '[notification]\nworkers = 1\n'
                    '[service_credentials]\nauth_type = gnocchi-basic\n'
                    'user = admin\nendpoint = %s\n'
                    % (self.transport_url, pipeline, event_pipeline,
                       self.topic, self.gnocchi_url))
            if self.wildcard_metrics:
                f.write('[metriccache]\nwildcard_metrics = true\n')
        bindir = os.path.join(venv, 'bin')
        env = venvs.venv_env(venv)
        if self.upgrade:
            # Creates gnocchi's resource types and archive policies.
            processes.run([os.path.join(bindir, 'ceilometer-upgrade'),
                           '--config-file', conf],
                          log=os.path.join(base, 'upgrade.log'), cwd=base,
                          env=env)
        self.service = self.useFixture(processes.Service(
            'ceilometer-%s' % self.name,
            [os.path.join(bindir, 'ceilometer-agent-notification'),
             '--config-file', conf, '--log-file', self.log],
            os.path.join(base, 'stdout.log'), cwd=base, env=env))
        wait_agent_consuming(self.service, self.name, self.transport_url,
                             self.topic, self.gnocchi_url)
        with open(pipeline) as f:
            self.pipeline = f.read()
        LOG.info('ceilometer %s: topic %s', self.name, self.topic)


def wait_agent_consuming(service, name, transport_url, topic, gnocchi_url):
    """Ready once a sample sent on the bus reaches gnocchi.

    That proves the listener, the pipeline and the publisher (or Pike's
    dispatcher) end to end.
    """
    probe = 'fastpath-probe-%s-%s' % (name, uuid.uuid4().hex[:8])
    notifier = bus.notifier(transport_url, topic, 'ceilometer')
    try:
        bus.send_samples(notifier, [bus.sample(
            'image.size', probe, 1.0, metadata=IMAGE_METADATA)])
    finally:
        notifier.transport.cleanup()
    url = '%s/v1/resource/image/%s' % (gnocchi_url, probe)
    service.wait_ready(lambda: requests.get(
        url, auth=('admin', ''), timeout=2).status_code == 200, 180,
        '%s (probe sample in gnocchi)' % service.name)


# The attributes gnocchi's ``image`` resource type requires.
IMAGE_METADATA = {'name': 'probe', 'container_format': 'bare',
                  'disk_format': 'raw'}


def write_pipelines(base, publisher, pike=False):
    """Write pipeline.yaml and event_pipeline.yaml publishing everything.

    Every meter and every event goes to ``publisher``; Pike's sinks also
    carry an empty ``transformers`` list. Returns both paths.
    """
    paths = []
    for kind, items in (('meter', 'meters'), ('event', 'events')):
        prefix = '' if kind == 'meter' else 'event_'
        path = os.path.join(base, prefix + 'pipeline.yaml')
        with open(path, 'w') as f:
            f.write('---\nsources:\n'
                    '    - name: %(kind)s_source\n'
                    '      %(items)s:\n          - "*"\n'
                    '      sinks:\n          - %(kind)s_sink\n'
                    'sinks:\n'
                    '    - name: %(kind)s_sink\n'
                    '%(transformers)s'
                    '      publishers:\n          - %(publisher)s\n'
                    % {'kind': kind, 'items': items, 'publisher': publisher,
                       'transformers': '      transformers:\n' if pike
                       else ''})
        paths.append(path)
    return tuple(paths)


# The suite's own definition: one exact metric name and one wildcard
# pattern. Pike lists a definition's metrics; Queens and later map each
# name to its options.
SUITE_METRICS = ('fastpath.exact.metric', 'fastpath.wild.*')


def write_resources_file(ceilometer_venv, path, pike=False, extra=''):
    """Write the stock gnocchi_resources.yaml plus the suite's own.

    The stock file is the one the installed ceilometer ships: its gnocchi
    dispatcher's on Pike, its gnocchi publisher's later. ``extra`` is
    YAML appended after the suite's definition.
    """
    stock = glob.glob(os.path.join(
        ceilometer_venv, 'lib', 'python*', 'site-packages', 'ceilometer',
        'dispatcher' if pike else 'publisher', 'data',
        'gnocchi_resources.yaml'))[0]
    with open(stock) as f:
        text = f.read()
    entry = '      - %s\n' if pike else '      %s:\n'
    text = (text.rstrip('\n') + '\n\n'
            '  - resource_type: generic\n'
            '    metrics:\n' +
            ''.join(entry % name for name in SUITE_METRICS) + extra)
    with open(path, 'w') as f:
        f.write(text)


class Glance(fixtures.Fixture):
    """glance-api with no keystone.

    ``server='uwsgi'``: current glance under uWSGI (threads, no
    eventlet), the only way glance 33 runs. ``server='eventlet'``: the
    standalone eventlet ``glance-api`` that releases up to 32 still had,
    which runs the store under eventlet's monkey-patching.
    """

    def __init__(self, rundir, db_url, store_env=None, name='glance',
                 venv='glance', server='uwsgi'):
        super(Glance, self).__init__()
        self.rundir = rundir
        self.db_url = db_url
        self.name = name
        self.venv_name = venv
        self.server = server
        # FASTPATH_* variables for devstack/lib/fastpath; None keeps
        # glance on the stock file store.
        self.store_env = store_env

    def _setUp(self):
        venv = venvs.ensure_venv(self.venv_name)
        base = os.path.join(self.rundir, self.name)
        etc = os.path.join(base, 'etc')
        cwd = os.path.join(base, 'cwd')
        for d in (etc, cwd, os.path.join(base, 'images'),
                  os.path.join(base, 'staging'), os.path.join(base, 'tasks')):
            os.makedirs(d)
        paste = os.path.join(etc, 'glance-api-paste.ini')
        shutil.copy(os.path.join(venv, 'etc', 'glance',
                                 'glance-api-paste.ini'), paste)
        conf = os.path.join(etc, 'glance-api.conf')
        self.conf = conf
        port = processes.free_port()
        log = os.path.join(base, 'configure.log')
        # What devstack's lib/glance writes (trimmed to what runs here):
        # multi-store with a file backend, staging and tasks stores.
        settings = [
            ('DEFAULT', 'enabled_backends', 'fs:file'),
            ('DEFAULT', 'enabled_import_methods', '[glance-direct]'),
            ('DEFAULT', 'log_file', os.path.join(
                self.rundir, '%s-api.log' % self.name)),
            ('DEFAULT', 'debug', 'false'),
            # The tests check locations: where the image went, and that a
            # location written by the Pike driver can be added.
            ('DEFAULT', 'show_image_direct_url', 'true'),
            ('DEFAULT', 'show_multiple_locations', 'true'),
            ('glance_store', 'default_backend', 'fs'),
            ('fs', 'filesystem_store_datadir', os.path.join(base, 'images')),
            ('os_glance_staging_store', 'filesystem_store_datadir',
             os.path.join(base, 'staging')),
            ('os_glance_tasks_store', 'filesystem_store_datadir',
             os.path.join(base, 'tasks')),
            ('database', 'connection',
             self.db_url.replace('postgresql://', 'postgresql+psycopg2://')),
            # No keystone: a pipeline that trusts identity headers.
            ('paste_deploy', 'flavor', 'trusted'),
            ('paste_deploy', 'config_file', paste),
            ('oslo_policy', 'enforce_new_defaults', 'false'),
        ]
        if self.server == 'eventlet':
            settings += [('DEFAULT', 'bind_host', '127.0.0.1'),
                         ('DEFAULT', 'bind_port', str(port)),
                         ('DEFAULT', 'workers', '2')]
        for section, option, value in settings:
            devstack_lib('iniset', [conf, section, option, value], log=log)
        for section, option, value in (
                ('composite:glance-api-trusted', 'paste.composite_factory',
                 'glance.api:root_app_factory'),
                ('composite:glance-api-trusted', '/', 'api'),
                ('composite:glance-api-trusted', '/healthcheck',
                 'healthcheck'),
                ('composite:api', 'trusted',
                 'cors http_proxy_to_wsgi versionnegotiation osprofiler '
                 'context rootapp')):
            devstack_lib('iniset', [paste, section, option, value], log=log)
        if self.store_env is not None:
            env = dict(self.store_env)
            mode = subprocess.run(
                ['bash', '-c', 'source "$0"; fastpath_glance_store_mode "$1"',
                 LIB_FASTPATH, os.path.join(venv, 'bin', 'python')],
                check=True, capture_output=True, text=True,
                env=venvs.venv_env(venv, env)).stdout.strip()
            devstack_lib('configure_fastpath_glance', [conf, mode], env=env,
                         log=log)
            self.backend = env.get('FASTPATH_GLANCE_BACKEND_ID',
                                   GLANCE_BACKEND)
        else:
            self.backend = 'fs'
        bindir = os.path.join(venv, 'bin')
        env = venvs.venv_env(venv)
        processes.run([os.path.join(bindir, 'glance-manage'),
                       '--config-file', conf, 'db_sync'],
                      log=os.path.join(base, 'db_sync.log'), cwd=cwd,
                      env=env)
        if self.server == 'eventlet':
            cmd = [os.path.join(bindir, 'glance-api'), '--config-file', conf]
        else:
            cmd = [os.path.join(bindir, 'uwsgi'),
                   '--ini', self._uwsgi_ini(etc, port, cwd)]
        service = self.useFixture(processes.Service(
            '%s-api' % self.name, cmd,
            os.path.join(self.rundir, '%s-server.log' % self.name), cwd=cwd,
            env=env))
        self.url = 'http://127.0.0.1:%d' % port
        service.wait_ready(lambda: requests.get(
            self.url + '/v2/images', headers=ADMIN_HEADERS,
            timeout=5).status_code == 200, 120)
        self.pid = service.pid
        LOG.info('%s-api (%s): %s (default backend %s)', self.name,
                 self.server, self.url, self.backend)

    @staticmethod
    def _uwsgi_ini(etc, port, cwd):
        uwsgi_ini = os.path.join(etc, 'glance-api-uwsgi.ini')
        with open(uwsgi_ini, 'w') as f:
            f.write('[uwsgi]\n'
                    'module = glance.wsgi.api:application\n'
                    'env = OS_GLANCE_CONFIG_DIR=%s\n'
                    'http-socket = 127.0.0.1:%d\n'
                    'chdir = %s\n'
                    'master = true\nprocesses = 2\nthreads = 4\n'
                    'enable-threads = true\nsingle-interpreter = true\n'
                    'lazy-apps = true\nneed-app = true\n'
                    'die-on-term = true\nhttp-auto-chunked = true\n'
                    'http-raw-body = true\nbuffer-size = 65535\n'
                    'add-header = Connection: close\n'
                    % (etc, port, cwd))
        return uwsgi_ini


ADMIN_HEADERS = {
    'X-Identity-Status': 'Confirmed',
    'X-Roles': 'admin,member,reader',
    'X-Project-Id': 'fastpath-project',
    'X-User-Id': 'fastpath-user',
}


class Harness(fixtures.Fixture):
    """Everything the integration tests talk to.

    And an env file saying where it is.
    """

    def __init__(self, rundir, plugins=True):
        super(Harness, self).__init__()
        self.rundir = rundir
        self.plugins = plugins

    def _setUp(self):
        self.info = {'rundir': self.rundir,
                     'report': os.path.join(self.rundir, 'report.txt')}
        # Venvs first, built side by side: a fresh machine spends most of
        # its time here (uWSGI and psycopg2 compile).
        built = venvs.SERVICES + (pike_glance.VENV, pike_ceilometer.VENV)
        with concurrent.futures.ThreadPoolExecutor(len(built)) as ex:
            for future in [ex.submit(venvs.ensure_venv, service)
                           for service in built]:
                future.result()
        self.install_project()
        if self.plugins:
            for service in (pike_glance.VENV, pike_ceilometer.VENV):
                pike_sources.install_project(
                    service, os.path.join(self.rundir, 'install.log'))
        pg = self.useFixture(PostgreSQL(self.rundir))
        rabbit = self.useFixture(RabbitMQ(self.rundir))
        gnocchi = self.useFixture(Gnocchi(self.rundir, pg.urls['gnocchi']))
        self.info.update(transport_url=rabbit.url, gnocchi_url=gnocchi.url)
        agents = {}
        for name, publisher, topic in (
                ('plugin', 'plugin' if self.plugins else 'stock',
                 PLUGIN_TOPIC),
                ('stock', 'stock', STOCK_TOPIC)):
            # The plugin agent opts into wildcard metrics, which the
            # suite's wildcard test checks end to end; the stock agent
            # shows upstream dropping those names.
            agent = self.useFixture(CeilometerAgent(
                self.rundir, name, publisher, topic, rabbit.url,
                gnocchi.url, upgrade=not agents,
                wildcard_metrics=publisher == 'plugin'))
            agents[name] = {'topic': topic, 'pid': agent.service.pid,
                            'log': agent.log, 'pipeline': agent.pipeline}
        self.info['ceilometer'] = agents
        if self.plugins:
            # Pike's agent on 2.7 with the plugin, as README says.
            agent = self.useFixture(pike_ceilometer.PikeCeilometerAgent(
                self.rundir, 'plugin', 'plugin', PIKE_TOPIC, rabbit.url,
                gnocchi.url))
            self.info['ceilometer_pike'] = {'plugin': {
                'topic': PIKE_TOPIC, 'pid': agent.pid, 'log': agent.log,
                'pipeline': agent.pipeline,
                'dispatcher': agent.dispatcher_file}}
        store_env = None
        if self.plugins:
            store_env = self.useFixture(SheepdogEmulator(self.rundir)).env
            self.info['emulator'] = store_env
        for key, venv, server in (('glance', 'glance', 'uwsgi'),
                                  ('glance_eventlet', 'glance-eventlet',
                                   'eventlet')):
            glance = self.useFixture(Glance(
                self.rundir, pg.urls[key], store_env, name=key, venv=venv,
                server=server))
            self.info[key] = {'url': glance.url, 'backend': glance.backend,
                              'conf': glance.conf, 'pid': glance.pid,
                              'server': server}
        if self.plugins:
            # Pike's glance-api on 2.7: the plugin, and the in-tree
            # driver that wrote what Pike clouds already hold.
            for key, store in (('glance_pike', 'fastsheep'),
                               ('glance_pike_intree', 'sheepdog')):
                glance = self.useFixture(pike_glance.PikeGlance(
                    self.rundir, store_env, store=store))
                self.info[key] = {'url': glance.url, 'store': store,
                                  'conf': glance.conf, 'pid': glance.pid,
                                  'driver_file': glance.driver_file,
                                  'server': 'eventlet-py27'}
        self.env_file = os.path.join(self.rundir, 'env.json')
        with open(self.env_file, 'w') as f:
            json.dump(self.info, f, indent=2)

    def install_project(self):
        """Install the project into glance's and ceilometer's venvs.

        Built once and pip installed, not editable and not from uWSGI's
        working directory, as devstack's install phase does.
        """
        wheels = os.path.join(self.rundir, 'wheel')
        log = os.path.join(self.rundir, 'install.log')
        glance = venvs.ensure_venv('glance')
        processes.run([os.path.join(glance, 'bin', 'pip'), 'wheel', '-q',
                       '--no-deps', '-w', wheels, TOPDIR], log=log,
                      env=venvs.venv_env(glance))
        wheel = glob.glob(os.path.join(wheels, '*.whl'))[0]
        for service in ('glance', 'glance-eventlet', 'ceilometer'):
            venv = venvs.ensure_venv(service)
            processes.run([os.path.join(venv, 'bin', 'pip'), 'install', '-q',
                           '--no-deps', '--force-reinstall', wheel], log=log,
                          env=venvs.venv_env(venv))


class SheepdogEmulator(fixtures.Fixture):
    """A sheepdog cluster stand-in from the driver's test tooling.

    With a ``dog`` wrapper for glance's store to run.
    """

    def __init__(self, rundir):
        super(SheepdogEmulator, self).__init__()
        self.rundir = rundir

    def _setUp(self):
        root = os.path.join(self.rundir, 'sheepdog')
        port = processes.free_port()
        python = os.path.join(venvs.ensure_venv('glance'), 'bin', 'python')
        processes.run([
            # The emulator module itself: the fixture module needs the
            # test-only ``fixtures`` library, which glance's venv lacks.
            python, '-m', 'sheepdog_emulator.emulator',
            '--root', root, '--address', '127.0.0.1',
            '--port', str(port),
            'setup', '--bin', os.path.join(root, 'bin')],
            log=os.path.join(self.rundir, 'emulator-setup.log'),
            env=venvs.venv_env(os.path.dirname(os.path.dirname(python))))
        self.env = {
            'FASTPATH_SHEEPDOG_ADDRESS': '127.0.0.1',
            'FASTPATH_SHEEPDOG_PORT': str(port),
            'FASTPATH_SHEEPDOG_COMMAND': os.path.join(root, 'bin', 'dog'),
            'FASTPATH_EMULATOR_ROOT': root,
        }
