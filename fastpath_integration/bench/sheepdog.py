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
described in doc/source/bench-sheepdog.rst. The workers (``transfers``)
also run on Pike's CPython 2.7 (the ``_py27`` rows).
"""

import os

from fastpath_integration.bench import clusters
from fastpath_integration.bench import runner
from fastpath_integration.bench import transfers
from fastpath_integration.bench import workers

MIB = clusters.MIB
PIKE27 = ', eventlet 0.20, 2.7'

DOWNLOAD = runner.Table(
    'Download through the store driver', 'get() of one image on the '
    'emulator, consumed whole and checked by sha256; median of the timed '
    'repeats; vs: MB/s over Pike\'s.', runner.THROUGHPUT, 'mb_s',
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

UPLOAD = runner.Table(
    'Upload through the store driver', 'add() of one image on the '
    'emulator, stored bytes checked by sha256; the 50 ms rows add 50 ms per '
    'dog write call; vs: MB/s over Pike\'s (50 ms rows: concurrent over '
    'serial).', runner.THROUGHPUT, 'mb_s', chart='upload_mb_s')
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

HUB = runner.Table(
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
    runner.ratio('get_eventlet_vs_ceiling', FAST_GET, CEILING, op='>=',
                 bound=0.85),
    runner.ratio('get_eventlet_vs_pike', FAST_GET, PIKE_GET, op='>=', bound=8),
    runner.ratio('get_threads_vs_ceiling', FAST_GET_THREADS, CEILING,
                 op='>=', bound=0.85),
    runner.ratio('put_eventlet_vs_pike', FAST_PUT, PIKE_PUT, op='>=',
                 bound=25),
    runner.ratio('put_eventlet_vs_threads', FAST_PUT, FAST_PUT_THREADS,
                 op='>=', bound=0.9),
    runner.ratio('put_concurrent_vs_serial', PUT_CONCURRENT, PUT_SERIAL,
                 op='>=', bound=3),
    runner.ratio('get_rss_growth_mib', _largest_growth(FAST_GET,
                                                       FAST_GET_CHUNK),
                 op='<=', bound=16),
    runner.ratio('get_eventlet_vs_pike_py27', FAST_GET_27, PIKE_GET_27,
                 op='>=', bound=10),
    runner.ratio('put_eventlet_vs_pike_py27', FAST_PUT_27, PIKE_PUT_27,
                 op='>=', bound=25),
    runner.ratio('get_rss_growth_mib_py27', _largest_growth(
        FAST_GET_27, FAST_GET_CHUNK_27), op='<=', bound=16),
    runner.ratio('hub_max_stall_ms', FAST_STALL, key='hub_max_stall_ms',
                 op='<=', bound=20),
    runner.ratio('hub_max_stall_ms_pike', PIKE_STALL, key='hub_max_stall_ms'),
    # Without the time the hub waited for a CPU: what the driver itself did.
    runner.ratio('hub_stall_no_cpu_wait_ms', FAST_STALL,
                 key='hub_stall_no_cpu_wait_ms'),
    runner.ratio('hub_stall_no_cpu_wait_ms_pike', PIKE_STALL,
                 key='hub_stall_no_cpu_wait_ms'),
    # The same ticker in an idle process: the machine's share.
    runner.ratio('idle_process_stall_ms', FAST_STALL,
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


def run(args, report):
    with clusters.Emulated(args, clusters.image_size(args)) as cluster:
        _run(args, report, cluster)


def _run(args, report, cluster):
    from glance_store_fastsheep import opts
    size, quick, sha256 = cluster.source.size, args.quick, \
        cluster.source.sha256
    parse = runner.parse_size

    def measure(row, params, python=None):
        report.measure(row, transfers.work, params, python, cluster.env)
    repeats = args.sheepdog_repeats or 5
    put_repeats = args.sheepdog_repeats or (2 if quick else 3)
    pike_get = min(size, 64 * MIB) if quick else size
    pike_put = min(size, parse(args.sheepdog_pike_put_size or
                               ('4M' if quick else '64M')))
    latency = min(size, parse(args.sheepdog_latency_size or
                              ('32M' if quick else '128M')))
    put_size = min(size, 128 * MIB) if quick else size
    report.vars['chunk'] = args.sheepdog_other_chunk_mib
    get = cluster.get(repeats=repeats)
    pike = dict(get, driver='pike', **(cluster.vdi('source-pike', pike_get)
                                       if pike_get != size else {}))
    chunk = dict(get, repeats=1, opts={
        'sheepdog_store_chunk_size': args.sheepdog_other_chunk_mib})
    put = dict(get, kind='put', size=put_size,
               sha256=sha256(put_size), repeats=put_repeats)
    pike_put = dict(put, driver='pike', size=pike_put, repeats=1 if quick
                    else 2, sha256=sha256(pike_put))
    target = transfers.work
    # The ceiling and the default downloads are near one another, and a
    # 1 GiB download takes ~0.2 s: alternating rounds, side by side.
    ceiling = dict(get, kind='ceiling', mode=None)
    report.interleave([
        (CEILING, dict(ceiling, pipe_size=opts.DEFAULT_PIPE_SIZE)),
        (FAST_GET, get), (FAST_GET_THREADS, dict(get, mode='threads'))],
        target, max(repeats, 4), cluster.env)
    measure(SHELL_PIPE, ceiling)
    measure(PIKE_GET, pike)
    measure(FAST_GET_CHUNK, chunk)
    measure(PIKE_PUT, pike_put)
    report.interleave([(FAST_PUT, put), (FAST_PUT_THREADS,
                                         dict(put, mode='threads'))],
                      target, put_repeats + 2, cluster.env)
    cluster.knobs(write_latency_ms=50)
    try:
        latency = dict(put, size=latency, sha256=sha256(latency))
        measure(PUT_SERIAL, dict(latency, opts={
            'sheepdog_store_chunk_size': 4,
            'sheepdog_store_write_concurrency': 1}))
        measure(PUT_CONCURRENT, dict(latency, opts={
            'sheepdog_store_chunk_size': 4}))
    finally:
        cluster.knobs()
    try:
        python = workers.pike27_python()
    except Exception as exc:  # no 2.7 here, or its venv did not build
        python = exc
    # Pike's 2.7 download reads 1 KiB at a time (~30 MB/s): fewer repeats.
    for row, params in ((PIKE_GET_27, dict(pike, repeats=min(repeats, 2))),
                        (FAST_GET_27, get), (FAST_GET_CHUNK_27, chunk),
                        (PIKE_PUT_27, pike_put), (FAST_PUT_27, put)):
        if isinstance(python, Exception):
            report.failed(row, 'no Pike 2.7 venv: %s' % python)
        else:
            measure(row, params, python)
    stall = dict(get, kind='stall', repeats=min(repeats, 3),
                 put_size=put['size'], put_sha256=put['sha256'])
    measure(FAST_STALL, stall)
    measure(PIKE_STALL, dict(
        stall, driver='pike', name=pike['name'], size=pike_get, repeats=1,
        sha256=pike['sha256'], put_size=pike_put['size'],
        put_sha256=pike_put['sha256']))
    report.note(
        'sheepdog: %d MiB image (uploads %d MiB), %d timed repeat(s) per get '
        'row and %d per put row; Pike downloads %d MiB and uploads %d MiB; '
        '50 ms rows upload %d MiB in 4 MiB chunks; emulator root %s'
        % (size // MIB, put_size // MIB, repeats, put_repeats,
           pike_get // MIB, pike_put['size'] // MIB, latency['size'] // MIB,
           os.path.dirname(cluster.root)))
