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
"""A real local sheepdog cluster, as sheepdog's own functional tests run one.

``SheepdogCluster`` starts N ``sheep`` daemons on loopback with the
``local`` cluster driver, formats the cluster with the copies asked for,
waits until it answers, and on clean-up kills only the processes it
started. The binaries come from ``tools/build-sheepdog.sh``
(``SHEEPDOG_PREFIX``, or a build of ``SHEEPDOG_SOURCE``, by default the
archive in ``../shared/sheepdog/``).

Two clusters at once must not collide: each has its own membership
file, store directories and ports, and, as root, its own lock directory
(``sheep_processes.LockNamespace``); ``isolated`` says whether it got
one.

The module runs on Python 2.7 (``tox -e py27``, Pike's pins) as on 3:
only the standard library, ``fixtures``, the harness's leaf ``host``
(ports and the process table) and ``sheep_processes``, which stands on
``host`` alone; never the service harness.
"""

import hashlib
import os
import pwd
import signal
import subprocess
import sys
import tempfile
import time

import fixtures

from fastpath_integration.harness import host
from fastpath_integration.harness import sheep_processes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD_TOOL = os.path.join(ROOT, 'tools', 'build-sheepdog.sh')
NO_SOURCE = 3
SKIP_REASON = ('no real sheepdog: set SHEEPDOG_PREFIX to an installed one '
               'or SHEEPDOG_SOURCE to a source archive (CI uses '
               '../shared/sheepdog/sheepdog-1.0.1.tar.gz)')

# Where tox's end-of-run report (toxfile.py) reads the skips from.
SKIP_LOG_VARIABLE = 'FASTPATH_SKIP_LOG'

_prefix = []


def record_skip(suite, reason=SKIP_REASON):
    """Note that suite ran without a real sheepdog, for toxfile.py.

    Without one the real-cluster suites skip and ``tox`` still passes:
    toxfile.py says so at the end of the run, loudly, from these lines.
    Nothing is written outside tox (no FASTPATH_SKIP_LOG).
    """
    path = os.environ.get(SKIP_LOG_VARIABLE)
    if not path:
        return
    try:
        with open(path, 'a') as log:
            log.write('%s\t%s\t%s\n' % (
                os.environ.get('TOX_ENV_NAME', '-'), suite,
                ' '.join(str(reason).split())))
    except (IOError, OSError):
        pass


class Unavailable(Exception):
    """No real sheepdog can be found or built here."""


# A sheep would not start, or the cluster would not answer: raised by the
# fixture and its nodes alike, so one name catches both.
ClusterError = sheep_processes.ClusterError


def prefix():
    """The install prefix of a real sheepdog, building it once if needed.

    :raises Unavailable: neither SHEEPDOG_PREFIX nor a source archive.
    :raises ClusterError: the build failed (its log tail is in the text).
    """
    if not _prefix:
        returncode, out, err = _build(dict(os.environ))
        if returncode == NO_SOURCE:
            raise Unavailable(SKIP_REASON)
        if returncode:
            raise ClusterError('tools/build-sheepdog.sh failed (%d): %s' % (
                returncode, err))
        _prefix.append(out)
    return _prefix[0]


def _build(env):
    """Run tools/build-sheepdog.sh in env: (exit status, prefix, stderr)."""
    if not (env.get('FASTPATH_CACHE_DIR') or env.get('XDG_CACHE_HOME')):
        # oslotest gives each test a temporary HOME: keep the build in
        # the real one's cache, where it outlives the test.
        env['FASTPATH_CACHE_DIR'] = os.path.join(
            pwd.getpwuid(os.getuid()).pw_dir, '.cache', 'openstack-fastpath')
    proc = subprocess.Popen(['bash', BUILD_TOOL], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    out, err = proc.communicate()
    return (proc.returncode, out.decode('utf-8').strip(),
            err.decode('utf-8', 'replace'))


_release_prefixes = {}
SHARED_ARCHIVES = os.path.join(os.path.dirname(ROOT), 'shared', 'sheepdog')
# The releases the native client's conformance suite runs against, by the
# archive in ../shared/sheepdog/ each is built from.
RELEASES = {
    '0.9.5': 'sheepdog-0.9.5.tar.gz',
    '1.0.1': 'sheepdog-1.0.1.tar.gz',
    'master': 'sheepdog-1.0.2-dev-3ebe5ea.tar.gz',
}


def release_prefix(release):
    """The install prefix of a RELEASES build, building it once if needed.

    Always from ../shared/sheepdog/, whatever SHEEPDOG_PREFIX or
    SHEEPDOG_SOURCE say (they choose the one default cluster).

    :raises Unavailable: the archive is not there.
    """
    if release not in _release_prefixes:
        archive = os.path.join(SHARED_ARCHIVES, RELEASES[release])
        if not os.path.isfile(archive):
            raise Unavailable('no sheepdog %s: %s is missing'
                              % (release, archive))
        env = dict(os.environ)
        env.pop('SHEEPDOG_PREFIX', None)
        env['SHEEPDOG_SOURCE'] = archive
        returncode, out, err = _build(env)
        if returncode:
            raise ClusterError('tools/build-sheepdog.sh failed for %s (%d): '
                               '%s' % (release, returncode, err))
        _release_prefixes[release] = out
    return _release_prefixes[release]


def tool_path(install_prefix, name):
    """dog or collie of an install: bin/ from 1.0 on, sbin/ on 0.9.5."""
    path = os.path.join(install_prefix, 'bin', name)
    if os.path.exists(path):
        return path
    return os.path.join(install_prefix, 'sbin', name)


def available():
    """True when a real sheepdog is there or can be built."""
    try:
        prefix()
    except Unavailable:
        return False
    return True


class SheepdogCluster(fixtures.Fixture):
    """N local sheep with ``copies`` replicas, formatted and answering.

    :param nodes: how many sheep (each its own port, zone and store).
    :param copies: the cluster's redundancy (``dog cluster format -c``).
    :param put_on_path: also put a bin directory holding ``dog`` and
        ``collie`` first on PATH for the test, as a host with sheepdog
        installed has them (Pike's in-tree driver runs a bare ``collie``
        or ``dog``).
    :param block_size_shift: the cluster's object size as a power of 2
        (``dog cluster format -z``, sheepdog 1.0 on); None: sheep's
        default, 4 MiB.

    ``port`` is the first node's: the gateway a driver is pointed at.
    """

    address = '127.0.0.1'
    # The store client a glance configured on it uses: sheep's protocol.
    client = 'native'

    def __init__(self, nodes=1, copies=1, put_on_path=False,
                 install_prefix=None, block_size_shift=None):
        super(SheepdogCluster, self).__init__()
        if copies > nodes:
            raise ValueError('copies (%d) > nodes (%d)' % (copies, nodes))
        self.node_count = nodes
        self.copies = copies
        self.put_on_path = put_on_path
        self.install_prefix = install_prefix
        self.block_size_shift = block_size_shift

    def _setUp(self):
        self.prefix = self.install_prefix or prefix()
        self.dog_path = tool_path(self.prefix, 'dog')
        self.collie_path = tool_path(self.prefix, 'collie')
        self.root = self.useFixture(fixtures.TempDir()).path
        self.shm_file = os.path.join(self.root, 'shm')
        self.bin_dir = os.path.join(self.root, 'bin')
        os.mkdir(self.bin_dir)
        for name in ('dog', 'collie'):
            os.symlink(tool_path(self.prefix, name),
                       os.path.join(self.bin_dir, name))
        self.namespace = sheep_processes.LockNamespace()
        self.isolated = self.namespace.start()
        self.addCleanup(self.namespace.end)
        self.nodes = []
        self.addCleanup(self.stop)
        for index in range(self.node_count):
            node = sheep_processes.Node(self, index, host.free_port())
            self.nodes.append(node)
            # One after another: a node started while another is still
            # setting up can fail to purge the lock directory.
            node.start()
        self.port = self.nodes[0].port
        self.format()
        if self.put_on_path:
            self.useFixture(fixtures.EnvironmentVariable(
                'PATH', self.bin_dir + os.pathsep + os.environ.get(
                    'PATH', '')))

    def foreground_args(self):
        """How this sheep stays in the foreground, where it is watched.

        ``-f`` from 1.0 on; 0.9.5 has no such option and daemonizes
        unless it logs to its standard output.
        """
        if getattr(self, '_foreground', None) is None:
            sheep = os.path.join(self.prefix, 'sbin', 'sheep')
            proc = subprocess.Popen([sheep, '--help'],
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, close_fds=True)
            out = proc.communicate()[0]
            self._foreground = (['-f'] if b'--foreground' in out
                                else ['-l', 'dst=stdout'])
        return self._foreground

    # -- the cluster -----------------------------------------------------

    def dog(self, *args, **kwargs):
        """Run ``dog ARGS -a ADDRESS -p PORT``: (exit code, stdout, stderr).

        ``port`` selects a node as gateway; by default the first node
        still running, so a test can look at the cluster after killing
        the store's gateway. ``stdin`` is bytes.
        """
        port = kwargs.get('port') or next(
            (node.port for node in self.nodes if node.running), self.port)
        argv = [self.dog_path] + list(args) + [
            '-a', self.address, '-p', str(port)]
        # stdin from a file, not a pipe: under eventlet's monkey patch,
        # communicate() writing a pipe to a dog that talks to a sheep
        # proxied in this very process spun without end (the proxy's
        # greenthreads never ran), while reading dog's output does not.
        with tempfile.TemporaryFile() as stdin:
            stdin.write(kwargs.get('stdin') or b'')
            stdin.seek(0)
            proc = subprocess.Popen(argv, stdin=stdin,
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, close_fds=True)
            out, err = proc.communicate()
        return proc.returncode, out, err

    def check_dog(self, *args, **kwargs):
        code, out, err = self.dog(*args, **kwargs)
        if code:
            raise ClusterError('dog %s exited %d: %s' % (
                ' '.join(args), code, err.decode('utf-8', 'replace')))
        return out

    def format(self, timeout=30):
        args = ['-c', str(self.copies)]
        if self.block_size_shift is not None:
            args += ['-z', str(self.block_size_shift)]
        self.check_dog('cluster', 'format', *args)
        self.wait_until_running(timeout)

    def wait_until_running(self, timeout=30):
        deadline = sheep_processes.monotonic() + timeout
        status = b''
        while sheep_processes.monotonic() < deadline:
            code, status, _err = self.dog('cluster', 'info')
            if code == 0 and b'running' in status.split(b'\n')[0]:
                code, nodes, _err = self.dog('node', 'list', '-r')
                up = [node for node in self.nodes if node.running]
                if code == 0 and len(nodes.splitlines()) == len(up):
                    return
            time.sleep(0.05)
        raise ClusterError('cluster on port %d not running after %ss: %s\n%s'
                           % (self.port, timeout,
                              status.decode('utf-8', 'replace'),
                              '\n'.join(n.log_tail(5) for n in self.nodes)))

    def stop(self):
        """Every sheep dies (SIGKILL): the whole cluster is down."""
        for node in reversed(getattr(self, 'nodes', [])):
            node.kill()

    def kill_node(self, index, sig=signal.SIGKILL):
        self.nodes[index].kill(sig)

    def processes(self):
        """Pids of every process of this cluster still alive.

        The namespace holder and each sheep are children of the process
        that made the fixture; a sheep's logger is the sheep's child.
        """
        pids = [self.namespace.pid] if self.namespace.pid is not None else []
        for node in self.nodes:
            if node.process is not None:
                pids.extend(pid for pid in [node.process.pid] +
                            node.logger_pids if host.alive(pid))
        return pids

    # -- looking at VDIs through dog itself ---------------------------------

    def list_vdis(self):
        """Names of the current (non-snapshot) VDIs, sorted."""
        out = self.check_dog('vdi', 'list', '-r')
        names = []
        for line in out.decode('utf-8').splitlines():
            fields = line.replace('\\ ', '\0').split(' ')
            if fields and fields[0] == '=':
                names.append(fields[1].replace('\0', ' '))
        return sorted(names)

    def vdi_exists(self, name):
        return bool(self.check_dog('vdi', 'list', '-r', name).strip())

    def vdi_size(self, name):
        out = self.check_dog('vdi', 'list', '-r', name).decode('utf-8')
        return int(out.replace('\\ ', '\0').split(' ')[3])

    def vdi_bytes(self, name, offset=0, length=None):
        if length is None:
            length = self.vdi_size(name) - offset
        if length == 0:
            return b''
        return self.check_dog('vdi', 'read', name, str(offset), str(length))

    def vdi_digest(self, name, algo='md5'):
        """(hex digest, length) of what ``dog vdi read`` streams back."""
        digest = hashlib.new(algo)
        length = 0
        argv = [self.dog_path, 'vdi', 'read', name, '-a', self.address,
                '-p', str(self.port)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, close_fds=True)
        while True:
            piece = proc.stdout.read(1024 * 1024)
            if not piece:
                break
            digest.update(piece)
            length += len(piece)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        if proc.wait():
            raise ClusterError('dog vdi read %s exited %d: %s' % (
                name, proc.returncode, err.decode('utf-8', 'replace')))
        return digest.hexdigest(), length

    def create_vdi(self, name, data=b'', size=None):
        """Create a VDI holding data (size defaults to len(data))."""
        size = len(data) if size is None else size
        self.check_dog('vdi', 'create', name, str(size))
        if data:
            self.check_dog('vdi', 'write', name, '0', str(len(data)),
                           stdin=data)

    def delete_vdi(self, name):
        self.check_dog('vdi', 'delete', name)


def main(argv=None):
    """``python -m fastpath_integration.harness.sheepdog [NODES [COPIES]]``

    Start a cluster for a person to try things against, print where it
    is, and stop it on Ctrl-C or end of input.
    """
    argv = sys.argv[1:] if argv is None else argv
    nodes = int(argv[0]) if argv else 1
    copies = int(argv[1]) if len(argv) > 1 else min(nodes, 2)
    with SheepdogCluster(nodes, copies) as cluster:
        sys.stdout.write('sheepdog cluster: %d node(s), %d copies, dog at %s; '
                         'gateway %s:%d; ports %s; isolated namespace: %s\n'
                         % (nodes, copies, cluster.dog_path, cluster.address,
                            cluster.port,
                            ' '.join(str(n.port) for n in cluster.nodes),
                            cluster.isolated))
        sys.stdout.flush()
        try:
            sys.stdin.read()
        except KeyboardInterrupt:
            pass


if __name__ == '__main__':
    main()
