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
costs far more per call than cycling through 100. This section loads
``oslo_utils/fnmatch.py`` from the sha256-verified sdist, as released and
with ``patches/oslo.utils`` applied (``patch -p1 --fuzz=0``), forces its
fallback path (``sys.version_info`` set to 2.7.0 while it is imported, as
oslo.utils' own test does) and times ``fnmatch('test', str(i))`` over
``n`` distinct patterns, ten rounds, per call. Both variants run in child
processes of this one run, alternating sizes, so the ratios compare like
with like. On 3.11 a cache miss still hits ``re``'s own cache, so the
absolute gap is smaller than on 2.7.5, where a miss is a full compile.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SDIST = 'oslo.utils-3.28.4'
MODULE = os.path.join('oslo_utils', 'fnmatch.py')
SERIES = os.path.join(ROOT, 'patches', 'oslo.utils')
# The bound the patch sets; past it a cyclic scan misses on every call
# under any LRU, which the informational 257-vs-256 row shows.
PATCHED_CACHE_MAX = 256


def _sdist_cache():
    return os.environ.get('PIKE_SDISTS') or os.path.join(
        ROOT, '.tox', 'pike-sdists')


def _prepare(workdir):
    """Unpack the verified sdist twice; patch one copy. Return both paths."""
    cache = _sdist_cache()
    subprocess.check_call(['bash', os.path.join(ROOT, 'tools',
                                                'fetch-pike-sdists.sh'),
                           cache], stdout=sys.stderr)
    trees = {}
    for variant in ('unpatched', 'patched'):
        dest = os.path.join(workdir, variant)
        with tarfile.open(os.path.join(cache, SDIST + '.tar.gz')) as tar:
            tar.extractall(dest, filter='data')
        trees[variant] = os.path.join(dest, SDIST)
    with open(os.path.join(SERIES, 'series')) as series:
        for line in series:
            name = line.split('#')[0].strip()
            if not name:
                continue
            with open(os.path.join(SERIES, name)) as patch:
                subprocess.check_call(
                    ['patch', '-p1', '--fuzz=0', '--batch', '--quiet'],
                    stdin=patch, cwd=trees['patched'])
    return dict((v, os.path.join(t, MODULE)) for v, t in trees.items())


def _load_fallback(path):
    with mock.patch.object(sys, 'version_info', new=(2, 7, 0)):
        spec = importlib.util.spec_from_file_location('oslo_fnmatch_bench',
                                                      path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    if not hasattr(module, '_get_cached_pattern'):
        raise RuntimeError('%s did not take its fallback path' % path)
    return module


def _worker(path, sizes, repeats):
    fnmatch = _load_fallback(path).fnmatch

    def test(size):
        # The seed report's test: ten rounds over `size` patterns.
        for _ in range(10):
            for i in range(size):
                fnmatch('test', str(i))

    best = dict((size, float('inf')) for size in sizes)
    for _ in range(repeats):
        for size in sizes:  # alternate, so drift hits every size alike
            # One untimed pass first: the steady state of this size, not
            # the cache the previous size left behind, is what is timed.
            test(size)
            start = time.perf_counter()
            test(size)
            best[size] = min(best[size], time.perf_counter() - start)
    common.emit({'us_per_call': dict(
        (str(size), best[size] * 1e6 / (10 * size)) for size in sizes)})


def run(args, report):
    repeats = 3 if args.quick else 15
    sizes = [100, 101, PATCHED_CACHE_MAX, PATCHED_CACHE_MAX + 1]
    workdir = tempfile.mkdtemp(prefix='fnmatch-bench-')
    try:
        modules = _prepare(workdir)
        results = {}
        for variant in ('unpatched', 'patched'):
            result, rss, _wall = common.run_worker(
                [os.path.abspath(__file__), '--worker', modules[variant],
                 str(repeats)] + [str(s) for s in sizes])
            results[variant] = result['us_per_call']
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    for variant in ('unpatched', 'patched'):
        for size in sizes:
            report.add_row('fnmatch', 'oslo_fnmatch_%s_%d' % (variant, size),
                           us_per_call=results[variant][str(size)])

    def ratio(variant, big, small):
        return results[variant][str(big)] / results[variant][str(small)]

    report.add_ratio('oslo_fnmatch_101_vs_100', ratio('patched', 101, 100),
                     '<=', 1.5)
    report.add_ratio('oslo_fnmatch_101_vs_100_unpatched',
                     ratio('unpatched', 101, 100))
    report.add_ratio('oslo_fnmatch_257_vs_256_patched',
                     ratio('patched', 257, 256))
    report.note('oslo_fnmatch: fallback path of oslo.utils 3.28.4 forced on '
                'Python %s; patched test(101)/test(100) = %.2f, unpatched '
                '%.2f. 257 vs 256 shows the patched LRU at its own bound '
                '(a cyclic scan past any LRU bound misses every call).'
                % (sys.version.split()[0], ratio('patched', 101, 100),
                   ratio('unpatched', 101, 100)))


if __name__ == '__main__' and sys.argv[1:2] == ['--worker']:
    _worker(sys.argv[2], [int(s) for s in sys.argv[4:]], int(sys.argv[3]))
