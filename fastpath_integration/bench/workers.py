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
"""The child side of the bench's one worker protocol.

``python worker.py MODULE:FUNCTION`` reads the function's parameters as
one JSON object on stdin and prints its result, a JSON object, as the last
line of stdout, with the process's peak RSS added. Each row runs in a
child of its own so that its peak RSS and its eventlet monkey-patching
(``"mode": "eventlet"`` patches before anything else is imported) are its
own. It runs on the bench's Python 3 and on Pike's CPython 2.7, so this
module stays in the 2.7/3 common subset, as do the helpers below that the
workers share.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOPDIR = os.path.dirname(os.path.dirname(HERE))
MIB = float(1 << 20)


def vm_hwm_mib(pid='self', field='VmHWM'):
    """Peak RSS (VmHWM) of a process, in MiB; or another field's MiB.

    Not ru_maxrss: Linux carries ru_maxrss across execve, so a worker
    spawned by a bigger parent would report the parent's peak as its own.
    ``field='VmRSS'`` gives the RSS now.
    """
    with open('/proc/%s/status' % pid) as status:
        for line in status:
            if line.startswith(field + ':'):
                return int(line.split()[1]) / 1024.0
    return 0.0


def current_rss_mib():
    with open('/proc/self/statm') as statm:
        return int(statm.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / MIB


def cpu_seconds(pids=()):
    """CPU seconds (user + system) used so far.

    With no pids: this process and the children it has reaped (a
    transfer's ``dog`` and ``dd``). With pids: those processes (a
    cluster's sheep), from /proc/PID/stat; a pid that has gone counts 0.
    """
    if not pids:
        times = os.times()
        return sum(times[:4])
    from fastpath_integration.harness import host
    return host.cpu_seconds(pids)


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else \
        (values[mid - 1] + values[mid]) / 2.0


def drop_caches():
    """Write dirty pages back and drop the page cache (root only)."""
    import subprocess
    subprocess.check_call(['sync'])
    with open('/proc/sys/vm/drop_caches', 'w') as control:
        control.write('3\n')


def monotonic():
    import time
    try:
        return time.monotonic()
    except AttributeError:  # CPython 2.7: Pike pins the monotonic package
        import monotonic as clock
        return clock.monotonic()


def main(target):
    params = json.load(sys.stdin)
    if params.get('mode') == 'eventlet':
        import eventlet
        eventlet.monkey_patch()
    for path in (TOPDIR, HERE):
        if path not in sys.path:
            sys.path.insert(0, path)
    import importlib
    module, function = target.split(':')
    result = getattr(importlib.import_module(module), function)(params)
    result.setdefault('peak_rss_mib', round(vm_hwm_mib(), 1))
    sys.stdout.write('\n' + json.dumps(result) + '\n')
    sys.stdout.flush()


if __name__ == '__main__':
    main(sys.argv[1])
