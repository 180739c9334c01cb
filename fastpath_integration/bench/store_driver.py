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
"""The store driver a transfer row drives, and the VDIs it leaves.

A row's ``params`` name a driver (Pike's in-tree one or fastsheep), a
cluster and a VDI: ``store(params)`` configures that driver as glance
would, ``consume`` reads an image whole, ``put`` uploads the source
file, and ``check_and_drop`` checks what was stored and deletes it so
that the cluster stays small. The transfer rows (``transfers``) and the
hub stall row (``hub_stall``) all measure through these, so every row
configures and checks the store the same way. Shims that let Pike's
driver run on Python 3 are described in doc/source/bench-sheepdog.rst.
These run on Pike's CPython 2.7 too (the ``_py27`` rows): 2.7/3 common
subset.
"""

import hashlib
import os
import subprocess
import sys
import uuid

from fastpath_integration.bench import clusters
from fastpath_integration.bench import workers

MIB = clusters.MIB
FAST_MODULE = 'glance_store_fastsheep.store'


def _shim_pike(module):
    """binary=True for Pike's ``vdi read`` calls on Python 3 (see doc)."""
    from oslo_concurrency import processutils

    class Shim(object):
        ProcessExecutionError = processutils.ProcessExecutionError

        @staticmethod
        def execute(*cmd, **kwargs):
            if 'read' in cmd:  # image bytes; `vdi list` output stays text
                kwargs['binary'] = True
            return processutils.execute(*cmd, **kwargs)
    module.processutils = Shim


def _client_opts(module, opts):
    """opts for the tree under test, with the dog client unless named.

    A tree with ``sheepdog_store_client`` (native by default) would
    otherwise measure its native client in the rows meant for ``dog``,
    and oslo.config's set_override takes no deprecated name: a row's
    ``sheepdog_store_reader`` is passed on as the client it names.
    """
    names = set(opt.dest for opt in getattr(module.Store, 'OPTIONS', ()))
    opts = dict(opts)
    if 'sheepdog_store_serve_any_name' in names:
        # The bench's VDIs are written by dog under its own names
        # (clusters.PREFIX): the option for VDIs glance did not name.
        opts.setdefault('sheepdog_store_serve_any_name', True)
    if 'sheepdog_store_client' not in names:
        return opts
    reader = opts.pop('sheepdog_store_reader', None)
    opts.setdefault('sheepdog_store_client', reader or 'dog')
    return opts


def store(params):
    """(store, location) of params' driver and VDI, configured."""
    from glance_store import backend
    from glance_store import location
    from oslo_config import cfg
    conf = cfg.ConfigOpts()
    # The generic options a Store needs, not every installed driver's.
    conf.register_opts(backend._STORE_OPTS, group='glance_store')
    overrides = {'sheepdog_store_address': params['address'],
                 'sheepdog_store_port': params['port']}
    if params['driver'] == 'pike':
        from glance_store._drivers import sheepdog as module
        if sys.version_info[0] >= 3:  # on 2.7 its output is bytes already
            _shim_pike(module)
    else:
        import importlib
        module = importlib.import_module(FAST_MODULE)
        overrides['sheepdog_store_command'] = params['dog']
    store = module.Store(conf)
    conf(args=[], default_config_files=[], default_config_dirs=[])
    overrides.update(_client_opts(module, params.get('opts') or {}))
    for key, value in overrides.items():
        conf.set_override(key, value, group='glance_store')
    store.configure(re_raise_bsc=True)
    uri = 'sheepdog://%s:%d:%s' % (params['address'], params['port'],
                                   params['name'])
    return store, location.Location('sheepdog', module.StoreLocation, conf,
                                    uri=uri)


def consume(store, loc, digest=None):
    """Bytes of one get(), consumed whole.

    Pike's StopIteration, a RuntimeError on Python 3.7+, ends it (see doc).
    """
    iterable, size = store.get(loc)
    count = 0
    try:
        for chunk in iterable:
            count += len(chunk)
            if digest is not None:
                digest.update(chunk)
    except RuntimeError as exc:
        if not isinstance(getattr(exc, '__cause__', None), StopIteration):
            raise
    finally:
        getattr(iterable, 'close', lambda: None)()
    if size != count:
        raise AssertionError('got %d bytes, get() said %d' % (count, size))
    return count


def timed(func):
    """(func(), the seconds it took)."""
    started = workers.monotonic()
    value = func()
    return value, workers.monotonic() - started


class _Prefix(object):
    """The first `size` bytes of a file, read the way glance hands them."""

    def __init__(self, path, size):
        self._file, self._left = open(path, 'rb'), size

    def read(self, n=-1):
        n = self._left if n is None or n < 0 or n > self._left else n
        data = self._file.read(n)
        self._left -= len(data)
        return data


def _unhashed(store, image_id, source, size):
    """add()'s upload without its hashes: add()'s own client call.

    The store's client writes the VDI exactly as add() has it write,
    with a digest of no hash and no verifier, so that the CPU of the
    upload itself is measured, not estimated by subtracting a hash's
    cost measured elsewhere. A 4-tuple as add() returns (Pike's).
    """
    from glance_store_fastsheep import image_data
    written = store.client.write(image_id, image_data.Source(source),
                                 image_data.Digest([], None), size)
    return None, written, None, {}


def put(store, params, size):
    """Upload the source's first size bytes.

    Returns (VDI name, add() seconds, add() CPU seconds): the CPU of
    this process over the add() alone, not over the check that follows.
    ``unhashed`` uploads through add()'s client call with no hash
    (``_unhashed``).
    """
    # On an operator's cluster every VDI the bench makes has its prefix.
    image_id = params.get('vdi_prefix', '') + str(uuid.uuid4())
    source = _Prefix(params['source'], size)
    # hashing_algo (glance_store 0.26 on): a multihash beside the md5.
    extra = (params['hashing_algo'],) if params.get('hashing_algo') else ()

    def add():
        if params.get('unhashed'):
            return _unhashed(store, image_id, source, size)
        if extra and not getattr(sys.modules[type(store).__module__],
                                 'MULTIHASH', True):
            # Pike's glance_store (the bench env's 0.22) has no
            # hashing_algo: its add() would take the algorithm for its
            # context and hash md5 alone. _add is what add() runs on
            # 0.26 on, the multihash included.
            return store._add(image_id, source, size, extra[0], None)
        return store.add(image_id, source, size, *extra)
    try:
        cpu = workers.cpu_seconds()
        result, elapsed = timed(add)
        cpu = workers.cpu_seconds() - cpu
    finally:
        source._file.close()
    if result[1] != size:
        raise AssertionError('add() said %d bytes, not %d' % (result[1],
                                                              size))
    # The VDI's name is the location's: add() names it for the upload
    # attempt (the image id and a suffix); _unhashed by the image id.
    name = result[0].rsplit(':', 1)[1] if result[0] else image_id
    return name, elapsed, cpu


def check_and_drop(params, image_id, size, sha256=None):
    """Fail unless the stored VDI holds the source's bytes; delete it."""
    if not params.get('root'):  # a real cluster: through its own dog
        return _check_and_drop_real(params, image_id, size, sha256)
    from sheepdog_emulator import emulator
    cluster = emulator.Cluster(params['root'], params['address'],
                               params['port'])
    stored = cluster.data_path(image_id)
    if sha256 and (os.path.getsize(stored) != size or
                   clusters.sha256(stored, size) != sha256):
        raise AssertionError('stored VDI differs from the source')
    cluster.lock(True)
    try:
        cluster.delete(image_id)  # keep the cluster (and memory) small
    finally:
        cluster.unlock()


def _check_and_drop_real(params, image_id, size, sha256):
    where = ['-a', params['address'], '-p', str(params['port'])]
    try:
        if sha256:
            dog = subprocess.Popen([params['dog'], 'vdi', 'read'] + where +
                                   [image_id], stdout=subprocess.PIPE)
            digest, count = hashlib.sha256(), 0
            for block in iter(lambda: dog.stdout.read(4 * MIB), b''):
                digest.update(block)
                count += len(block)
            if dog.wait() or count != size or digest.hexdigest() != sha256:
                raise AssertionError('stored VDI %s differs from the '
                                     'source' % image_id)
    finally:
        subprocess.check_call([params['dog'], 'vdi', 'delete'] + where +
                              [image_id])


class AllReaders(object):
    """A fastsheep store whose get() runs every reader from the start.

    Store.get ramps the readers up from one; the read-ahead stream's
    ``ramp`` argument starts them all at once (the fixed read-ahead the
    readahead section's ``fixed4`` rows compare with one reader).
    """

    def __init__(self, store):
        self.store = store

    def get(self, loc):
        from glance_store_fastsheep.dog import readahead
        from glance_store_fastsheep.dog import readplan
        from glance_store_fastsheep import stream
        where = loc.store_location
        size = self.store.get_size(loc)
        return stream.Stream(
            readahead.pieces, self.store.client.dog, self.store.settings,
            where.addr, where.port, where.image, 0, size,
            lambda most: readplan.ReaderRamp(most, start=most)), size
