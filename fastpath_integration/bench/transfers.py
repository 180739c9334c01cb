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
"""The workers of the transfer rows: the store driver on a cluster.

A download (``get``), an upload (``put``), ``dog vdi read | dd`` (the
``ceiling``), ``dog vdi write`` (``dog_write``), a green ticker's
lateness while the driver works (``stall``), each by ``work(params)``,
and N transfers at once (``concurrent``), for Pike's in-tree driver or
fastsheep, on any cluster of ``clusters``: the sheepdog, readahead, real
and concurrent sections' rows. Shims that let Pike's driver run on
Python 3 are described in doc/source/bench-sheepdog.rst. These run on
Pike's CPython 2.7 too (the ``_py27`` rows): 2.7/3 common subset.
"""

import hashlib
import os
import subprocess
import sys
import uuid

from fastpath_integration.bench import clusters
from fastpath_integration.bench import workers

MIB = 1 << 20
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


def store(params):
    """(store, location) of params' driver and VDI, configured."""
    return _store(params)


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


def _put(store, params, size):
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
        result, elapsed = _timed(add)
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


def _check_and_drop(params, image_id, size, sha256=None):
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


def _transfer(params, once):
    """MB/s of the timed repeats of once(), after one untimed one.

    Also the CPU seconds the timed repeats cost per GiB moved: this
    process and its reaped children (``cpu_s_gib``), and the cluster's
    sheep when ``sheep_pids`` names them (``sheep_cpu_s_gib``). On a
    machine of N cores, a transfer whose two add up to N / (GiB/s) is
    bound by CPU, not by latency. Each is a list of one; the runner
    reports the median over rounds (runner.MEDIANS). A once() that
    returns (seconds, CPU seconds) measured its transfer's CPU itself
    (an upload, whose check afterwards is not the upload's cost): that
    figure is ``cpu_s_gib``.

    A process's first transfer pays its first-use costs (lazy imports,
    fresh memory): 1.5-2x slower than the next. The RSS baseline is taken
    before it, so its peak still counts in the growth. ``drop_caches``
    drops the page cache before each timed repeat (the cold rows).
    """
    baseline = workers.current_rss_mib()
    _in_mode(params, lambda: once(False))
    times = []
    sheep = params.get('sheep_pids') or ()
    cpu = {'cpu_s_gib': 0.0, 'sheep_cpu_s_gib': 0.0}
    for _ in range(params['repeats']):
        if params.get('drop_caches'):  # cold: outside the timed part
            workers.drop_caches()
        before = workers.cpu_seconds(), workers.cpu_seconds(sheep)
        elapsed = _in_mode(params, lambda: once(True))
        if isinstance(elapsed, tuple):
            elapsed, own = elapsed
        else:
            own = workers.cpu_seconds() - before[0]
        times.append(elapsed)
        cpu['cpu_s_gib'] += own
        cpu['sheep_cpu_s_gib'] += workers.cpu_seconds(sheep) - before[1]
    gib = params['repeats'] * params['size'] / float(1 << 30)
    result = {'mb_s': round(params['size'] / workers.median(times) / 1e6, 1),
              'rss_growth_mib': round(max(0.0, workers.vm_hwm_mib() -
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
        from glance_store_fastsheep.dog import readahead
        from glance_store_fastsheep.dog import readplan
        from glance_store_fastsheep import stream
        where = loc.store_location
        size = self.store.get_size(loc)
        return stream.Stream(
            readahead.pieces, self.store.client.dog, self.store.settings,
            where.addr, where.port, where.image, 0, size,
            lambda most: readplan.ReaderRamp(most, start=most)), size


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
        image_id, elapsed, cpu = _put(store, params, params['size'])
        _check_and_drop(params, image_id, params['size'],
                        timed and params['sha256'])
        return elapsed, cpu
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
        image_id, put_s, _cpu = _put(store, params, put_size)
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
            'hub_median_run_worst_ms': ms(workers.median(
                [max(w['get'][0], w['put'][0]) for w in runs])),
            'hub_stall_no_cpu_wait_ms': ms(max(w['own'] for w in runs)),
            'hub_worst_cpu_ms': ms(overall[1]),
            'runs_worst_ms': [[ms(w['get'][0]), ms(w['put'][0])]
                              for w in runs],
            'get_stall_ms': ms(workers.median([w['get'][0] for w in runs])),
            'put_stall_ms': ms(workers.median([w['put'][0] for w in runs])),
            'get_mb_s': round(params['size'] / workers.median(get_times) /
                              1e6, 1),
            'put_mb_s': round(put_size / workers.median(put_times) / 1e6, 1)}


def _ceiling_row(params):
    """``dog vdi read | dd bs=4M of=/dev/null``, by wall time.

    With ``pipe_size`` the pipe between the two is raised to the size the
    driver asks for (``F_SETPIPE_SZ``); without, the shell's 64 KiB pipe.
    One untimed pipeline first, as the get rows make one untimed get.
    """
    import fcntl
    import re
    argv = [params['dog'], 'vdi', 'read', '-a', params['address'], '-p',
            str(params['port']), params['name'], '0', str(params['size'])]

    def once(timed):
        read_fd, write_fd = os.pipe()
        if params.get('pipe_size'):
            fcntl.fcntl(read_fd, getattr(fcntl, 'F_SETPIPE_SZ', 1031),
                        params['pipe_size'])
        started = workers.monotonic()
        dog = subprocess.Popen(argv, stdout=write_fd, stderr=subprocess.PIPE)
        dd = subprocess.Popen(['dd', 'bs=4M', 'of=/dev/null'],
                              stdin=read_fd, stderr=subprocess.PIPE)
        os.close(read_fd)
        os.close(write_fd)
        dog_err, err = dog.communicate()[1], dd.communicate()[1].decode()
        elapsed = workers.monotonic() - started
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


def _dog_write_row(params):
    """``dog vdi create`` + ``dog vdi write`` from the source file."""
    where = ['-a', params['address'], '-p', str(params['port'])]

    def once(timed):
        name = params['vdi_prefix'] + str(uuid.uuid4())
        cpu = workers.cpu_seconds()
        started = workers.monotonic()
        subprocess.check_call([params['dog'], 'vdi', 'create', name,
                               str(params['size'])] + where)
        with open(params['source'], 'rb') as src:
            subprocess.check_call([params['dog'], 'vdi', 'write', name, '0',
                                   str(params['size'])] + where, stdin=src)
        elapsed = workers.monotonic() - started
        cpu = workers.cpu_seconds() - cpu  # the two dogs, reaped
        _check_and_drop(params, name, params['size'],
                        timed and params['sha256'])
        return elapsed, cpu
    result = _transfer(dict(params, mode=None), once)
    del result['rss_growth_mib']  # dog's memory, not this process's
    return result


def work(params):
    """One row of a transfer, by ``kind``."""
    import logging
    logging.basicConfig(level=logging.WARNING)
    return {'get': _get_row, 'put': _put_row, 'stall': _stall_row,
            'ceiling': _ceiling_row, 'dog_write': _dog_write_row}[
        params['kind']](params)


def _children():
    """Child processes of this process, from every thread's list."""
    count = 0
    for task in os.listdir('/proc/self/task'):
        try:
            with open('/proc/self/task/%s/children' % task) as children:
                count += len(children.read().split())
        except (IOError, OSError):  # the thread ended meanwhile
            continue
    return count


def concurrent(params):
    """count transfers at once, after one alone (first-use costs)."""
    import logging

    import eventlet
    logging.basicConfig(level=logging.WARNING)
    store, loc = _store(params)
    size, count = params['size'], params['count']

    def one(_index):
        if params['kind'] == 'get':
            if _consume(store, loc) != size:
                raise AssertionError('a download was not %d bytes' % size)
            return None
        return _put(store, params, size)[0]

    baseline = workers.current_rss_mib()
    first = one(0)
    if first:
        _check_and_drop(params, first, size)
    if params.get('drop_caches'):
        workers.drop_caches()
    peaks = {'peak_children': 0, 'peak_fds': 0}
    done = []

    def sample():
        while not done:
            peaks['peak_children'] = max(peaks['peak_children'], _children())
            peaks['peak_fds'] = max(peaks['peak_fds'],
                                    len(os.listdir('/proc/self/fd')))
            eventlet.sleep(0.01)
    sampler = eventlet.spawn(sample)
    started = workers.monotonic()
    try:
        made = list(eventlet.GreenPool(count).imap(one, range(count)))
    finally:
        elapsed = workers.monotonic() - started
        done.append(True)
        sampler.wait()
    for image_id in filter(None, made):
        _check_and_drop(params, image_id, size, params['sha256'])
    try:
        budget = store.conf.glance_store.sheepdog_store_readahead_budget
    except AttributeError:  # Pike's driver, or a tree without the option
        budget = None
    return dict(peaks, size=size * count, size_mib=size // MIB, count=count,
                times_s=[round(elapsed, 3)],
                mb_s=round(size * count / elapsed / 1e6, 1),
                rss_growth_mib=round(max(0.0, workers.vm_hwm_mib() -
                                         baseline), 1),
                readahead_budget_mib=budget)
