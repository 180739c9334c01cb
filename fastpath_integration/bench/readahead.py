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
"""The default read-ahead against one reader, on the emulator's cold
(per-object latency) and hot (per-invocation cost) models; see
doc/source/bench-sheepdog.rst. Its workers are the sheepdog section's
(``transfers``).
"""

from fastpath_integration.bench import clusters
from fastpath_integration.bench import runner
from fastpath_integration.bench import transfers

COLD = runner.Table(
    'Read-ahead where objects are slow', 'get() on the emulator\'s cold '
    'model (a per-object latency in each dog process): one reader against '
    'the default (readers ramp up to N while one more pays) and 16 MiB '
    'windows; vs: MB/s over N=1.', runner.THROUGHPUT, 'mb_s')
SINGLE = COLD.row('readahead_get_single_eventlet', 'N=1, eventlet')
PARALLEL = COLD.row('readahead_get_parallel_eventlet', 'default, eventlet',
                    SINGLE)
W16 = COLD.row('readahead_get_w16_eventlet', '16 MiB windows, eventlet',
               SINGLE)
SINGLE_THREADS = COLD.row('readahead_get_single_threads',
                          'N=1, native threads')
PARALLEL_THREADS = COLD.row('readahead_get_parallel_threads',
                            'default, native threads', SINGLE_THREADS)
HOT = runner.Table(
    'Read-ahead on a hot cache', 'get() on the emulator\'s hot model (each '
    'dog invocation pays a lookup and a 4 MiB inode read, as dog/vdi.c '
    'does): one reader against the default, 16 MiB windows, and four '
    'readers from the start (no ramp); vs: MB/s over N=1.',
    runner.THROUGHPUT, 'mb_s')
SINGLE_HOT = HOT.row('readahead_get_single_hot', 'N=1')
PARALLEL_HOT = HOT.row('readahead_get_parallel_hot', 'default', SINGLE_HOT)
W16_HOT = HOT.row('readahead_get_w16_hot', '16 MiB windows', SINGLE_HOT)
FIXED4_W16_HOT = HOT.row('readahead_get_fixed4_w16_hot',
                         'N=4 from the start, 16 MiB windows', SINGLE_HOT)
FIXED4_W64_HOT = HOT.row('readahead_get_fixed4_w64_hot',
                         'N=4 from the start, 64 MiB windows', SINGLE_HOT)


def _memory_bound(args):
    """N readers of W MiB windows, plus the plain stream's 16 MiB."""
    from glance_store_fastsheep import opts
    return (args.readahead_n or opts.DEFAULT_READ_CONCURRENCY) * \
        (args.readahead_window_mib or opts.DEFAULT_READ_WINDOW) + 16


RATIOS = (
    runner.ratio('get_parallel_vs_single', PARALLEL, SINGLE, op='>=',
                 bound=2.5),
    runner.ratio('get_parallel_vs_single_threads', PARALLEL_THREADS,
                 SINGLE_THREADS, op='>=', bound=2.5),
    runner.ratio('get_parallel_vs_single_hot', PARALLEL_HOT, SINGLE_HOT,
                 op='>=', bound=0.95),
    # The model's check: on a hot cache, four readers over small
    # windows lose to one, as on a real cluster (hence the ramp).
    runner.ratio('get_fixed4_w16_vs_single_hot', FIXED4_W16_HOT, SINGLE_HOT,
                 op='<=', bound=1.0),
    runner.ratio('get_fixed4_w64_vs_single_hot', FIXED4_W64_HOT, SINGLE_HOT),
    runner.ratio('get_w16_vs_default', W16, PARALLEL),
    runner.ratio('get_w16_vs_default_hot', W16_HOT, PARALLEL_HOT),
    runner.ratio('get_parallel_rss_growth_mib', PARALLEL,
                 key='rss_growth_mib', op='<=', bound=_memory_bound),
    runner.ratio('get_parallel_rss_growth_mib_threads', PARALLEL_THREADS,
                 key='rss_growth_mib', op='<=', bound=_memory_bound),
)


def add_arguments(parser):
    group = parser.add_argument_group('readahead section')
    group.add_argument('--readahead-n', type=int, default=None,
                       help='read concurrency of the parallel rows '
                            '(default: the option\'s default)')
    group.add_argument('--readahead-window-mib', type=int, default=None,
                       help='read-ahead window in MiB (default: the '
                            'option\'s default)')
    group.add_argument('--readahead-object-ms', type=float, default=7.0,
                       help='cold model: emulated service time per 4 MiB '
                            'object in one dog process (default 7)')


def run(args, report):
    with clusters.Emulated(args, clusters.image_size(args)) as cluster:
        _run(args, report, cluster)


def _run(args, report, cluster):
    target = transfers.work
    get = cluster.get(repeats=1 if args.quick else args.sheepdog_repeats or
                      5)
    single = dict(get, opts={'sheepdog_store_read_concurrency': 1})
    parallel = dict(get, opts={})
    if args.readahead_n:
        parallel['opts']['sheepdog_store_read_concurrency'] = args.readahead_n
    if args.readahead_window_mib:
        parallel['opts']['sheepdog_store_read_window'] = \
            args.readahead_window_mib
    w16 = dict(get, opts=dict(parallel['opts'],
                              sheepdog_store_read_window=16))
    # readahead.pieces' make_ramp argument: all four readers from the start.
    fixed4 = dict(get, all_readers=True,
                  opts={'sheepdog_store_read_concurrency': 4})
    fixed4_w16 = dict(fixed4, opts=dict(fixed4['opts'],
                                        sheepdog_store_read_window=16))
    fixed4_w64 = dict(fixed4, opts=dict(fixed4['opts'],
                                        sheepdog_store_read_window=64))
    cluster.knobs(object_service_ms=args.readahead_object_ms)
    try:
        for row, params in ((SINGLE, single), (PARALLEL, parallel),
                            (SINGLE_THREADS, dict(single, mode='threads')),
                            (PARALLEL_THREADS, dict(parallel,
                                                    mode='threads')),
                            (W16, w16)):
            report.measure(row, target, params, env=cluster.env)
    finally:
        cluster.knobs()
    report.interleave([(SINGLE_HOT, single), (PARALLEL_HOT, parallel),
                       (W16_HOT, w16), (FIXED4_W16_HOT, fixed4_w16),
                       (FIXED4_W64_HOT, fixed4_w64)], target,
                      2 if args.quick else args.sheepdog_repeats or 5,
                      cluster.env)
    report.note('readahead: %d MiB image; cold: %g ms per 4 MiB object in '
                'each dog process; hot: none; the default read-ahead '
                '(bound %d MiB) and, hot, four readers from the start '
                'against N=1' % (
                    cluster.source.size // clusters.MIB,
                    args.readahead_object_ms, _memory_bound(args)))
