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
"""The sheepdog clusters the bench measures, behind one interface.

``Emulated`` (the bundled emulator, files on tmpfs), ``Local`` (real
sheep of a sheepdog release, 1 node or more, started by the integration
harness's fixture) and ``Remote`` (an operator's cluster,
``--real-cluster``) all have ``address``, ``port``, ``ports``,
``prefix``, ``dog_path``, ``bin_dir`` (``dog`` and ``collie``), ``client``
(the store client that can serve it; these three are what the harness's
Glance fixture reads of a cluster), ``env`` (that bin dir first
on PATH: Pike's driver runs a bare ``collie``), ``processes()``,
``start()``, ``stop()`` (also as a context manager), ``vdi(suffix,
size)`` and ``params`` (what a transfer worker needs). Each holds the
section's ``Source`` as a VDI once started; every VDI the bench makes on
a cluster is named ``vdi_prefix...``, and ``stop()`` leaves none on a
cluster the bench did not start.
"""

import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile

MIB = 1 << 20
# Every VDI this run makes on a real cluster starts with this.
PREFIX = 'fastpath-bench-%d-' % os.getpid()
NOT_RUN = ('real: did not run: no real sheepdog here; set SHEEPDOG_SOURCE '
           '(a sheepdog 1.0.1 source archive) or SHEEPDOG_PREFIX (an '
           'installed sheepdog), or point --real-cluster at a cluster')


def sha256(path, size):
    """sha256 of the first size bytes of the file at path."""
    digest = hashlib.sha256()
    with open(path, 'rb') as src:
        while size:
            block = src.read(min(size, 16 * MIB))
            if not block:
                break
            digest.update(block)
            size -= len(block)
    return digest.hexdigest()


def image_size(args, quick_size=256 * MIB):
    """The section's image: ``--size``, at most quick_size with --quick."""
    return min(args.size_bytes, quick_size) if args.quick else \
        args.size_bytes


def can_drop_caches():
    return os.access('/proc/sys/vm/drop_caches', os.W_OK)


def real_available(args, report):
    """Whether there is a real cluster to measure; if not, say so."""
    from fastpath_integration.harness import sheepdog
    if args.real_cluster or sheepdog.available():
        return True
    sys.stderr.write('bench: %s\n' % NOT_RUN)
    report.note(NOT_RUN)
    return False


class Source(object):
    """size seeded pseudo-random bytes in a file, incompressible.

    In a temporary directory of its own under parent, which ``close()``
    removes. ``sha256(size)``: of its first size bytes, cached.
    """

    def __init__(self, size, parent=None, prefix='bench-real-'):
        self.root = tempfile.mkdtemp(prefix=prefix, dir=parent)
        self.size = size
        self.path = os.path.join(self.root, 'source.img')
        rng = random.Random(20171110)
        digest = hashlib.sha256()
        with open(self.path, 'wb') as dst:
            while size:
                block = rng.randbytes(min(size, 16 << 20))
                dst.write(block)
                digest.update(block)
                size -= len(block)
        self._sha = {self.size: digest.hexdigest()}

    def sha256(self, size=None):
        size = size or self.size
        if size not in self._sha:
            self._sha[size] = sha256(self.path, size)
        return self._sha[size]

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


class Cluster(object):
    """What every cluster has; see the module's docstring."""

    address, port, prefix, dog_path, bin_dir = '127.0.0.1', None, '', '', ''
    vdi_prefix, where = PREFIX, ''
    # The store client a glance-api on it uses: real sheep speak sheep's
    # protocol (the harness's SheepdogCluster says the same).
    client = 'native'

    def __init__(self, source):
        self.source, self.ports, self.params = source, [], None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def start(self):
        """Start the cluster (``_start``) and write the source as a VDI."""
        try:
            self._start()
            self.ports = self.ports or [self.port]
            self.env = {'PATH': self.bin_dir + os.pathsep +
                        os.environ.get('PATH', '')}
            self.params = {'dog': self.dog_path, 'address': self.address,
                           'port': self.port, 'source': self.source.path,
                           'vdi_prefix': self.vdi_prefix,
                           'sheep_pids': self.processes()}
            self.params = self.vdi('source')
        except BaseException:
            self.stop()
            raise

    def _start(self):
        """What starts the cluster: none for an operator's."""

    def processes(self):
        """Pids of the cluster's own processes, for their CPU seconds."""
        return ()

    def stop(self):
        pass

    def dog(self, *argv, **kwargs):
        return subprocess.check_output([self.dog_path] + list(argv) + [
            '-a', self.address, '-p', str(self.port)], **kwargs)

    def vdi(self, suffix, size=None):
        """A VDI of the source's first size bytes; its worker params."""
        name, size = self.vdi_prefix + suffix, size or self.source.size
        self.dog('vdi', 'create', name, str(size))
        with open(self.source.path, 'rb') as src:
            self.dog('vdi', 'write', name, '0', str(size), stdin=src)
        return dict(self.params, name=name, size=size,
                    sha256=self.source.sha256(size))

    def get(self, **params):
        """Worker params of a fastsheep download of the source VDI."""
        return dict(dict(self.params, kind='get', driver='fastsheep',
                         mode='eventlet'), **params)


class Emulated(Cluster):
    """The emulator, its files (and the source's) on tmpfs when it fits.

    ``knobs(**knobs)`` sets the faults and latencies its next ``dog``
    invocations emulate; ``params['root']`` lets a worker check an upload
    in the emulator's files. It listens on no port; its port is one
    nobody listens on either, so that a client that would connect
    instead of running ``dog`` (a native one) fails rather than reaching
    a real sheep on sheepdog's default 7000.
    """

    vdi_prefix, where = 'bench-', 'emulator'
    # It emulates the dog command line, not sheep's protocol.
    client = 'dog'

    def __init__(self, args, size):
        from fastpath_integration.harness import host
        self.port = host.free_port()
        parent = args.sheepdog_root
        stat = os.statvfs('/dev/shm')
        if not parent and stat.f_bavail * stat.f_frsize > 4 * size + \
                512 * MIB:
            parent = '/dev/shm'
        super(Emulated, self).__init__(Source(size, parent,
                                              'bench-sheepdog-'))
        self.root = self.source.root

    def _start(self):
        from sheepdog_emulator import emulator
        emulator.init_cluster(self.root, self.address, self.port)
        self.bin_dir = self.prefix = os.path.join(self.root, 'bin')
        self.dog_path = emulator.install_wrappers(self.bin_dir,
                                                  self.root)[0]

    def start(self):
        super(Emulated, self).start()
        self.params['root'] = self.root

    def stop(self):
        self.source.close()

    def knobs(self, **knobs):
        from sheepdog_emulator import emulator
        emulator.write_knobs(self.root, self.address, self.port, knobs)


class Local(Cluster):
    """Real sheep, in a mount namespace of their own.

    Started by the harness's ``SheepdogCluster`` on ports it picks; its
    sheep die at ``stop()``, and their VDIs with them. ``release`` is one
    of the harness's ``RELEASES`` (``0.9.5``, ``1.0.1``, ``master``), built
    from ../shared/sheepdog/; None is the harness's default sheepdog
    (``SHEEPDOG_PREFIX``, ``SHEEPDOG_SOURCE``, else 1.0.1).
    """

    def __init__(self, source, nodes=1, copies=1, release=None):
        super(Local, self).__init__(source)
        self.nodes, self.copies, self.release = nodes, copies, release
        self.fixture = None
        self.where = '%d node%s' % (nodes, 's' if nodes > 1 else '')

    def _start(self):
        from fastpath_integration.harness import sheepdog
        build = {}
        if self.release:
            build['install_prefix'] = sheepdog.release_prefix(self.release)
        self.fixture = sheepdog.SheepdogCluster(self.nodes, self.copies,
                                                **build)
        self.fixture.setUp()  # it cleans up after itself if it fails
        self.port, self.prefix = self.fixture.port, self.fixture.prefix
        self.ports = [node.port for node in self.fixture.nodes]
        self.dog_path, self.bin_dir = (self.fixture.dog_path,
                                       self.fixture.bin_dir)

    def processes(self):
        return self.fixture.processes()

    def stop(self):
        if self.fixture is not None:
            self.fixture.cleanUp()
            self.fixture = None


class Remote(Cluster):
    """An operator's cluster (``ADDR:PORT``) and its dog (default: PATH's).

    Its sheep are not ours (no CPU seconds); ``stop()`` deletes every VDI
    of this run, whatever failed before.
    """

    def __init__(self, source, address_port, dog=None):
        super(Remote, self).__init__(source)
        address, port = address_port.rsplit(':', 1)
        self.address, self.port = address, int(port)
        self.dog_path = dog or shutil.which('dog') or 'dog'
        self.bin_dir = self.prefix = os.path.dirname(self.dog_path)
        self.where = 'cluster %s' % address_port

    def stop(self):
        """Delete this run's VDIs (``dog vdi list -r``: ``= NAME ...``)."""
        for line in self.dog('vdi', 'list', '-r').decode().splitlines():
            fields = line.split(' ')
            if len(fields) > 1 and fields[1].startswith(self.vdi_prefix):
                self.dog('vdi', 'delete', fields[1])


def real(args, source, nodes=1, copies=1):
    """``--real-cluster``'s cluster, else a local one of nodes sheep."""
    if args.real_cluster:
        return Remote(source, args.real_cluster, args.real_dog)
    return Local(source, nodes, copies)
