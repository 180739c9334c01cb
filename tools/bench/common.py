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
"""Shared plumbing of the benchmark sections.

Every measured row runs in a child process of its own so that its peak RSS
(``ru_maxrss`` from ``wait4``) belongs to that row alone, and so that
eventlet's monkey-patching in one row cannot leak into the next. Sections
put their rows and ratios in one ``Report``; ratios are computed from rows
measured in the same run, because this machine is too noisy for numbers
taken at different times to be compared.
"""

import json
import operator
import os
import subprocess
import sys
import time

_SUFFIXES = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
_OPS = {'>=': operator.ge, '<=': operator.le}
MIB = float(1 << 20)


def parse_size(text):
    """Parse '1G', '256M', '4096' (sheepdog CLI suffixes) into bytes."""
    text = text.strip().upper().rstrip('B') or '0'
    suffix = text[-1] if text[-1] in _SUFFIXES else ''
    number = text[:-1] if suffix else text
    return int(float(number) * _SUFFIXES[suffix])


TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def write_random_file(path, size):
    """size pseudo-random bytes (seeded, fast to make); their sha256.

    The source image of the sheepdog, readahead and services rows:
    incompressible like a real image, and the same bytes on every run.
    """
    import hashlib
    import random
    rng = random.Random(20171110)
    digest = hashlib.sha256()
    with open(path, 'wb') as dst:
        left = size
        while left:
            block = rng.randbytes(min(left, 16 << 20))
            dst.write(block)
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def pike27_python():
    """The interpreter of the bench's Pike venv: CPython 2.7, Pike's pins.

    glance_store 0.22.0, ceilometer 9.0.7 and eventlet 0.20.0, as a Pike
    cloud runs them (tools/integration/requirements/pike27-bench.txt).
    Built once and cached by the integration harness's venv cache; the
    project's own packages are put on the worker's PYTHONPATH by
    run_worker, not installed, so the tree under test is what runs.
    """
    if TOPDIR not in sys.path:
        sys.path.insert(0, TOPDIR)
    from fastpath_integration.harness import venvs
    sys.stderr.write('bench: Pike venv (CPython 2.7): %s\n'
                     % venvs.venv_path('pike27-bench'))
    return os.path.join(venvs.ensure_venv('pike27-bench'), 'bin', 'python')


def run_worker(argv, env=None, timeout=600, stdin=None, python=None):
    """Run ``python argv...`` and return (result, peak_rss_mib, wall_s).

    The worker prints one JSON object as its last stdout line. A worker
    that fails raises RuntimeError with its stderr, so a broken row is
    never reported as a number. ``python`` is another interpreter (the
    Pike 2.7 venv's); it gets the project tree on PYTHONPATH.
    """
    child_env = dict(os.environ)
    if python:
        child_env.pop('VIRTUAL_ENV', None)
        child_env['PYTHONPATH'] = os.pathsep.join(
            filter(None, [TOPDIR, child_env.get('PYTHONPATH')]))
    child_env.update(env or {})
    start = time.monotonic()
    proc = subprocess.Popen([python or sys.executable] + list(argv),
                            env=child_env,
                            stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError('worker %s timed out after %ss' % (argv, timeout))
    # communicate() already reaped the child; the rusage of the last
    # reaped child is what RUSAGE_CHILDREN cannot give per child, so the
    # worker reports its own peak (ru_maxrss of RUSAGE_SELF) instead.
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise RuntimeError('worker %s failed (exit %s):\n%s'
                           % (argv, proc.returncode,
                              err.decode('utf-8', 'replace')))
    lines = [line for line in out.decode().splitlines() if line.strip()]
    if not lines:
        raise RuntimeError('worker %s printed no result' % (argv,))
    result = json.loads(lines[-1])
    return result, result.get('peak_rss_mib'), wall


def peak_rss_mib():
    """This process's peak RSS so far, in MiB.

    VmHWM from /proc, not ru_maxrss: Linux carries ru_maxrss across
    execve, so a worker spawned (vfork/fork + exec) by a bigger parent
    would report the parent's peak as its own.
    """
    try:
        with open('/proc/self/status') as status:
            for line in status:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) / 1024.0
    except (IOError, OSError, ValueError):
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mib():
    """This process's RSS now, in MiB, from /proc (no psutil needed)."""
    with open('/proc/self/statm') as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf('SC_PAGE_SIZE') / MIB


def emit(result):
    """Worker side: print the result with this process's peak RSS."""
    result.setdefault('peak_rss_mib', round(peak_rss_mib(), 1))
    sys.stdout.write(json.dumps(result) + '\n')
    sys.stdout.flush()


class Report(object):
    """Rows, ratios and their targets of one benchmark run."""

    def __init__(self):
        self.rows = {}
        self.ratios = {}
        self.targets = {}
        self.notes = []

    def add_row(self, section, name, **metrics):
        self.rows[name] = dict(metrics, section=section)

    def add_ratio(self, name, value, op=None, bound=None):
        self.ratios[name] = value
        if op is not None:
            self.targets[name] = {'op': op, 'bound': bound,
                                  'met': bool(_OPS[op](value, bound))}

    def note(self, text):
        self.notes.append(text)

    def missed(self):
        return sorted(n for n, t in self.targets.items() if not t['met'])

    def as_dict(self, meta):
        return {'meta': meta, 'rows': self.rows, 'ratios': self.ratios,
                'targets': self.targets, 'notes': self.notes}

    def print_table(self, out=sys.stdout):
        """The readable side of the run: one table per question."""
        import tables
        out.write('\n' + tables.tables(self, 'text'))
        for text in self.notes:
            out.write('note: %s\n' % text)
        out.flush()
