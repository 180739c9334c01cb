"""The infrastructure the OpenStack services of the suite run on.

PostgreSQL and RabbitMQ are reused when already running, else started as
private instances on free loopback ports in the run directory; gnocchi
runs from its own cached venv; the sheepdog emulator stands in for a
cluster where a test needs faults a real one cannot give on demand (the
real cluster is fastpath_integration.harness.sheepdog). These are the
leaves: they import nothing of the services built on them.
"""

import glob
import logging
import os
import shutil
import signal
import subprocess
import uuid

import fixtures
import requests

from fastpath_integration.harness import host
from fastpath_integration.harness import processes
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)


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
                 databases=('gnocchi', 'glance', 'glance_eventlet',
                            'glance_devstack')):
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
        if host.port_open(5432) and _is_root():
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
        port = host.free_port()
        service = processes.Service(
            'postgresql', as_postgres + [
                os.path.join(bindir, 'postgres'), '-D', data,
                '-p', str(port), '-c', 'listen_addresses=127.0.0.1',
                '-k', base, '-c', 'fsync=off'],
            os.path.join(self.rundir, 'postgresql.log'),
            stop_signal=signal.SIGINT)
        self.useFixture(service)
        service.wait_ready(lambda: host.port_open(port), 60)
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
        if host.port_open(5672):
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
        port = host.free_port()
        dist_port = host.free_port()
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
        service.wait_ready(lambda: host.port_open(port), 180)
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
        port = host.free_port()
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


class SheepdogEmulator(fixtures.Fixture):
    """A sheepdog cluster stand-in from the driver's test tooling.

    The attributes the real cluster fixture has (``address``, ``port``,
    ``dog_path``, ``bin_dir`` with ``dog`` and ``collie``), plus
    ``knobs_file``, the faults its next invocations inject.
    """

    address = '127.0.0.1'
    # It emulates the dog command line, not sheep's protocol.
    client = 'dog'

    def __init__(self, rundir):
        super(SheepdogEmulator, self).__init__()
        self.rundir = rundir

    def _setUp(self):
        self.root = os.path.join(self.rundir, 'sheepdog-emulator')
        self.port = host.free_port()
        self.bin_dir = os.path.join(self.root, 'bin')
        python = os.path.join(venvs.ensure_venv('glance'), 'bin', 'python')
        processes.run([
            # The emulator module itself: the fixture module needs the
            # test-only ``fixtures`` library, which glance's venv lacks.
            python, '-m', 'sheepdog_emulator.emulator',
            '--root', self.root, '--address', self.address,
            '--port', str(self.port), 'setup', '--bin', self.bin_dir],
            log=os.path.join(self.rundir, 'emulator-setup.log'),
            env=venvs.venv_env(os.path.dirname(os.path.dirname(python))))
        self.dog_path = os.path.join(self.bin_dir, 'dog')
        self.knobs_file = os.path.join(
            self.root, '%s:%d' % (self.address, self.port), 'knobs.json')
