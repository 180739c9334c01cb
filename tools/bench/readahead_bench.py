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
"""Read-ahead section: N parallel object-aligned reads against one.

The real ``dog`` waits for each 4 MiB object before it asks for the next;
the emulator reproduces that with ``object_service_ms`` (default 7 ms per
object, what a local sheepdog 1.0 cluster costs on this kind of machine),
so the overlap shows on any machine. Rows, all fastsheep through the
glance_store Store API, all byte-checked (sha256) like the sheepdog
section's get rows, whose worker and cluster set-up this section reuses:

* ``readahead_get_single_eventlet`` / ``_threads``:
  ``sheepdog_store_read_concurrency = 1``, the plain stream.
* ``readahead_get_parallel_eventlet`` / ``_threads``: N readers (default
  4) over windows of W MiB (default 64: each window starts one emulator
  process, a Python interpreter at ~20 ms of CPU, where the real ``dog``
  takes a few ms, so on a 2-core machine the bench needs fewer, larger
  windows than a cluster does; with 32 MiB windows the starts alone
  cost ~0.8 s of CPU per GiB here).

Ratios: ``get_parallel_vs_single`` (eventlet; target >= 2.5),
``get_parallel_vs_single_threads`` (>= 2.5) and
``get_parallel_rss_growth_mib`` and ``_threads`` (each <= N x W + 16).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sheepdog_bench  # noqa: E402

SECTION = 'readahead'
MIB = 1 << 20


def add_arguments(parser):
    group = parser.add_argument_group('readahead section')
    group.add_argument('--readahead-n', type=int, default=4,
                       help='read concurrency of the parallel rows '
                            '(default 4)')
    group.add_argument('--readahead-window-mib', type=int, default=64,
                       help='read-ahead window in MiB (default 64)')
    group.add_argument('--readahead-object-ms', type=float, default=7.0,
                       help='emulated service time per 4 MiB object in '
                            'one dog process (default 7)')


class _Section(sheepdog_bench._Section):

    name = SECTION

    def run(self):
        args = self.args
        n, window = args.readahead_n, args.readahead_window_mib
        get = {'kind': 'get', 'driver': 'fastsheep',
               'name': sheepdog_bench.SOURCE_VDI, 'size': self.size,
               'sha256': self.source_sha,
               'repeats': 1 if args.quick else self.repeats}
        single = {'sheepdog_store_read_concurrency': 1}
        parallel = {'sheepdog_store_read_concurrency': n,
                    'sheepdog_store_read_window': window}

        def transfer(result):
            return {'mb_s': result['mb_s'],
                    'rss_growth_mib': result['rss_growth_mib'],
                    'size_mib': result['size'] // MIB}

        self.knobs(object_service_ms=args.readahead_object_ms)
        try:
            for mode in ('eventlet', 'threads'):
                self.row('readahead_get_single_%s' % mode,
                         dict(get, mode=mode, opts=single), transfer)
                self.row('readahead_get_parallel_%s' % mode,
                         dict(get, mode=mode, opts=parallel), transfer)
        finally:
            self.knobs()
        self.ratio('get_parallel_vs_single', 'readahead_get_parallel_eventlet',
                   'readahead_get_single_eventlet', '>=', 2.5)
        self.ratio('get_parallel_vs_single_threads',
                   'readahead_get_parallel_threads',
                   'readahead_get_single_threads', '>=', 2.5)
        # The memory bound holds in both modes, so both are checked.
        self.ratio('get_parallel_rss_growth_mib',
                   'readahead_get_parallel_eventlet', None, '<=',
                   n * window + 16, key='rss_growth_mib')
        self.ratio('get_parallel_rss_growth_mib_threads',
                   'readahead_get_parallel_threads', None, '<=',
                   n * window + 16, key='rss_growth_mib')
        self.report.note(
            'readahead: %d MiB image, %g ms per 4 MiB object in each dog '
            'process, N=%d readers over %d MiB windows against N=1'
            % (self.size // MIB, args.readahead_object_ms, n, window))


def run(args, report):
    sheepdog_bench.run(args, report, _Section)
