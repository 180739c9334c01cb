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
"""Sheepdog section: Pike's in-tree driver against glance_store_fastsheep.

Both drivers run side by side in one run, on one emulated cluster (the
sheepdog CLI emulator, package sheepdog_emulator, test tooling), and
are driven only through the glance_store Store API: ``Store(conf)``,
``configure()``, ``get(location)`` and ``add(...)``, with each location
built from the driver module's own ``StoreLocation`` and the URI
``sheepdog://ADDR:PORT:IMAGE``. Every row is a child worker process
(``common.run_worker``) so that its peak RSS and its eventlet
monkey-patching are its own.

Rows (MB/s = 10**6 bytes per second, medians of the timed repeats):

* ``ceiling``: ``dog vdi read | dd bs=4M of=/dev/null`` by wall time,
  with the pipe between them raised to the driver's default
  ``sheepdog_store_pipe_size``: the emulator's own pipe ceiling.
  ``ceiling_shell_pipe`` is the same through a shell's 64 KiB pipe, for
  reference (no ratio uses it: it caps every read at 64 KiB, which the
  driver does not).
* ``pike_get_eventlet``: Pike download under eventlet.
* ``fastsheep_get_eventlet`` / ``_threads``: fastsheep download under
  eventlet (monkey-patched) and in a native thread, in alternating
  rounds with ``ceiling``, since their ratios are near 1; plus
  ``fastsheep_get_eventlet_chunkN`` with another ``chunk_size`` for the
  memory bound.
* ``pike_put_eventlet``, ``fastsheep_put_eventlet`` / ``_threads``.
* ``fastsheep_put_serial_50ms`` / ``_concurrent_50ms``: uploads with
  50 ms injected per ``vdi write`` call, write concurrency 1 against the
  default.
* ``fastsheep_hub_stall`` / ``pike_hub_stall``: the worst lateness of a
  green ticker that sleeps 1 ms while the driver gets and then puts the
  image under eventlet, over every watched run (``hub_max_stall_ms``),
  with figures beside it that tell a blocked hub from a machine that
  descheduled the process (see ``_worker_stall``), and
  ``idle_process_stall_ms``: the worst lateness, over the same watched
  windows, of the same 1 ms ticker in a separate process that does
  nothing else (the machine's own scheduling delay under that load).
  Pike's row runs once: its stalls are its own.
* ``pike_get_eventlet_py27``, ``fastsheep_get_eventlet_py27`` (and
  ``_chunkN_py27``), ``pike_put_eventlet_py27`` and
  ``fastsheep_put_eventlet_py27``: the same rows on CPython 2.7 with
  Pike's pins (eventlet 0.20.0, glance_store 0.22.0), Pike's own
  interpreter, in the bench's ``pike27-bench`` venv
  (``common.pike27_python``). There the Pike driver runs unshimmed:
  ``processutils`` returns bytes and its generator ends cleanly. 2.7's
  hashlib here has no OpenSSL (sha256 ~290 MB/s, md5 ~640 MB/s), which
  caps both drivers' uploads alike.
* ``fastsheep_put_eventlet`` and ``_threads`` run in alternating rounds
  (one timed upload per worker per round, after an untimed one; two
  rounds more than the put rows' repeats; the order flips every round),
  so that a slow spell of the machine lands on both sides of their
  ratio.

Shims applied to the Pike driver, and only to it, so that its rows finish
with the right bytes on Python 3.11 (its code is not changed):

* Its ``vdi read`` calls get ``binary=True`` forced on
  ``processutils.execute`` (through a stand-in for the ``processutils``
  name in the driver module). Without it the image bytes are decoded as
  text on Python 3: wrong size and sha. Its other calls are unchanged
  (it parses ``vdi list`` output as text).
* Its image iterator ends with ``raise StopIteration()`` inside a
  generator, which Python 3.7+ turns into ``RuntimeError``; the bench
  treats exactly that error (``__cause__`` is StopIteration) as the end
  of the iteration.

Methodology notes:

* Byte-exactness: every download row hashes all bytes it received with
  sha256 in one extra, untimed pass through the same driver path and
  fails when the digest differs from the source's; each timed pass checks
  the byte count. Hashing is kept out of the timed passes because sha256
  (~1-2 GB/s here) is slower than the pipe ceiling the ratios compare
  with. Upload rows compare the sha256 of the stored VDI with the source.
* RSS growth is the worker's peak RSS minus its RSS after the imports
  and ``configure()``, i.e. what the transfers themselves added.
* Every get and put worker makes one untimed transfer of its row's size
  before its timed ones: a process's first transfer pays its first-use
  costs and ran 1.5-2x slower than the next ones.
* The Pike upload rows use a smaller image (it runs at ~8 MB/s); all
  figures are MB/s, so the ratios stay comparable.
* The 50 ms latency rows upload in 4 MiB chunks (one sheepdog object per
  ``vdi write`` call), the shape where waiting for each call before the
  next costs most; their image size is ``--sheepdog-latency-size``.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SECTION = 'sheepdog'
ADDRESS = '127.0.0.1'
PORT = 7000
MIB = 1 << 20
SOURCE_VDI = 'bench-source'
PIKE_SOURCE_VDI = 'bench-source-pike'
QUICK_SIZE = 256 * MIB
FAST_MODULE = 'glance_store_fastsheep.store'


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


# -- parent side -------------------------------------------------------------

def _scratch_parent(size, wanted):
    if wanted:
        return wanted
    shm = '/dev/shm'
    try:
        stat = os.statvfs(shm)
        if stat.f_bavail * stat.f_frsize > 4 * size + 512 * MIB:
            return shm
    except OSError:
        pass
    return None


def _sha256_prefix(path, size):
    import hashlib
    digest = hashlib.sha256()
    with open(path, 'rb') as src:
        left = size
        while left:
            block = src.read(min(left, 16 * MIB))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def _short_error(exc):
    """The worker's last stderr line (run_worker's first is its argv)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[-1][:300]


class _Section(object):

    # The section its rows are reported under (subclasses set their own).
    name = SECTION

    def __init__(self, args, report):
        import common
        self.common = common
        self.args = args
        self.report = report
        quick = args.quick
        self.size = min(args.size_bytes, QUICK_SIZE) if quick else \
            args.size_bytes
        # A fastsheep download of even 1 GiB takes ~0.15 s, where one
        # scheduling hiccup of this shared machine shows: five repeats,
        # they are cheap.
        self.repeats = args.sheepdog_repeats or 5
        # Uploads are the slow rows: three repeats, two with --quick.
        self.put_repeats = args.sheepdog_repeats or (2 if quick else 3)
        self.stall_repeats = min(self.repeats, 3)
        # put_eventlet_vs_threads: one upload per round, more rounds than
        # the other rows have repeats, since uploads vary the most here.
        self.put_rounds = self.put_repeats + 2
        # get_*_vs_ceiling: the ceiling and the default downloads.
        self.get_rounds = max(self.repeats, 4)
        self.pike_put_size = min(self.size, common.parse_size(
            args.sheepdog_pike_put_size or ('4M' if quick else '64M')))
        # Pike's download is slow too; --quick keeps it short.
        self.pike_get_size = min(self.size, 64 * MIB) if quick else \
            self.size
        self.pike_source = SOURCE_VDI if self.pike_get_size == self.size \
            else PIKE_SOURCE_VDI
        self.latency_size = min(self.size, common.parse_size(
            args.sheepdog_latency_size or ('32M' if quick else '128M')))
        self.put_size = min(self.size, 128 * MIB) if quick else self.size
        self.other_chunk = args.sheepdog_other_chunk_mib
        from glance_store_fastsheep import opts as fast_opts
        self.pipe_size = fast_opts.DEFAULT_PIPE_SIZE
        self.results = {}
        self.fast_missing = None

    def _run(self, name, params, python=None):
        """(result, peak RSS, wall s) of one worker, or None if it failed.

        A failure is recorded as the row's status. ``python`` runs the
        worker under another interpreter (the Pike 2.7 venv's).
        """
        params = dict(params, root=self.root, dog=self.dog,
                      address=ADDRESS, port=PORT)
        argv = [os.path.abspath(__file__), 'worker', json.dumps(params)]
        if params.get('driver') == 'fastsheep' and self.fast_missing:
            self.report.add_row(self.name, name, status='FAILED: driver not '
                                'installed (%s)' % self.fast_missing)
            return None
        try:
            return self.common.run_worker(argv, env=self.env, timeout=900,
                                          python=python)
        except RuntimeError as exc:
            sys.stderr.write('bench: sheepdog row %s failed:\n%s\n'
                             % (name, exc))
            self.report.add_row(self.name, name,
                                status='FAILED: %s' % _short_error(exc))
            return None

    def _record(self, name, result, peak, metrics_of):
        metrics = metrics_of(result)
        metrics['peak_rss_mib'] = peak
        self.report.add_row(self.name, name, **metrics)
        self.results[name] = result

    def row(self, name, params, metrics_of, python=None):
        """Run one worker; record its row (or why it failed)."""
        run = self._run(name, params, python)
        if run is None:
            return None
        result, peak, wall = run
        sys.stderr.write('bench: sheepdog row %s: %.1fs\n' % (name, wall))
        self._record(name, result, peak, metrics_of)
        return result

    def interleaved_rows(self, rows, rounds, metrics_of):
        """Rows whose ratio matters, measured in alternating rounds.

        Each round runs every row's worker once with one timed transfer,
        in the reverse order of the round before, so that a slow spell of
        this shared machine, or being first, lands on both sides of the
        ratio instead of on whichever row ran during it. A row's figure
        is the median over its rounds; its RSS growth the largest.
        """
        merged = dict((name, None) for name, _params in rows)
        for number in range(rounds):
            for name, params in (rows if number % 2 == 0 else rows[::-1]):
                run = self._run(name, dict(params, repeats=1))
                if run is None:
                    return
                result, peak, _wall = run
                result['peak_rss_mib'] = peak
                merged[name] = _merge_rounds(merged[name], result)
        for name, _params in rows:
            result = merged[name]
            sys.stderr.write('bench: sheepdog row %s: %s s\n'
                             % (name, result['times_s']))
            self._record(name, result, result['peak_rss_mib'], metrics_of)

    def ratio(self, name, numerator, denominator, op=None, bound=None,
              key='mb_s'):
        num = self.results.get(numerator)
        den = self.results.get(denominator) if denominator else None
        if num is None or (denominator and den is None):
            self._unmeasured(name, op, bound)
            return
        value = num[key] if not denominator else num[key] / den[key]
        self.report.add_ratio(name, round(value, 3), op, bound)

    def _unmeasured(self, name, op, bound):
        self.report.ratios[name] = None
        if op is not None:
            self.report.targets[name] = {'op': op, 'bound': bound,
                                         'met': False}

    def setup(self):
        import shutil
        import subprocess
        import tempfile

        from sheepdog_emulator import emulator as emu
        self.emu = emu
        parent = _scratch_parent(self.size, self.args.sheepdog_root)
        self.root = tempfile.mkdtemp(prefix='bench-sheepdog-', dir=parent)
        self._cleanup = lambda: shutil.rmtree(self.root, ignore_errors=True)
        emu.init_cluster(self.root, ADDRESS, PORT)
        bin_dir = os.path.join(self.root, 'bin')
        self.dog = emu.install_wrappers(bin_dir, self.root)[0]
        self.env = {'PATH': bin_dir + os.pathsep + os.environ.get('PATH',
                                                                  '')}
        self.source = os.path.join(self.root, 'source.img')
        self.source_sha = self.common.write_random_file(self.source,
                                                        self.size)
        self.prefix_sha = {}
        for size in (self.pike_put_size, self.latency_size,
                     self.pike_get_size, self.put_size):
            self.prefix_sha[size] = _sha256_prefix(self.source, size)
        self.prefix_sha[self.size] = self.source_sha
        common_args = ['-a', ADDRESS, '-p', str(PORT)]
        vdis = {SOURCE_VDI: self.size, self.pike_source: self.pike_get_size}
        for name, size in sorted(vdis.items()):
            subprocess.check_call([self.dog, 'vdi', 'create'] +
                                  common_args + [name, str(size)])
            with open(self.source, 'rb') as src:
                subprocess.check_call(
                    [self.dog, 'vdi', 'write'] + common_args +
                    [name, '0', str(size)], stdin=src)
        import importlib.util
        try:
            found = importlib.util.find_spec(FAST_MODULE) is not None
        except ImportError:
            found = False
        if not found:
            self.fast_missing = FAST_MODULE

    def cleanup(self):
        self._cleanup()

    def py27_rows(self, get, put, transfer, other):
        """The download and upload rows again on Pike's CPython 2.7."""
        names = ['pike_get_eventlet_py27', 'fastsheep_get_eventlet_py27',
                 other + '_py27', 'pike_put_eventlet_py27',
                 'fastsheep_put_eventlet_py27']
        try:
            python = self.common.pike27_python()
        except Exception as exc:  # no 2.7 here, or its venv did not build
            sys.stderr.write('bench: no Pike 2.7 venv: %s\n' % exc)
            for name in names:
                self.report.add_row(self.name, name, status='FAILED: no '
                                    'Pike 2.7 venv (%s)' % _short_error(exc))
            return
        # Pike's 2.7 download reads 1 KiB at a time (~30 MB/s): fewer
        # repeats keep the row short; ratios are MB/s.
        self.row(names[0], dict(
            get, driver='pike', mode='eventlet', name=self.pike_source,
            size=self.pike_get_size, repeats=min(self.repeats, 2),
            sha256=self.prefix_sha[self.pike_get_size]), transfer, python)
        self.row(names[1], dict(get, driver='fastsheep', mode='eventlet'),
                 transfer, python)
        self.row(names[2], dict(get, driver='fastsheep', mode='eventlet',
                                repeats=1, opts={
                                    'sheepdog_store_chunk_size':
                                    self.other_chunk}), transfer, python)
        self.row(names[3], dict(
            put, driver='pike', mode='eventlet', size=self.pike_put_size,
            sha256=self.prefix_sha[self.pike_put_size],
            repeats=1 if self.args.quick else 2), transfer, python)
        self.row(names[4], dict(
            put, driver='fastsheep', mode='eventlet', size=self.put_size,
            sha256=self.prefix_sha[self.put_size]), transfer, python)

    def knobs(self, **knobs):
        self.emu.write_knobs(self.root, ADDRESS, PORT, knobs)

    def run(self):
        size, repeats = self.size, self.repeats
        get = {'kind': 'get', 'name': SOURCE_VDI, 'size': size,
               'sha256': self.source_sha, 'repeats': repeats}
        put = {'kind': 'put', 'source': self.source,
               'repeats': self.put_repeats}

        def transfer(result):
            return {'mb_s': result['mb_s'],
                    'rss_growth_mib': result['rss_growth_mib'],
                    'size_mib': result['size'] // MIB}

        def piped(result):
            return {'mb_s': result['mb_s'], 'size_mib': size // MIB}

        # The ceiling and the default downloads are near one another, and
        # a 1 GiB transfer takes ~0.2 s here, where one slow spell of this
        # shared machine moved the ceiling by 15% between two runs: they
        # are measured in alternating rounds, side by side.
        ceiling = dict(get, kind='ceiling')
        self.interleaved_rows([
            ('ceiling', dict(ceiling, pipe_size=self.pipe_size)),
            ('fastsheep_get_eventlet', dict(get, driver='fastsheep',
                                            mode='eventlet')),
            ('fastsheep_get_threads', dict(get, driver='fastsheep',
                                           mode='threads'))],
            self.get_rounds, lambda r: (transfer(r) if 'rss_growth_mib' in r
                                        else piped(r)))
        self.row('ceiling_shell_pipe', dict(ceiling, repeats=repeats), piped)
        self.row('pike_get_eventlet', dict(
            get, driver='pike', mode='eventlet', name=self.pike_source,
            size=self.pike_get_size,
            sha256=self.prefix_sha[self.pike_get_size]), transfer)
        other = 'fastsheep_get_eventlet_chunk%d' % self.other_chunk
        self.row(other, dict(get, driver='fastsheep', mode='eventlet',
                             repeats=1, opts={
                                 'sheepdog_store_chunk_size':
                                 self.other_chunk}), transfer)
        pike_put = dict(put, size=self.pike_put_size,
                        sha256=self.prefix_sha[self.pike_put_size],
                        repeats=1 if self.args.quick else 2)
        self.row('pike_put_eventlet', dict(pike_put, driver='pike',
                                           mode='eventlet'), transfer)
        full_put = dict(put, size=self.put_size,
                        sha256=self.prefix_sha[self.put_size])
        self.interleaved_rows([
            ('fastsheep_put_eventlet', dict(full_put, driver='fastsheep',
                                            mode='eventlet')),
            ('fastsheep_put_threads', dict(full_put, driver='fastsheep',
                                           mode='threads'))],
            self.put_rounds, transfer)
        self.knobs(write_latency_ms=50)
        try:
            latency_put = dict(put, size=self.latency_size,
                               sha256=self.prefix_sha[self.latency_size],
                               driver='fastsheep', mode='eventlet')
            self.row('fastsheep_put_serial_50ms', dict(latency_put, opts={
                'sheepdog_store_chunk_size': 4,
                'sheepdog_store_write_concurrency': 1}), transfer)
            self.row('fastsheep_put_concurrent_50ms', dict(
                latency_put, opts={'sheepdog_store_chunk_size': 4}),
                transfer)
        finally:
            self.knobs()

        self.py27_rows(get, put, transfer, other)

        def stall(result):
            return dict((key, result[key]) for key in (
                'hub_max_stall_ms', 'hub_median_run_worst_ms',
                'hub_stall_no_cpu_wait_ms', 'hub_worst_cpu_ms',
                'idle_process_stall_ms',
                'runs_worst_ms',
                'get_stall_ms', 'put_stall_ms', 'get_mb_s', 'put_mb_s'))

        self.row('fastsheep_hub_stall', {
            'kind': 'stall', 'driver': 'fastsheep', 'mode': 'eventlet',
            'name': SOURCE_VDI, 'size': size, 'sha256': self.source_sha,
            'source': self.source, 'put_size': self.put_size,
            'put_sha256': self.prefix_sha[self.put_size],
            'repeats': self.stall_repeats}, stall)
        self.row('pike_hub_stall', {
            'kind': 'stall', 'driver': 'pike', 'mode': 'eventlet',
            'name': self.pike_source, 'size': self.pike_get_size,
            'sha256': self.prefix_sha[self.pike_get_size],
            'source': self.source, 'put_size': self.pike_put_size,
            'put_sha256': self.prefix_sha[self.pike_put_size],
            'repeats': 1}, stall)

        self.ratio('get_eventlet_vs_ceiling', 'fastsheep_get_eventlet',
                   'ceiling', '>=', 0.85)
        self.ratio('get_eventlet_vs_pike', 'fastsheep_get_eventlet',
                   'pike_get_eventlet', '>=', 8)
        self.ratio('get_threads_vs_ceiling', 'fastsheep_get_threads',
                   'ceiling', '>=', 0.85)
        self.ratio('put_eventlet_vs_pike', 'fastsheep_put_eventlet',
                   'pike_put_eventlet', '>=', 25)
        self.ratio('put_eventlet_vs_threads', 'fastsheep_put_eventlet',
                   'fastsheep_put_threads', '>=', 0.9)
        self.ratio('put_concurrent_vs_serial',
                   'fastsheep_put_concurrent_50ms',
                   'fastsheep_put_serial_50ms', '>=', 3)
        growth = [self.results[n]['rss_growth_mib']
                  for n in ('fastsheep_get_eventlet', other)
                  if n in self.results]
        if len(growth) == 2:
            self.report.add_ratio('get_rss_growth_mib', max(growth), '<=',
                                  16)
        else:
            self._unmeasured('get_rss_growth_mib', '<=', 16)
        self.ratio('get_eventlet_vs_pike_py27', 'fastsheep_get_eventlet_py27',
                   'pike_get_eventlet_py27', '>=', 10)
        self.ratio('put_eventlet_vs_pike_py27', 'fastsheep_put_eventlet_py27',
                   'pike_put_eventlet_py27', '>=', 25)
        growth = [self.results[n]['rss_growth_mib']
                  for n in ('fastsheep_get_eventlet_py27', other + '_py27')
                  if n in self.results]
        if len(growth) == 2:
            self.report.add_ratio('get_rss_growth_mib_py27', max(growth),
                                  '<=', 16)
        else:
            self._unmeasured('get_rss_growth_mib_py27', '<=', 16)
        self.ratio('hub_max_stall_ms', 'fastsheep_hub_stall', None, '<=',
                   20, key='hub_max_stall_ms')
        self.ratio('hub_max_stall_ms_pike', 'pike_hub_stall', None,
                   key='hub_max_stall_ms')
        # The same without the time the hub waited for a CPU (see
        # _worker_stall): on a loaded machine, what the driver itself did.
        self.ratio('hub_stall_no_cpu_wait_ms', 'fastsheep_hub_stall', None,
                   key='hub_stall_no_cpu_wait_ms')
        self.ratio('hub_stall_no_cpu_wait_ms_pike', 'pike_hub_stall', None,
                   key='hub_stall_no_cpu_wait_ms')
        # The same ticker in an idle process beside the transfers: the
        # share of the stall that is the machine's, not the hub's.
        self.ratio('idle_process_stall_ms', 'fastsheep_hub_stall', None,
                   key='idle_process_stall_ms')
        self.report.note(
            'sheepdog: %d MiB image (uploads %d MiB), %d timed repeat(s) '
            'per get row and %d per put row (median; %d alternating rounds '
            'for the ceiling and the default downloads, %d for the '
            'eventlet and threads uploads); '
            'Pike downloads %d MiB and uploads %d MiB (it runs at ~8 MB/s; '
            'ratios are MB/s); 50 ms rows upload %d MiB in 4 MiB chunks; '
            'get_rss_growth_mib is the larger of chunk_size 64 (default) '
            'and %d MiB; emulator root %s' % (
                size // MIB, self.put_size // MIB, repeats,
                self.put_repeats, self.get_rounds, self.put_rounds,
                self.pike_get_size // MIB,
                self.pike_put_size // MIB, self.latency_size // MIB,
                self.other_chunk, os.path.dirname(self.root)))
        if self.fast_missing:
            self.report.note('sheepdog: fastsheep rows FAILED: driver not '
                             'installed (%s)' % self.fast_missing)


def run(args, report, section_class=None):
    section = (section_class or _Section)(args, report)
    try:
        section.setup()
        section.run()
    finally:
        if getattr(section, '_cleanup', None):
            section.cleanup()


def _merge_rounds(merged, result):
    """One transfer row built from single-transfer worker results."""
    if merged is None:
        merged = dict(result, times_s=[])
    merged['times_s'] = merged['times_s'] + result['times_s']
    merged['mb_s'] = round(result['size'] / _median(merged['times_s']) / 1e6,
                           1)
    for key in ('rss_growth_mib', 'peak_rss_mib'):
        if result.get(key) is not None:  # a ceiling has no RSS growth
            merged[key] = max(merged.get(key) or 0, result[key])
    return merged


# -- worker side -------------------------------------------------------------

def _median(values):
    values = sorted(values)
    mid = len(values) // 2
    if len(values) % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2.0


class _Fail(Exception):
    pass


def _shim_pike(module):
    """binary=True for the Pike driver's processutils calls (see top)."""
    import types

    from oslo_concurrency import processutils

    def execute(*cmd, **kwargs):
        if 'read' in cmd:  # image bytes; `vdi list` output stays text
            kwargs['binary'] = True
        return processutils.execute(*cmd, **kwargs)

    module.processutils = types.SimpleNamespace(
        execute=execute,
        ProcessExecutionError=processutils.ProcessExecutionError)


def _iterate(iterable):
    """Iterate, treating Pike's generator-raised StopIteration as the end.

    (Python 3.7+ only: on 2.7 that StopIteration ends the loop itself.)
    """
    try:
        for chunk in iterable:
            yield chunk
    except RuntimeError as exc:
        if not isinstance(getattr(exc, '__cause__', None), StopIteration):
            raise


def _store(params):
    from glance_store import backend
    from oslo_config import cfg
    conf = cfg.ConfigOpts()
    # The generic [glance_store] options every Store needs. Not
    # glance_store.register_opts(), which would also register the options
    # of every installed driver: what glance-api does, but an integration
    # concern, not a transfer measurement.
    conf.register_opts(backend._STORE_OPTS, group='glance_store')
    if params['driver'] == 'pike':
        from glance_store._drivers import sheepdog as module
        if sys.version_info[0] >= 3:  # on 2.7 its output is bytes already
            _shim_pike(module)
        command = 'collie'
    else:
        import importlib
        module = importlib.import_module(FAST_MODULE)
        command = params['dog']
    store = module.Store(conf)
    conf(args=[], default_config_files=[], default_config_dirs=[])
    overrides = {'sheepdog_store_address': params['address'],
                 'sheepdog_store_port': params['port']}
    if params['driver'] != 'pike':
        overrides['sheepdog_store_command'] = command
    overrides.update(params.get('opts') or {})
    for key, value in overrides.items():
        conf.set_override(key, value, group='glance_store')
    store.configure(re_raise_bsc=True)
    return store, module, conf


def _location(params, module, conf, name):
    from glance_store import location
    uri = 'sheepdog://%s:%d:%s' % (params['address'], params['port'], name)
    return location.Location('sheepdog', module.StoreLocation, conf,
                             uri=uri)


def _consume(store, loc, digest=None):
    iterable, size = store.get(loc)
    count = 0
    try:
        for chunk in _iterate(iterable):
            count += len(chunk)
            if digest is not None:
                digest.update(chunk)
    finally:
        close = getattr(iterable, 'close', None)
        if close is not None:
            close()
    return count, size


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


def _monotonic():
    import time
    try:
        return time.monotonic()
    except AttributeError:  # Python 2.7 (the _py27 rows): Pike pins it
        import monotonic
        return monotonic.monotonic()


def _timed(func):
    started = _monotonic()
    value = func()
    return value, _monotonic() - started


def _worker_get(params, common):
    import hashlib
    store, module, conf = _store(params)
    loc = _location(params, module, conf, params['name'])
    baseline = common.current_rss_mib()
    # One untimed download first: the process's first-use costs (lazy
    # imports, its first threads or greenthreads, fresh memory) made the
    # first timed repeat 1.5-2x slower than the others. The RSS baseline
    # is taken before it, so its peak still counts.
    _in_mode(params, lambda: _consume(store, loc))
    times = []
    for _ in range(params['repeats']):
        (count, size), elapsed = _in_mode(
            params, lambda: _timed(lambda: _consume(store, loc)))
        if count != params['size'] or size != params['size']:
            raise _Fail('got %d bytes (size %d), expected %d'
                        % (count, size, params['size']))
        times.append(elapsed)
    digest = hashlib.sha256()
    count, size = _in_mode(params, lambda: _consume(store, loc, digest))
    if count != params['size'] or digest.hexdigest() != params['sha256']:
        raise _Fail('bytes differ from the source: %d bytes, sha256 %s, '
                    'expected %d bytes, %s' % (count, digest.hexdigest(),
                                               params['size'],
                                               params['sha256']))
    growth = max(0.0, common.peak_rss_mib() - baseline)
    return {'mb_s': round(params['size'] / _median(times) / 1e6, 1),
            'rss_growth_mib': round(growth, 1),
            'baseline_rss_mib': round(baseline, 1),
            'size': params['size'], 'times_s': [round(t, 3) for t in times]}


class _Limited(object):
    """The first `size` bytes of a file, read the way glance hands them."""

    def __init__(self, path, size):
        self._file = open(path, 'rb')
        self._left = size

    def read(self, n=-1):
        if n is None or n < 0 or n > self._left:
            n = self._left
        data = self._file.read(n)
        self._left -= len(data)
        return data

    def close(self):
        self._file.close()


def _cluster(params):
    from sheepdog_emulator import emulator as emu
    return emu.Cluster(params['root'], params['address'], params['port'])


def _stored_sha256(params, name):
    cluster = _cluster(params)
    path = cluster.data_path(name)
    size = os.path.getsize(path)
    return _sha256_prefix(path, size), size, cluster


def _put(store, params, size):
    """Upload the first `size` bytes of the source: (image id, seconds)."""
    import uuid
    image_id = str(uuid.uuid4())
    source = _Limited(params['source'], size)
    try:
        result, elapsed = _timed(lambda: store.add(image_id, source, size))
    finally:
        source.close()
    if result[1] != size:
        raise _Fail('add() reported %d bytes, expected %d'
                    % (result[1], size))
    return image_id, elapsed


def _check_and_drop(params, image_id, size, sha256):
    """Fail unless the stored VDI holds the source bytes; then delete it."""
    stored_sha, stored_size, cluster = _stored_sha256(params, image_id)
    if stored_size != size or stored_sha != sha256:
        raise _Fail('stored VDI differs from the source: %d bytes, sha256 '
                    '%s, expected %d bytes, %s' % (stored_size, stored_sha,
                                                   size, sha256))
    _drop(cluster, image_id)


def _drop(cluster, image_id):
    cluster.lock(True)
    try:
        cluster.delete(image_id)  # keep the cluster (and memory) small
    finally:
        cluster.unlock()


def _put_once(store, params, size, sha256):
    image_id, elapsed = _put(store, params, size)
    _check_and_drop(params, image_id, size, sha256)
    return elapsed


def _worker_put(params, common):
    store, module, conf = _store(params)
    baseline = common.current_rss_mib()
    # One untimed upload of the row's size first: a process's first large
    # upload paid its first-use costs (under eventlet 4.1 s against 2.0 s
    # for the next ones of 1 GiB; a 4 MiB one did not cover them), and the
    # interleaved rows time a single upload per process. The RSS baseline
    # is taken before it, so its peak still counts.
    image_id, _elapsed = _in_mode(params, lambda: _put(
        store, params, params['size']))
    _drop(_cluster(params), image_id)
    times = []
    for _ in range(params['repeats']):
        times.append(_in_mode(params, lambda: _put_once(
            store, params, params['size'], params['sha256'])))
    growth = max(0.0, common.peak_rss_mib() - baseline)
    return {'mb_s': round(params['size'] / _median(times) / 1e6, 1),
            'rss_growth_mib': round(growth, 1),
            'baseline_rss_mib': round(baseline, 1),
            'size': params['size'], 'times_s': [round(t, 3) for t in times]}


def _run_delay():
    """Seconds this OS thread has waited on a run queue (for a CPU)."""
    try:
        with open('/proc/thread-self/schedstat') as stat:
            return int(stat.read().split()[1]) / 1e9
    except (IOError, OSError, ValueError, IndexError):
        return 0.0


# A 1 ms ticker in a process of its own that does nothing else: what the
# machine's scheduler alone costs a sleeping thread while the transfers
# (the driver process and its dog children) load the CPUs. Prints
# "start lateness" per late tick, in CLOCK_MONOTONIC seconds, at EOF on
# stdin.
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


class _IdleTicker(object):
    """The control beside ``hub_max_stall_ms`` (see _IDLE_TICKER)."""

    def __init__(self):
        import subprocess
        self.proc = subprocess.Popen(
            [sys.executable, '-S', '-c', _IDLE_TICKER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def worst_within(self, windows):
        """Its worst lateness (s) in the given (start, end) windows."""
        out, _err = self.proc.communicate(b'')
        worst = 0.0
        for line in out.decode().splitlines():
            started, lateness = (float(f) for f in line.split())
            if any(lo <= started <= hi for lo, hi in windows):
                worst = max(worst, lateness)
        return worst


def _worker_stall(params, common):
    """Worst lateness of a 1 ms green ticker while the driver works.

    ``hub_max_stall_ms`` is the worst tick over every watched get+put
    (the issue's figure; one unwatched pair first pays the first-use
    costs). On a shared machine the whole process is sometimes
    descheduled for tens of ms, which the ticker sees as lateness too,
    so the row also reports ``hub_median_run_worst_ms`` (the median of
    each run's worst: a hub the driver really blocks is blocked on every
    run, preemption is not), ``hub_stall_no_cpu_wait_ms`` (the worst
    tick minus the time the hub's OS thread waited for a CPU,
    ``run_delay`` from /proc/thread-self/schedstat), the CPU the process
    used during the worst tick, and each run's worst per phase.
    """
    import time

    import eventlet
    store, module, conf = _store(params)
    loc = _location(params, module, conf, params['name'])
    put_size = params.get('put_size', params['size'])
    state = {'done': False, 'phase': 'get'}
    runs = []

    def ticker(worst):
        while not state['done']:
            started = time.monotonic()
            cpu = time.process_time()
            waited = _run_delay()
            eventlet.sleep(0.001)
            late = time.monotonic() - started - 0.001
            waited = _run_delay() - waited
            phase = state['phase']
            if late > worst[phase][0]:
                worst[phase] = (late, time.process_time() - cpu)
            worst['own'] = max(worst['own'], late - waited)

    get_times, put_times, windows = [], [], []
    idle = _IdleTicker()
    # One unwatched get+put first: first-use costs (lazy imports, hash
    # objects, the emulator's page cache) are paid once per process, not
    # per transfer.
    _consume(store, loc)
    image_id, _put_s = _put(store, params, put_size)
    _check_and_drop(params, image_id, put_size,
                    params.get('put_sha256', params['sha256']))
    for _ in range(params.get('repeats', 1)):
        worst = {'get': (0.0, 0.0), 'put': (0.0, 0.0), 'own': 0.0}
        state.update(done=False, phase='get')
        # Only the transfers run while the ticker watches: the bench's
        # own checks (hashing) come after it stops.
        thread = eventlet.spawn(ticker, worst)
        eventlet.sleep(0.01)
        watched = time.monotonic()
        (count, size), get_s = _timed(lambda: _consume(store, loc))
        state['phase'] = 'put'
        image_id, put_s = _put(store, params, put_size)
        state['done'] = True
        thread.wait()
        windows.append((watched, time.monotonic()))
        if count != params['size']:
            raise _Fail('download gave %d bytes, expected %d'
                        % (count, params['size']))
        _check_and_drop(params, image_id, put_size,
                        params.get('put_sha256', params['sha256']))
        runs.append(worst)
        get_times.append(get_s)
        put_times.append(put_s)

    def ms(value):
        return round(value * 1000, 1)

    per_run = [max(w['get'][0], w['put'][0]) for w in runs]
    overall = max((w[phase] for w in runs for phase in ('get', 'put')),
                  key=lambda pair: pair[0])
    return {'hub_max_stall_ms': ms(overall[0]),
            'idle_process_stall_ms': ms(idle.worst_within(windows)),
            'hub_median_run_worst_ms': ms(_median(per_run)),
            'hub_stall_no_cpu_wait_ms': ms(max(w['own'] for w in runs)),
            'hub_worst_cpu_ms': ms(overall[1]),
            'runs_worst_ms': [[ms(w['get'][0]), ms(w['put'][0])]
                              for w in runs],
            'get_stall_ms': ms(_median([w['get'][0] for w in runs])),
            'put_stall_ms': ms(_median([w['put'][0] for w in runs])),
            'get_mb_s': round(params['size'] / _median(get_times) / 1e6, 1),
            'put_mb_s': round(put_size / _median(put_times) / 1e6, 1)}


def _worker_ceiling(params, common):
    """``dog vdi read | dd bs=4M of=/dev/null``, by wall time.

    With ``pipe_size`` the pipe between the two is raised to that many
    bytes (``F_SETPIPE_SZ``), the size the driver asks for; a shell's
    pipe keeps the 64 KiB default, which caps every read at 64 KiB, so
    a driver with a bigger pipe would beat a shell "ceiling". Without it,
    the plain shell pipeline.
    """
    import fcntl
    import os
    import re
    import subprocess
    import time
    argv = [params['dog'], 'vdi', 'read', '-a', params['address'], '-p',
            str(params['port']), params['name'], '0', str(params['size'])]
    times = []
    # One untimed pipeline first, as the get workers make one untimed
    # download: the first `dog` of a run pays for a cold cache.
    for _ in range(params['repeats'] + 1):
        read_fd, write_fd = os.pipe()
        if params.get('pipe_size'):
            fcntl.fcntl(read_fd, getattr(fcntl, 'F_SETPIPE_SZ', 1031),
                        params['pipe_size'])
        started = time.monotonic()
        dog = subprocess.Popen(argv, stdout=write_fd,
                               stderr=subprocess.PIPE)
        dd = subprocess.Popen(['dd', 'bs=4M', 'of=/dev/null'],
                              stdin=read_fd, stderr=subprocess.PIPE)
        os.close(read_fd)
        os.close(write_fd)
        dog_err = dog.communicate()[1]
        err = dd.communicate()[1].decode('utf-8', 'replace')
        times.append(time.monotonic() - started)
        copied = re.search(r'^(\d+) bytes', err, re.M)
        if dog.returncode or dd.returncode or not copied or \
                int(copied.group(1)) != params['size']:
            raise _Fail('pipeline failed (dog exit %d: %s; dd exit %d: %s)'
                        % (dog.returncode, dog_err, dd.returncode, err))
    times = times[1:]
    return {'mb_s': round(params['size'] / _median(times) / 1e6, 1),
            'size': params['size'], 'times_s': [round(t, 3) for t in times]}


def worker_main(params):
    # eventlet must patch before anything imports threading or subprocess.
    if params.get('mode') == 'eventlet':
        import eventlet
        eventlet.monkey_patch()
    import logging
    logging.basicConfig(level=logging.WARNING)
    import common
    kind = params['kind']
    handler = {'get': _worker_get, 'put': _worker_put,
               'stall': _worker_stall, 'ceiling': _worker_ceiling}[kind]
    try:
        result = handler(params, common)
    except _Fail as exc:
        sys.stderr.write('%s %s: %s\n' % (params.get('driver', ''), kind,
                                          exc))
        return 1
    common.emit(result)
    return 0


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == 'worker':
        sys.exit(worker_main(json.loads(sys.argv[2])))
    sys.exit('usage: run through tools/bench/run.py (tox -e bench)')
