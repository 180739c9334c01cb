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
"""The bench's one worker protocol: the launcher and the child side.

``run(function, params)`` starts ``python -m
fastpath_integration.bench.workers MODULE:FUNCTION``, which reads the
function's parameters as one JSON object on stdin and prints its result,
a JSON object, as the last line of stdout, with the process's peak RSS
added. Each row runs in a child of its own so that its peak RSS and its
eventlet monkey-patching (``"mode": "eventlet"`` patches before anything
else is imported) are its own. The child runs on the bench's Python 3 and
on Pike's CPython 2.7 (the pike27-bench venv, which holds none of the
project's packages: ``run`` puts the tree under test on PYTHONPATH), so
this module stays in the 2.7/3 common subset, as do the helpers below
that the workers share.
"""

import json
import os
import sys

TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
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


def run(function, params, python=None, env=None, timeout=1800, path=None):
    """function(params) in a worker child; its result.

    ``python`` is another interpreter (the Pike 2.7 venv's). The tree
    under test comes first on the child's PYTHONPATH, on either, so that
    it is what runs; ``path`` (a list of directories) comes first instead,
    for a row that runs another tree's code (the revision section's), and
    the child starts in path[0]: ``python -m`` puts its working directory
    (the bench's: this tree) ahead of PYTHONPATH. A worker that fails
    raises RuntimeError with its stderr's tail. The launcher's side:
    Python 3 only.
    """
    import subprocess  # not at the top: the child patches it first
    child_env = dict(os.environ, **(env or {}))
    if python:
        child_env.pop('VIRTUAL_ENV', None)
    child_env['PYTHONPATH'] = os.pathsep.join(
        (path or [TOPDIR]) + [p for p in [child_env.get('PYTHONPATH')] if p])
    target = '%s:%s' % (function.__module__, function.__name__)
    proc = subprocess.run(
        [python or sys.executable, '-m', 'fastpath_integration.bench.workers',
         target],
        input=json.dumps(params).encode(), env=child_env,
        cwd=path[0] if path else None,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if proc.returncode:
        raise RuntimeError('worker %s failed (exit %d):\n%s' % (
            target, proc.returncode,
            proc.stderr.decode('utf-8', 'replace')[-3000:]))
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def pike27_python():
    """CPython 2.7 of the cached pike27-bench venv, with Pike's pins."""
    from fastpath_integration.harness import venvs
    return os.path.join(venvs.ensure_venv('pike27-bench'), 'bin', 'python')


def main(target):
    params = json.load(sys.stdin)
    if params.get('mode') == 'eventlet':
        import eventlet
        eventlet.monkey_patch()
    import importlib
    module, function = target.split(':')
    result = getattr(importlib.import_module(module), function)(params)
    result.setdefault('peak_rss_mib', round(vm_hwm_mib(), 1))
    sys.stdout.write('\n' + json.dumps(result) + '\n')
    sys.stdout.flush()


if __name__ == '__main__':
    main(sys.argv[1])
