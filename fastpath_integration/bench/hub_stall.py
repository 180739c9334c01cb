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
"""The stall row: how late a green ticker runs while the driver works.

A driver that blocks eventlet's hub (a read or a hash on the hub's own
thread) stalls every other greenthread of glance-api; a 1 ms ticker
beside a download and an upload shows for how long. What the figures
mean and how the machine's own scheduling delay is told apart:
doc/source/bench-sheepdog.rst. ``transfers.work`` runs it as the
``stall`` kind. The row itself needs Python 3 (``time.monotonic``);
the module's top level stays in the 2.7/3 common subset, as the 2.7
workers import it with ``transfers``.
"""

import subprocess
import sys

from fastpath_integration.bench import store_driver
from fastpath_integration.bench import workers


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


def stall_row(params):
    """Worst lateness of a 1 ms green ticker while the driver works.

    Beside the worst tick: the median of each run's worst (a hub the
    driver blocks is blocked on every run, preemption is not), the worst
    minus the time the hub's OS thread waited for a CPU, the CPU used
    during the worst tick, and the idle process's worst in the same
    windows (see doc/source/bench-sheepdog.rst).
    """
    import time

    import eventlet
    store, loc = store_driver.store(params)
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
    store_driver.consume(store, loc)  # first-use costs, unwatched
    store_driver.check_and_drop(
        params, store_driver.put(store, params, put_size)[0], put_size,
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
        count, get_s = store_driver.timed(
            lambda: store_driver.consume(store, loc))
        state['phase'] = 'put'
        image_id, put_s, _cpu = store_driver.put(store, params, put_size)
        state['done'] = True
        thread.wait()
        windows.append((watched, time.monotonic()))
        if count != params['size']:
            raise AssertionError('download gave %d bytes' % count)
        store_driver.check_and_drop(params, image_id, put_size, put_sha)
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
