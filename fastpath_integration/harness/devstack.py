"""devstack/lib/*, run the way the devstack plugin runs it.

Glance and ceilometer get their plugin configuration from these
functions, so the integration suite tests what devstack writes; the
``fastsheep-cluster`` service's sheepdog cluster is built and started by
them too (``DevstackCluster``).
"""

import configparser
import glob
import logging
import os
import signal
import subprocess

import fixtures

from fastpath_integration.harness import host
from fastpath_integration.harness import processes
from fastpath_integration.harness import sheep_processes
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)

TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
LIB_FASTPATH = os.path.join(TOPDIR, 'devstack', 'lib', 'fastpath')
LIB_SHEEPDOG = os.path.join(TOPDIR, 'devstack', 'lib', 'sheepdog')


def run(function, args, env=None, log=None, lib=LIB_FASTPATH, prefix=()):
    """Run one function of a devstack/lib file, as the plugin does.

    ``prefix``: a command the bash runs under (a mount namespace).
    """
    script = 'set -eu; source "$0"; %s "$@"' % function
    full_env = dict(os.environ)
    full_env.update(env or {})
    processes.run(list(prefix) + ['bash', '-c', script, lib] + list(args),
                  log=log, env=full_env)


def glance_store_mode(venv, env):
    """``legacy`` or ``multi``: what the plugin picks for ``venv``."""
    return subprocess.run(
        ['bash', '-c', 'source "$0"; fastpath_glance_store_mode "$1"',
         LIB_FASTPATH, os.path.join(venv, 'bin', 'python')],
        check=True, capture_output=True, text=True,
        env=venvs.venv_env(venv, env)).stdout.strip()


def sheepdog_env(sheepdog, backend_id):
    """The FASTPATH_* settings that point the plugin at ``sheepdog``.

    ``sheepdog`` is a real cluster or the emulator: anything with
    ``address``, ``port``, ``dog_path`` and ``client`` (the store client
    it can serve: the emulator only emulates the ``dog`` command).
    """
    return {
        'FASTPATH_GLANCE_BACKEND_ID': backend_id,
        'FASTPATH_SHEEPDOG_ADDRESS': sheepdog.address,
        'FASTPATH_SHEEPDOG_PORT': str(sheepdog.port),
        'FASTPATH_SHEEPDOG_COMMAND': sheepdog.dog_path,
        'FASTPATH_SHEEPDOG_CLIENT': sheepdog.client,
    }


def write_ini(path, settings):
    """An ini file from (section, option, value) triples.

    What ``iniset`` once per triple would write, for the files devstack
    itself writes (the plugin's functions then edit them).
    """
    parser = configparser.ConfigParser(interpolation=None)
    for section, option, value in settings:
        if section != 'DEFAULT' and not parser.has_section(section):
            parser.add_section(section)
        parser.set(section, option, value)
    with open(path, 'w') as f:
        parser.write(f)


# As root, the cluster gets its own /tmp/sheepdog_locks (a tmpfs in a
# private mount namespace), which every sheep start purges: no other
# local cluster on the machine (a concurrent ``tox -e real``, the
# harness's own) is disturbed, nor disturbs it. The sheep stay in the
# namespace after this command returns.
PRIVATE_LOCKS = [
    'unshare', '--mount', '--propagation', 'private', 'sh', '-c',
    'mkdir -p {0} && mount -t tmpfs sheepdog-locks {0} && exec "$@"'.format(
        sheep_processes.LOCK_DIR), 'private-locks']


class DevstackCluster(fixtures.Fixture):
    """A real cluster built and run by devstack/lib/sheepdog.

    What the plugin's ``fastsheep-cluster`` service does in the stack
    ``install`` and ``post-config`` phases (install_fastpath_sheepdog,
    start_fastpath_cluster) and in ``unstack`` (stop_fastpath_cluster),
    without devstack: the lib's own run_process/stop_process run each
    sheep in the background with a pid file. Ports are free ones chosen
    here (FASTPATH_SHEEPDOG_NODE_PORTS); the sheepdog is the one
    tools/build-sheepdog.sh builds for the other suites (SHEEPDOG_PREFIX,
    or SHEEPDOG_SOURCE with a SHA256SUMS beside it or
    FASTPATH_SHEEPDOG_SHA256). Then ``address``, ``port`` (the gateway
    glance is given), ``dog_path`` and ``bin_dir``, as the lib's
    fastpath_use_cluster sets them for glance.
    """

    address = '127.0.0.1'
    client = 'native'

    def __init__(self, rundir, nodes=3, copies=2):
        super(DevstackCluster, self).__init__()
        self.rundir = rundir
        self.nodes = nodes
        self.copies = copies

    def _setUp(self):
        base = os.path.join(self.rundir, 'devstack-sheepdog')
        self.log = os.path.join(self.rundir, 'devstack-sheepdog.log')
        self.env = {
            'FASTPATH_SHEEPDOG_NODES': str(self.nodes),
            'FASTPATH_SHEEPDOG_COPIES': str(self.copies),
            'FASTPATH_SHEEPDOG_ADDRESS': self.address,
            'FASTPATH_SHEEPDOG_NODE_PORTS': ' '.join(
                str(host.free_port()) for _ in range(self.nodes)),
            'FASTPATH_SHEEPDOG_DATA_DIR': base,
            'LOGDIR': os.path.join(base, 'logs'),
            # The build the other suites use, not a second one.
            'FASTPATH_CACHE_DIR': os.path.dirname(venvs.cache_root()),
            'FASTPATH_SHEEPDOG_PREFIX': os.environ.get('SHEEPDOG_PREFIX',
                                                       ''),
            'FASTPATH_SHEEPDOG_SOURCE': os.environ.get('SHEEPDOG_SOURCE') or
            os.path.join(TOPDIR, '..', 'shared', 'sheepdog',
                         'sheepdog-1.0.1.tar.gz'),
        }
        self.pids = []
        self.addCleanup(self._stop)
        run('install_fastpath_sheepdog', [], env=self.env, log=self.log,
            lib=LIB_SHEEPDOG)
        self.isolated = os.geteuid() == 0
        run('start_fastpath_cluster', [], env=self.env, log=self.log,
            lib=LIB_SHEEPDOG,
            prefix=PRIVATE_LOCKS if self.isolated else ())
        for pidfile in glob.glob(os.path.join(base, 'services', '*.pid')):
            with open(pidfile) as f:
                self.pids.append(int(f.read()))
        glance = subprocess.run(
            ['bash', '-c', 'set -eu; source "$0"; fastpath_use_cluster; '
             'echo "$FASTPATH_SHEEPDOG_PORT $FASTPATH_SHEEPDOG_COMMAND"',
             LIB_SHEEPDOG], check=True, capture_output=True, text=True,
            env=dict(os.environ, **self.env)).stdout.split()
        self.port = int(glance[0])
        self.dog_path = glance[1]
        self.bin_dir = os.path.dirname(self.dog_path)
        LOG.info('devstack sheepdog: %d nodes (pids %s), %d copies, '
                 'gateway %s:%d', self.nodes, self.pids, self.copies,
                 self.address, self.port)

    def _stop(self):
        """stop_fastpath_cluster, then make sure no sheep outlived it."""
        try:
            run('stop_fastpath_cluster', [], env=self.env, log=self.log,
                lib=LIB_SHEEPDOG)
        finally:
            left = [pid for pid in self.pids if host.alive(pid)]
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            if left:
                raise RuntimeError('stop_fastpath_cluster left sheep %s '
                                   'running (killed)' % left)
