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
"""Pike's in-tree sheepdog driver against fastsheep, on the emulator.

Rows, methods and the shims that let Pike's driver run on Python 3 are
described in doc/source/bench-sheepdog.rst. The workers below also run on
Pike's CPython 2.7 (the ``_py27`` rows).
"""

import hashlib
import os
import sys

import bench
import worker

ADDRESS, PORT, MIB = '127.0.0.1', 7000, 1 << 20
SOURCE_VDI, PIKE_SOURCE_VDI = 'bench-source', 'bench-source-pike'
FAST_MODULE = 'glance_store_fastsheep.store'
PIKE27 = ', eventlet 0.20, 2.7'

DOWNLOAD = bench.Table(
    'Download through the store driver', 'get() of one image on the '
    'emulator, consumed whole and checked by sha256; median of the timed '
    'repeats; vs: MB/s over Pike\'s.', bench.THROUGHPUT, 'mb_s',
    chart='download_mb_s')
PIKE_GET = DOWNLOAD.row('pike_get_eventlet', 'Pike in-tree driver, eventlet')
FAST_GET = DOWNLOAD.row('fastsheep_get_eventlet', 'fastsheep, eventlet',
                        PIKE_GET)
FAST_GET_THREADS = DOWNLOAD.row('fastsheep_get_threads',
                                'fastsheep, native threads', PIKE_GET)
FAST_GET_CHUNK = DOWNLOAD.row('fastsheep_get_eventlet_chunk{chunk}',
                              'fastsheep, eventlet, {chunk} MiB chunks',
                              PIKE_GET)
PIKE_GET_27 = DOWNLOAD.row('pike_get_eventlet_py27', 'Pike in-tree driver' +
                           PIKE27)
FAST_GET_27 = DOWNLOAD.row('fastsheep_get_eventlet_py27', 'fastsheep' +
                           PIKE27, PIKE_GET_27)
FAST_GET_CHUNK_27 = DOWNLOAD.row(
    'fastsheep_get_eventlet_chunk{chunk}_py27',
    'fastsheep, {chunk} MiB chunks' + PIKE27, PIKE_GET_27)
CEILING = DOWNLOAD.row('ceiling', 'ceiling: dog vdi read | reader', PIKE_GET)
SHELL_PIPE = DOWNLOAD.row('ceiling_shell_pipe',
                          'ceiling: dog | dd (shell pipe)', PIKE_GET)

UPLOAD = bench.Table(
    'Upload through the store driver', 'add() of one image on the '
    'emulator, stored bytes checked by sha256; the 50 ms rows add 50 ms per '
    'dog write call; vs: MB/s over Pike\'s (50 ms rows: concurrent over '
    'serial).', bench.THROUGHPUT, 'mb_s', chart='upload_mb_s')
PIKE_PUT = UPLOAD.row('pike_put_eventlet', 'Pike in-tree driver, eventlet')
FAST_PUT = UPLOAD.row('fastsheep_put_eventlet', 'fastsheep, eventlet',
                      PIKE_PUT)
FAST_PUT_THREADS = UPLOAD.row('fastsheep_put_threads',
                              'fastsheep, native threads', PIKE_PUT)
PIKE_PUT_27 = UPLOAD.row('pike_put_eventlet_py27', 'Pike in-tree driver' +
                         PIKE27)
FAST_PUT_27 = UPLOAD.row('fastsheep_put_eventlet_py27', 'fastsheep' + PIKE27,
                         PIKE_PUT_27)
PUT_SERIAL = UPLOAD.row('fastsheep_put_serial_50ms',
                        'fastsheep, one write at a time, 50 ms/call')
PUT_CONCURRENT = UPLOAD.row('fastsheep_put_concurrent_50ms',
                            'fastsheep, writes in flight, 50 ms/call',
                            PUT_SERIAL)

HUB = bench.Table(
    'Does a transfer freeze the eventlet hub?', 'Worst lateness of a 1 ms '
    'greenthread ticker while a get and a put run; the idle-process '
    'control is the machine\'s own noise.',
    (('worst tick ms', 'hub_max_stall_ms'),
     ('worst without CPU wait ms', 'hub_stall_no_cpu_wait_ms'),
     ('idle control ms', 'idle_process_stall_ms'),
     ('get MB/s', 'get_mb_s'), ('put MB/s', 'put_mb_s')),
    'hub_max_stall_ms', lower_is_better=True)
PIKE_STALL = HUB.row('pike_hub_stall', 'Pike in-tree driver')
FAST_STALL = HUB.row('fastsheep_hub_stall', 'fastsheep', PIKE_STALL)


def _largest_growth(*rows):
    return lambda metric: max(metric(row, 'rss_growth_mib') for row in rows)


RATIOS = (
    bench.ratio('get_eventlet_vs_ceiling', FAST_GET, CEILING, op='>=',
                bound=0.85),
    bench.ratio('get_eventlet_vs_pike', FAST_GET, PIKE_GET, op='>=', bound=8),
    bench.ratio('get_threads_vs_ceiling', FAST_GET_THREADS, CEILING,
                op='>=', bound=0.85),
    bench.ratio('put_eventlet_vs_pike', FAST_PUT, PIKE_PUT, op='>=',
                bound=25),
    bench.ratio('put_eventlet_vs_threads', FAST_PUT, FAST_PUT_THREADS,
                op='>=', bound=0.9),
    bench.ratio('put_concurrent_vs_serial', PUT_CONCURRENT, PUT_SERIAL,
                op='>=', bound=3),
    bench.ratio('get_rss_growth_mib', _largest_growth(FAST_GET,
                                                      FAST_GET_CHUNK),
                op='<=', bound=16),
    bench.ratio('get_eventlet_vs_pike_py27', FAST_GET_27, PIKE_GET_27,
                op='>=', bound=10),
    bench.ratio('put_eventlet_vs_pike_py27', FAST_PUT_27, PIKE_PUT_27,
                op='>=', bound=25),
    bench.ratio('get_rss_growth_mib_py27', _largest_growth(
        FAST_GET_27, FAST_GET_CHUNK_27), op='<=', bound=16),
    bench.ratio('hub_max_stall_ms', FAST_STALL, key='hub_max_stall_ms',
                op='<=', bound=20),
    bench.ratio('hub_max_stall_ms_pike', PIKE_STALL, key='hub_max_stall_ms'),
    # Without the time the hub waited for a CPU: what the driver itself did.
    bench.ratio('hub_stall_no_cpu_wait_ms', FAST_STALL,
                key='hub_stall_no_cpu_wait_ms'),
    bench.ratio('hub_stall_no_cpu_wait_ms_pike', PIKE_STALL,
                key='hub_stall_no_cpu_wait_ms'),
    # The same ticker in an idle process: the machine's share.
    bench.ratio('idle_process_stall_ms', FAST_STALL,
                key='idle_process_stall_ms'),
)


def add_arguments(parser):
    group = parser.add_argument_group('sheepdog section')
    group.add_argument('--sheepdog-repeats', type=int, default=None,
                       help='timed repeats per transfer row (default: '
                            'downloads 5, uploads 3, with --quick 2)')
    group.add_argument('--sheepdog-pike-put-size', default=None,
                       help='image size of the Pike upload rows (default '
                            '64M; 4M with --quick)')
    group.add_argument('--sheepdog-latency-size', default=None,
                       help='image size of the 50 ms latency upload rows '
                            '(default 128M; 32M with --quick)')
    group.add_argument('--sheepdog-other-chunk-mib', type=int, default=256,
                       help='second sheepdog_store_chunk_size (MiB) for '
                            'the download memory row (default 256)')
    group.add_argument('--sheepdog-root', default=None,
                       help='directory for the emulated cluster (default: '
                            'a temporary directory in /dev/shm when it has '
                            'room, else in TMPDIR)')


def _sha256(path, size):
    digest = hashlib.sha256()
    with open(path, 'rb') as src:
        while size:
            block = src.read(min(size, 16 * MIB))
            if not block:
                break
            digest.update(block)
            size -= len(block)
    return digest.hexdigest()


class Emulated(object):
    """One emulated cluster with the source image, for one section."""

    def __init__(self, args, report, quick_size=256 * MIB):
        import shutil
        import tempfile

        from sheepdog_emulator import emulator
        self.emulator = emulator
        self.size = min(args.size_bytes, quick_size) if args.quick else \
            args.size_bytes
        parent = args.sheepdog_root
        stat = os.statvfs('/dev/shm')
        if not parent and stat.f_bavail * stat.f_frsize > 4 * self.size + \
                512 * MIB:
            parent = '/dev/shm'
        self.root = tempfile.mkdtemp(prefix='bench-sheepdog-', dir=parent)
        self.cleanup = lambda: shutil.rmtree(self.root, ignore_errors=True)
        emulator.init_cluster(self.root, ADDRESS, PORT)
        self.dog = emulator.install_wrappers(
            os.path.join(self.root, 'bin'), self.root)[0]
        self.source = os.path.join(self.root, 'source.img')
        self.sha = {self.size: bench.write_random_file(self.source,
                                                       self.size)}
        self.params = {'root': self.root, 'dog': self.dog,
                       'address': ADDRESS, 'port': PORT,
                       'name': SOURCE_VDI, 'source': self.source}
        self.where = ['-a', ADDRESS, '-p', str(PORT)]
        # Pike's driver runs `collie` from PATH.
        self.env = {'PATH': os.path.dirname(self.dog) + os.pathsep +
                    os.environ.get('PATH', '')}
        self.vdi(SOURCE_VDI, self.size)

    def vdi(self, name, size):
        """A VDI of the source's first size bytes; their sha256."""
        import subprocess
        subprocess.check_call([self.dog, 'vdi', 'create'] + self.where +
                              [name, str(size)])
        with open(self.source, 'rb') as src:
            subprocess.check_call([self.dog, 'vdi', 'write'] + self.where +
                                  [name, '0', str(size)], stdin=src)
        return self.sha256(size)

    def sha256(self, size):
        if size not in self.sha:
            self.sha[size] = _sha256(self.source, size)
        return self.sha[size]

    def get(self, size=None, **params):
        size = size or self.size
        return dict(self.params, kind='get', size=size,
                    sha256=self.sha256(size), **params)

    def knobs(self, **knobs):
        self.emulator.write_knobs(self.root, ADDRESS, PORT, knobs)


def run(args, report):
    cluster = Emulated(args, report)
    try:
        _run(args, report, cluster)
    finally:
        cluster.cleanup()


def _run(args, report, cluster):
    from glance_store_fastsheep import opts
    size, quick = cluster.size, args.quick
    parse = bench.parse_size
    repeats = args.sheepdog_repeats or 5
    put_repeats = args.sheepdog_repeats or (2 if quick else 3)
    pike_get = min(size, 64 * MIB) if quick else size
    pike_put = min(size, parse(args.sheepdog_pike_put_size or
                               ('4M' if quick else '64M')))
    latency = min(size, parse(args.sheepdog_latency_size or
                              ('32M' if quick else '128M')))
    put_size = min(size, 128 * MIB) if quick else size
    report.vars['chunk'] = args.sheepdog_other_chunk_mib
    pike_vdi = SOURCE_VDI
    if pike_get != size:
        pike_vdi = PIKE_SOURCE_VDI
        cluster.vdi(pike_vdi, pike_get)
    get = cluster.get(repeats=repeats, driver='fastsheep', mode='eventlet')
    pike = dict(get, driver='pike', name=pike_vdi, size=pike_get,
                sha256=cluster.sha256(pike_get))
    chunk = dict(get, repeats=1, opts={
        'sheepdog_store_chunk_size': args.sheepdog_other_chunk_mib})
    put = dict(get, kind='put', size=put_size,
               sha256=cluster.sha256(put_size), repeats=put_repeats)
    pike_put = dict(put, driver='pike', size=pike_put, repeats=1 if quick
                    else 2, sha256=cluster.sha256(pike_put))
    target = 'sheepdog_bench:work'
    # The ceiling and the default downloads are near one another, and a
    # 1 GiB download takes ~0.2 s: alternating rounds, side by side.
    ceiling = dict(get, kind='ceiling', mode=None)
    report.interleave([
        (CEILING, dict(ceiling, pipe_size=opts.DEFAULT_PIPE_SIZE)),
        (FAST_GET, get), (FAST_GET_THREADS, dict(get, mode='threads'))],
        target, max(repeats, 4), cluster.env)
    report.measure(SHELL_PIPE, target, ceiling, env=cluster.env)
    report.measure(PIKE_GET, target, pike, env=cluster.env)
    report.measure(FAST_GET_CHUNK, target, chunk, env=cluster.env)
    report.measure(PIKE_PUT, target, pike_put, env=cluster.env)
    report.interleave([(FAST_PUT, put), (FAST_PUT_THREADS,
                                         dict(put, mode='threads'))],
                      target, put_repeats + 2, cluster.env)
    cluster.knobs(write_latency_ms=50)
    try:
        latency = dict(put, size=latency, sha256=cluster.sha256(latency))
        report.measure(PUT_SERIAL, target, dict(latency, opts={
            'sheepdog_store_chunk_size': 4,
            'sheepdog_store_write_concurrency': 1}), env=cluster.env)
        report.measure(PUT_CONCURRENT, target, dict(latency, opts={
            'sheepdog_store_chunk_size': 4}), env=cluster.env)
    finally:
        cluster.knobs()
    try:
        python = bench.pike27_python()
    except Exception as exc:  # no 2.7 here, or its venv did not build
        python = exc
    # Pike's 2.7 download reads 1 KiB at a time (~30 MB/s): fewer repeats.
    for row, params in ((PIKE_GET_27, dict(pike, repeats=min(repeats, 2))),
                        (FAST_GET_27, get), (FAST_GET_CHUNK_27, chunk),
                        (PIKE_PUT_27, pike_put), (FAST_PUT_27, put)):
        if isinstance(python, Exception):
            report.failed(row, 'no Pike 2.7 venv: %s' % python)
        else:
            report.measure(row, target, params, python, env=cluster.env)
    stall = dict(get, kind='stall', repeats=min(repeats, 3),
                 put_size=put['size'], put_sha256=put['sha256'])
    report.measure(FAST_STALL, target, stall, env=cluster.env)
    report.measure(PIKE_STALL, target, dict(
        stall, driver='pike', name=pike_vdi, size=pike_get, repeats=1,
        sha256=pike['sha256'], put_size=pike_put['size'],
        put_sha256=pike_put['sha256']), env=cluster.env)
    report.note(
        'sheepdog: %d MiB image (uploads %d MiB), %d timed repeat(s) per get '
        'row and %d per put row; Pike downloads %d MiB and uploads %d MiB; '
        '50 ms rows upload %d MiB in 4 MiB chunks; emulator root %s'
        % (size // MIB, put_size // MIB, repeats, put_repeats,
           pike_get // MIB, pike_put['size'] // MIB, latency['size'] // MIB,
           os.path.dirname(cluster.root)))


# -- worker side: Python 3 and Pike's CPython 2.7 -----------------------------

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
    if 'sheepdog_store_client' not in names:
        return opts
    opts = dict(opts)
    reader = opts.pop('sheepdog_store_reader', None)
    opts.setdefault('sheepdog_store_client', reader or 'dog')
    return opts


def _store(params):
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


def _consume(store, loc, digest=None):
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


def _in_mode(params, func):
    """Run func() on a native thread for 'threads', else right here."""
    if params['mode'] != 'threads':
        return func()
    import threading
    box = {}

    def target():
        try:
            box['value'] = func()
        except BaseException as exc:
            box['error'] = exc
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if 'error' in box:
        raise box['error']
    return box['value']


def _timed(func):
    started = worker.monotonic()
    value = func()
    return value, worker.monotonic() - started


class _Prefix(object):
    """The first `size` bytes of a file, read the way glance hands them."""

    def __init__(self, path, size):
        self._file, self._left = open(path, 'rb'), size

    def read(self, n=-1):
        n = self._left if n is None or n < 0 or n > self._left else n
        data = self._file.read(n)
        self._left -= len(data)
        return data


def _put(store, params, size):
    """Upload the source's first size bytes: (image id, add() seconds)."""
    import uuid
    # On an operator's cluster every VDI the bench makes has its prefix.
    image_id = params.get('vdi_prefix', '') + str(uuid.uuid4())
    source = _Prefix(params['source'], size)
    # hashing_algo (glance_store 0.26 on): a multihash beside the md5.
    extra = (params['hashing_algo'],) if params.get('hashing_algo') else ()
    try:
        result, elapsed = _timed(lambda: store.add(image_id, source, size,
                                                   *extra))
    finally:
        source._file.close()
    if result[1] != size:
        raise AssertionError('add() said %d bytes, not %d' % (result[1],
                                                              size))
    return image_id, elapsed


def _check_and_drop(params, image_id, size, sha256=None):
    """Fail unless the stored VDI holds the source's bytes; delete it."""
    if not params.get('root'):  # a real cluster: through its own dog
        return _check_and_drop_real(params, image_id, size, sha256)
    from sheepdog_emulator import emulator
    cluster = emulator.Cluster(params['root'], params['address'],
                               params['port'])
    stored = cluster.data_path(image_id)
    if sha256 and (os.path.getsize(stored) != size or
                   _sha256(stored, size) != sha256):
        raise AssertionError('stored VDI differs from the source')
    cluster.lock(True)
    try:
        cluster.delete(image_id)  # keep the cluster (and memory) small
    finally:
        cluster.unlock()


def _check_and_drop_real(params, image_id, size, sha256):
    import subprocess
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


def _transfer(params, once):
    """MB/s of the timed repeats of once(), after one untimed one.

    Also the CPU seconds the timed repeats cost per GiB moved: this
    process and its reaped children (``cpu_s_gib``), and the cluster's
    sheep when ``sheep_pids`` names them (``sheep_cpu_s_gib``). On a
    machine of N cores, a transfer whose two add up to N / (GiB/s) is
    bound by CPU, not by latency. Each is a list of one; the runner
    reports the median over rounds (bench.MEDIANS).

    A process's first transfer pays its first-use costs (lazy imports,
    fresh memory): 1.5-2x slower than the next. The RSS baseline is taken
    before it, so its peak still counts in the growth. ``drop_caches``
    drops the page cache before each timed repeat (the cold rows).
    """
    baseline = worker.current_rss_mib()
    _in_mode(params, lambda: once(False))
    times = []
    sheep = params.get('sheep_pids') or ()
    cpu = {'cpu_s_gib': 0.0, 'sheep_cpu_s_gib': 0.0}
    for _ in range(params['repeats']):
        if params.get('drop_caches'):  # cold: outside the timed part
            worker.drop_caches()
        before = worker.cpu_seconds(), worker.cpu_seconds(sheep)
        times.append(_in_mode(params, lambda: once(True)))
        cpu['cpu_s_gib'] += worker.cpu_seconds() - before[0]
        cpu['sheep_cpu_s_gib'] += worker.cpu_seconds(sheep) - before[1]
    gib = params['repeats'] * params['size'] / float(1 << 30)
    result = {'mb_s': round(params['size'] / worker.median(times) / 1e6, 1),
              'rss_growth_mib': round(max(0.0, worker.vm_hwm_mib() -
                                          baseline), 1),
              'size': params['size'], 'size_mib': params['size'] // MIB,
              'times_s': [round(t, 3) for t in times]}
    for key, seconds in cpu.items():
        if key == 'cpu_s_gib' or sheep:
            result[key] = [round(seconds / gib, 3)]
    return result


class _AllReaders(object):
    """A fastsheep store whose get() runs every reader from the start.

    Store.get ramps the readers up from one; the read-ahead stream's
    ``ramp`` argument starts them all at once (the fixed read-ahead the
    readahead section's ``fixed4`` rows compare with one reader).
    """

    def __init__(self, store):
        self.store = store

    def get(self, loc):
        from glance_store_fastsheep import readahead
        where = loc.store_location
        size = self.store.get_size(loc)
        return readahead.ReadAheadStream(
            self.store.settings, where.addr, where.port, where.image, 0,
            size, ramp=lambda most: readahead.ReaderRamp(most, start=most)
        ), size


def _get_row(params):
    store, loc = _store(params)
    if params.get('all_readers'):
        store = _AllReaders(store)

    def once(timed):
        count, elapsed = _timed(lambda: _consume(store, loc))
        if count != params['size']:
            raise AssertionError('got %d bytes, expected %d'
                                 % (count, params['size']))
        return elapsed
    result = _transfer(params, once)
    # sha256 (1-2 GB/s) is slower than the pipe: one extra untimed pass.
    digest = hashlib.sha256()
    _in_mode(params, lambda: _consume(store, loc, digest))
    if digest.hexdigest() != params['sha256']:
        raise AssertionError('bytes differ from the source')
    return result


def _put_row(params):
    store, _loc = _store(params)

    def once(timed):
        image_id, elapsed = _put(store, params, params['size'])
        _check_and_drop(params, image_id, params['size'],
                        timed and params['sha256'])
        return elapsed
    return _transfer(params, once)


def _run_delay():
    """Seconds this OS thread has waited on a run queue (for a CPU)."""
    try:
        with open('/proc/thread-self/schedstat') as stat:
            return int(stat.read().split()[1]) / 1e9
    except (IOError, OSError, ValueError, IndexError):
        return 0.0


# A 1 ms ticker in a process that does nothing else: the machine's own
# scheduling delay while the transfers load the CPUs. At EOF on stdin it
# prints "start lateness" per late tick, in CLOCK_MONOTONIC seconds.
_IDLE_TICKER = """
import select, sys, time
late = []
while not select.select([sys.stdin], [], [], 0)[0]:
    started = time.monotonic()
    time.sleep(0.001)
    lateness = time.monotonic() - started - 0.001
    if lateness > 0.001:
        late.append('%f %f' % (started, lateness))
print(chr(10).join(late))
"""


def _stall_row(params):
    """Worst lateness of a 1 ms green ticker while the driver works.

    Beside the worst tick: the median of each run's worst (a hub the
    driver blocks is blocked on every run, preemption is not), the worst
    minus the time the hub's OS thread waited for a CPU, the CPU used
    during the worst tick, and the idle process's worst in the same
    windows (see doc/source/bench-sheepdog.rst).
    """
    import subprocess
    import time

    import eventlet
    store, loc = _store(params)
    put_size, put_sha = params['put_size'], params['put_sha256']
    state = {'done': False, 'phase': 'get'}

    def ticker(worst):
        while not state['done']:
            started, cpu, waited = time.monotonic(), time.process_time(), \
                _run_delay()
            eventlet.sleep(0.001)
            late = time.monotonic() - started - 0.001
            if late > worst[state['phase']][0]:
                worst[state['phase']] = (late, time.process_time() - cpu)
            worst['own'] = max(worst['own'], late - _run_delay() + waited)

    idle = subprocess.Popen([sys.executable, '-S', '-c', _IDLE_TICKER],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    _consume(store, loc)  # first-use costs, unwatched
    _check_and_drop(params, _put(store, params, put_size)[0], put_size,
                    put_sha)
    runs, get_times, put_times, windows = [], [], [], []
    for _ in range(params['repeats']):
        worst = {'get': (0.0, 0.0), 'put': (0.0, 0.0), 'own': 0.0}
        state.update(done=False, phase='get')
        thread = eventlet.spawn(ticker, worst)
        eventlet.sleep(0.01)
        watched = time.monotonic()
        # Only the transfers run while the ticker watches: the checks
        # (hashing) come after it stops.
        count, get_s = _timed(lambda: _consume(store, loc))
        state['phase'] = 'put'
        image_id, put_s = _put(store, params, put_size)
        state['done'] = True
        thread.wait()
        windows.append((watched, time.monotonic()))
        if count != params['size']:
            raise AssertionError('download gave %d bytes' % count)
        _check_and_drop(params, image_id, put_size, put_sha)
        runs.append(worst)
        get_times.append(get_s)
        put_times.append(put_s)
    idle_worst = 0.0
    for line in idle.communicate(b'')[0].decode().splitlines():
        started, lateness = (float(f) for f in line.split())
        if any(lo <= started <= hi for lo, hi in windows):
            idle_worst = max(idle_worst, lateness)

    def ms(value):
        return round(value * 1000, 1)
    overall = max((w[phase] for w in runs for phase in ('get', 'put')),
                  key=lambda pair: pair[0])
    return {'hub_max_stall_ms': ms(overall[0]),
            'idle_process_stall_ms': ms(idle_worst),
            'hub_median_run_worst_ms': ms(worker.median(
                [max(w['get'][0], w['put'][0]) for w in runs])),
            'hub_stall_no_cpu_wait_ms': ms(max(w['own'] for w in runs)),
            'hub_worst_cpu_ms': ms(overall[1]),
            'runs_worst_ms': [[ms(w['get'][0]), ms(w['put'][0])]
                              for w in runs],
            'get_stall_ms': ms(worker.median([w['get'][0] for w in runs])),
            'put_stall_ms': ms(worker.median([w['put'][0] for w in runs])),
            'get_mb_s': round(params['size'] / worker.median(get_times) /
                              1e6, 1),
            'put_mb_s': round(put_size / worker.median(put_times) / 1e6, 1)}


def _ceiling_row(params):
    """``dog vdi read | dd bs=4M of=/dev/null``, by wall time.

    With ``pipe_size`` the pipe between the two is raised to the size the
    driver asks for (``F_SETPIPE_SZ``); without, the shell's 64 KiB pipe.
    One untimed pipeline first, as the get rows make one untimed get.
    """
    import fcntl
    import re
    import subprocess
    argv = [params['dog'], 'vdi', 'read', '-a', params['address'], '-p',
            str(params['port']), params['name'], '0', str(params['size'])]

    def once(timed):
        read_fd, write_fd = os.pipe()
        if params.get('pipe_size'):
            fcntl.fcntl(read_fd, getattr(fcntl, 'F_SETPIPE_SZ', 1031),
                        params['pipe_size'])
        started = worker.monotonic()
        dog = subprocess.Popen(argv, stdout=write_fd, stderr=subprocess.PIPE)
        dd = subprocess.Popen(['dd', 'bs=4M', 'of=/dev/null'],
                              stdin=read_fd, stderr=subprocess.PIPE)
        os.close(read_fd)
        os.close(write_fd)
        dog_err, err = dog.communicate()[1], dd.communicate()[1].decode()
        elapsed = worker.monotonic() - started
        copied = re.search(r'^(\d+) bytes', err, re.M)
        if dog.returncode or dd.returncode or not copied or \
                int(copied.group(1)) != params['size']:
            raise AssertionError('pipeline failed (dog exit %d: %s; dd exit '
                                 '%d: %s)' % (dog.returncode, dog_err,
                                              dd.returncode, err))
        return elapsed
    result = _transfer(dict(params, mode=None), once)
    del result['rss_growth_mib']  # the pipeline's memory is not ours
    return result


def work(params):
    """The worker of every row of this section and of readahead's."""
    import logging
    logging.basicConfig(level=logging.WARNING)
    return {'get': _get_row, 'put': _put_row, 'stall': _stall_row,
            'ceiling': _ceiling_row}[params['kind']](params)
