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
"""Read-ahead section: the default read-ahead against one reader.

Every emulated ``dog vdi read`` pays what a real one pays before its
first byte (sheepdog_emulator: a VDI lookup and a read of the whole
~4 MiB inode object, dog/vdi.c reading SD_INODE_SIZE), plus its own
interpreter start. Two models of the cluster behind it:

* cold: ``object_service_ms`` (default 7) per 4 MiB object in each
  ``dog`` process, as when each object costs a round trip; per-object
  latency dominates and extra readers pay.
* hot: no per-object latency (a hot page cache); the per-invocation cost
  dominates and extra readers or small windows lose, as on the real
  1-node sheepdog 1.0 cluster (N=4 over 16 MiB windows ran at 0.78 of
  N=1 there).

Rows, all fastsheep through the glance_store Store API, byte-checked
(sha256) like the sheepdog section's get rows, whose worker and cluster
set-up this section reuses: ``readahead_get_single_*`` (N=1, the plain
stream), ``readahead_get_parallel_*`` (the shipped defaults: up to N=4
readers ramped up while they pay, 64 MiB windows), ``readahead_get_w16_*``
(the defaults over 16 MiB windows), and, hot only, ``readahead_get_
fixed4_w16_hot`` / ``_w64_hot``: all four readers from the start (the
read-ahead the real-cluster table measured), the emulator's model check.
The hot rows run in alternating rounds, since their ratios are near 1.

Ratios: ``get_parallel_vs_single`` (cold, eventlet; >= 2.5),
``get_parallel_vs_single_threads`` (cold; >= 2.5),
``get_parallel_vs_single_hot`` (eventlet; >= 0.95),
``get_fixed4_w16_vs_single_hot`` (<= 1.0: the model shows the real
loss), ``get_w16_vs_default`` / ``_hot`` and
``get_fixed4_w64_vs_single_hot`` (reported),
``get_parallel_rss_growth_mib`` and ``_threads`` (each <= N x W + 16).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sheepdog_bench  # noqa: E402

SECTION = 'readahead'
MIB = 1 << 20


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


def _pin_all_readers():
    """Every configured reader from the start: the fixed-N read-ahead."""
    from glance_store_fastsheep import readahead

    class AllReaders(readahead.ReaderRamp):
        def __init__(self, maximum, clock=None):
            super(AllReaders, self).__init__(maximum)
            self.level = maximum
            self.settled = True

    readahead.ReaderRamp = AllReaders


class _Section(sheepdog_bench._Section):

    name = SECTION

    def _run(self, name, params, python=None):
        if not params.get('all_readers'):
            return super(_Section, self)._run(name, params, python)
        # The sheepdog worker, started through this module so that it
        # pins the ramp first (see __main__ below).
        params = dict(params, root=self.root, dog=self.dog,
                      address=sheepdog_bench.ADDRESS,
                      port=sheepdog_bench.PORT)
        argv = [os.path.abspath(__file__), 'worker', json.dumps(params)]
        try:
            return self.common.run_worker(argv, env=self.env, timeout=900)
        except RuntimeError as exc:
            sys.stderr.write('bench: readahead row %s failed:\n%s\n'
                             % (name, exc))
            self.report.add_row(self.name, name, status='FAILED: %s'
                                % sheepdog_bench._short_error(exc))
            return None

    def run(self):
        from glance_store_fastsheep import opts as fast_opts
        args = self.args
        n = args.readahead_n or fast_opts.DEFAULT_READ_CONCURRENCY
        window = args.readahead_window_mib or fast_opts.DEFAULT_READ_WINDOW
        get = {'kind': 'get', 'driver': 'fastsheep',
               'name': sheepdog_bench.SOURCE_VDI, 'size': self.size,
               'sha256': self.source_sha,
               'repeats': 1 if args.quick else self.repeats}
        single = {'sheepdog_store_read_concurrency': 1}
        parallel = {'sheepdog_store_read_concurrency': n,
                    'sheepdog_store_read_window': window}
        w16 = dict(parallel, sheepdog_store_read_window=16)
        w64 = dict(parallel, sheepdog_store_read_window=64)

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
            self.row('readahead_get_w16_eventlet',
                     dict(get, mode='eventlet', opts=w16), transfer)
        finally:
            self.knobs()
        hot = dict(get, mode='eventlet')
        self.interleaved_rows([
            ('readahead_get_single_hot', dict(hot, opts=single)),
            ('readahead_get_parallel_hot', dict(hot, opts=parallel)),
            ('readahead_get_w16_hot', dict(hot, opts=w16)),
            ('readahead_get_fixed4_w16_hot',
             dict(hot, opts=dict(w16, sheepdog_store_read_concurrency=4),
                  all_readers=True)),
            ('readahead_get_fixed4_w64_hot',
             dict(hot, opts=dict(w64, sheepdog_store_read_concurrency=4),
                  all_readers=True))],
            2 if args.quick else self.repeats, transfer)
        self.ratio('get_parallel_vs_single', 'readahead_get_parallel_eventlet',
                   'readahead_get_single_eventlet', '>=', 2.5)
        self.ratio('get_parallel_vs_single_threads',
                   'readahead_get_parallel_threads',
                   'readahead_get_single_threads', '>=', 2.5)
        self.ratio('get_parallel_vs_single_hot', 'readahead_get_parallel_hot',
                   'readahead_get_single_hot', '>=', 0.95)
        self.ratio('get_fixed4_w16_vs_single_hot',
                   'readahead_get_fixed4_w16_hot', 'readahead_get_single_hot',
                   '<=', 1.0)
        self.ratio('get_fixed4_w64_vs_single_hot',
                   'readahead_get_fixed4_w64_hot', 'readahead_get_single_hot')
        self.ratio('get_w16_vs_default', 'readahead_get_w16_eventlet',
                   'readahead_get_parallel_eventlet')
        self.ratio('get_w16_vs_default_hot', 'readahead_get_w16_hot',
                   'readahead_get_parallel_hot')
        # The memory bound holds in both modes, so both are checked.
        self.ratio('get_parallel_rss_growth_mib',
                   'readahead_get_parallel_eventlet', None, '<=',
                   n * window + 16, key='rss_growth_mib')
        self.ratio('get_parallel_rss_growth_mib_threads',
                   'readahead_get_parallel_threads', None, '<=',
                   n * window + 16, key='rss_growth_mib')
        self.report.note(
            'readahead: %d MiB image; cold: %g ms per 4 MiB object in each '
            'dog process; hot: none; every dog call pays a lookup and an '
            'inode read; default N=%d readers (ramped) over %d MiB windows '
            'against N=1' % (self.size // MIB, args.readahead_object_ms, n,
                             window))


def run(args, report):
    sheepdog_bench.run(args, report, _Section)


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == 'worker':
        params = json.loads(sys.argv[2])
        if params.get('mode') == 'eventlet':
            import eventlet
            eventlet.monkey_patch()
        _pin_all_readers()
        sys.exit(sheepdog_bench.worker_main(params))
    sys.exit('usage: run through tools/bench/run.py (tox -e bench)')
