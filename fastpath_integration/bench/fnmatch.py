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
"""oslo.utils 3.28.4's fallback fnmatch, unpatched and patched.

On Python 2.7.8 and older ``oslo_utils.fnmatch`` compiles patterns itself
and clears its 100-entry cache when full, so cycling through 101 patterns
costs far more per call than through 100. The module is loaded from the
sha256-verified sdist, as released and with ``patches/oslo.utils``
applied, on its fallback path (see ``load_fallback``); the metriccache
section loads it the same way.
"""

import os
import sys

from fastpath_integration.bench import runner
from fastpath_integration.bench import workers

# The bound the patch sets; past it a cyclic scan misses on every call
# under any LRU, which the informational 257-vs-256 row shows.
SIZES = (100, 101, 256, 257)
TABLE = runner.Table(
    'oslo.utils fallback fnmatch cache', 'Per-call time cycling through N '
    'distinct patterns, oslo.utils 3.28.4 fallback path, unpatched and with '
    'the LRU patch.', (('us per call', 'us_per_call'),))
ROWS = dict(((variant, size), TABLE.row(
    'oslo_fnmatch_%s_%d' % (variant, size), '%s, %d patterns'
    % (variant, size))) for variant in ('unpatched', 'patched')
    for size in SIZES)
RATIOS = (
    runner.ratio('oslo_fnmatch_101_vs_100', ROWS['patched', 101],
                 ROWS['patched', 100], 'us_per_call', '<=', 1.5),
    runner.ratio('oslo_fnmatch_101_vs_100_unpatched', ROWS['unpatched', 101],
                 ROWS['unpatched', 100], 'us_per_call'),
    runner.ratio('oslo_fnmatch_257_vs_256_patched', ROWS['patched', 257],
                 ROWS['patched', 256], 'us_per_call'),
)


def fallback_sources(workdir):
    """oslo_utils/fnmatch.py of the verified sdist, unpatched and patched.

    The sdist is kept in PIKE_SDISTS (tox sets it), else .tox/pike-sdists,
    by tools/fetch-pike-sdists.sh, which checks its sha256.
    """
    import subprocess
    import tarfile
    cache = os.environ.get('PIKE_SDISTS') or os.path.join(
        workers.TOPDIR, '.tox', 'pike-sdists')
    subprocess.check_call(['bash', os.path.join(
        workers.TOPDIR, 'tools', 'fetch-pike-sdists.sh'), cache],
        stdout=sys.stderr, env=dict(os.environ, PYTHON=sys.executable))
    series = os.path.join(workers.TOPDIR, 'patches', 'oslo.utils')
    paths = {}
    for variant in ('unpatched', 'patched'):
        with tarfile.open(os.path.join(cache, 'oslo.utils-3.28.4.tar.gz')) \
                as tar:
            tar.extractall(os.path.join(workdir, variant), filter='data')
        tree = os.path.join(workdir, variant, 'oslo.utils-3.28.4')
        with open(os.path.join(series, 'series')) as names:
            for name in names if variant == 'patched' else ():
                name = name.split('#')[0].strip()
                if name:
                    with open(os.path.join(series, name)) as patch:
                        subprocess.check_call(
                            ['patch', '-p1', '--fuzz=0', '--batch',
                             '--quiet'], stdin=patch, cwd=tree)
        paths[variant] = os.path.join(tree, 'oslo_utils', 'fnmatch.py')
    return paths


def load_fallback(path):
    """The fnmatch.py at path as loaded on Python 2.7.5 (CentOS 7).

    The file picks its own implementation unless sys.version_info >
    (2, 7, 9); it is executed unchanged while sys says 2.7.5, as
    oslo.utils' own test does.
    """
    import types
    module = types.ModuleType('oslo_utils_fnmatch_3_28_4')
    real, sys.version_info = sys.version_info, (2, 7, 5, 'final', 0)
    try:
        with open(path) as source:
            exec(compile(source.read(), path, 'exec'), module.__dict__)
    finally:
        sys.version_info = real
    if not hasattr(module, '_MATCH_CACHE'):
        raise RuntimeError('%s did not take its fallback path' % path)
    return module


def cycle(params):
    """Best time per call of ten rounds over each size's patterns."""
    import timeit
    fnmatch = load_fallback(params['path']).fnmatch
    timers = dict((size, timeit.Timer(lambda size=size: [
        fnmatch('test', str(i)) for _ in range(10) for i in range(size)]))
        for size in SIZES)
    best = dict((size, float('inf')) for size in SIZES)
    for _ in range(params['repeats']):
        for size in SIZES:  # alternate, so drift hits every size alike
            # The untimed pass first: this size's steady state, not the
            # cache the previous size left behind, is what is timed.
            best[size] = min(best[size], timers[size].repeat(2, 1)[1])
    return dict(('us_per_call_%d' % size, best[size] * 1e6 / (10 * size))
                for size in SIZES)


def run(args, report):
    import shutil
    import tempfile
    workdir = tempfile.mkdtemp(prefix='fnmatch-bench-')
    try:
        for variant, path in sorted(fallback_sources(workdir).items()):
            try:
                result = workers.run(cycle, {
                    'path': path, 'repeats': 3 if args.quick else 15})
            except RuntimeError as exc:
                result = exc
            for size in SIZES:
                if isinstance(result, Exception):
                    report.failed(ROWS[variant, size], result)
                else:
                    report.add(ROWS[variant, size], us_per_call=round(
                        result['us_per_call_%d' % size], 4))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report.note('oslo_fnmatch: fallback path of oslo.utils 3.28.4 forced on '
                'Python %s; 257 vs 256 shows the patched LRU at its own '
                'bound (a cyclic scan past any LRU bound misses every '
                'call).' % sys.version.split()[0])
