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
"""ceilometer_metriccache against Pike's gnocchi dispatcher, side by side.

Both sides are real code in one process per row: Pike 9.0.7's
``GnocchiDispatcher`` and the plugin's ``MetricCacheDispatcher`` built over
the same resource file (the one shipped in ceilometer 9.0.7 unless a row
says otherwise), with keystone and the gnocchi client stubbed at the
client object (no HTTP). Timed rows alternate the two sides and keep the
best of several repeats, so machine noise hits both alike.

Rows: metric and event lookups (hit and miss), the same with oslo.utils
3.28.4's fallback fnmatch for Python 2.7.8 and older (what CentOS 7's
Python 2.7.5 runs), a 10,000-sample batch through ``record_metering_data``,
and the memory of the memo under a million distinct unknown metric names.

The ``_py27`` rows run the workers on CPython 2.7 with Pike's pins (the
``pike27-bench`` venv, ``common.pike27_python()``), where Pike's loop is
at its slowest: 2.7's fnmatch clears its whole 100-entry pattern cache
when full, and the stock file has 173 metric entries. They time a shuffled
mix of every metric name of the stock file plus 10% names no definition
matches (one name repeated would keep that cache warm), then hits, misses
and pattern hits alone. The worker code therefore stays 2.7-compatible.
"""

import argparse
import collections
import gc
import itertools
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

SECTION = 'metriccache'
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
FALLBACK_SDIST = 'oslo.utils-3.28.4.tar.gz'


def add_arguments(parser):
    parser.add_argument('--metriccache-names', type=int, default=None,
                        help='distinct unknown metric names for the memo '
                             'memory row (default 1,000,000; --quick '
                             '100,000)')


# ---------------------------------------------------------------- workers
# Everything below runs in a child process (``python this.py worker ...``),
# on Python 3 or, for the _py27 rows, on Pike's CPython 2.7.

_clock = getattr(time, 'perf_counter', time.time)
_imap = getattr(itertools, 'imap', map)


class _Stub(object):
    """The gnocchi client: every call accepted, counted, nothing sent."""

    def __init__(self):
        self.calls = collections.Counter()
        self.measures = 0
        self.metric = self
        self.resource = self

    def batch_resources_metrics_measures(self, measures, create_metrics):
        self.calls['batch'] += 1
        self.measures += sum(len(m) for r in measures.values()
                             for m in r.values())

    def update(self, *args, **kwargs):
        self.calls['update'] += 1

    def create(self, *args, **kwargs):
        self.calls['create'] += 1

    def search(self, *args, **kwargs):
        self.calls['search'] += 1
        return []


def _hosts(resources_file=None, memo_size=None):
    """(Pike's dispatcher, the plugin's), over the same file."""
    from ceilometer.dispatcher import gnocchi
    from ceilometer.dispatcher import gnocchi_opts
    from oslo_config import cfg

    from ceilometer_metriccache import opts
    from ceilometer_metriccache import pike_dispatcher

    conf = cfg.ConfigOpts()
    conf.register_opts(gnocchi_opts.dispatcher_opts,
                       group='dispatcher_gnocchi')
    opts.register_opts(conf)
    conf([], project='ceilometer', default_config_files=[])
    conf.set_override('filter_service_activity', False,
                      group='dispatcher_gnocchi')
    if resources_file:
        conf.set_override('resources_definition_file', resources_file,
                          group='dispatcher_gnocchi')
    if memo_size:
        conf.set_override('memo_size', memo_size, group=opts.GROUP)
    hosts = []
    # Stubbed for good: the worker only ever talks to the _Stub (Pike's
    # 2.7 venv has no mock library, and unittest.mock is Python 3).
    gnocchi.keystone_client.get_client = lambda *args, **kwargs: None
    for cls in (gnocchi.GnocchiDispatcher,
                pike_dispatcher.MetricCacheDispatcher):
        stub = _Stub()
        gnocchi.gnocchi_client.get_gnocchiclient = (
            lambda *args, **kwargs: stub)
        host = cls(conf)
        host.stub = stub
        hosts.append(host)
    return hosts


def _quiet_logs():
    import logging
    logging.getLogger().setLevel(logging.CRITICAL)


def _best_per_call_us(funcs, names, min_time, repeats):
    """Best per-call time of each func over names, funcs alternating.

    A fast func gets the names repeated until one pass lasts a couple of
    milliseconds, so that the pass's own setup (map, deque) is spread thin
    even over a handful of names; the harness is the same for both sides.
    """
    plans = []
    for func in funcs:
        start = _clock()
        collections.deque(_imap(func, names), maxlen=0)
        one = max(_clock() - start, 1e-7)
        batch = list(names) * max(1, int(0.002 / one))
        passes = max(1, int(min_time / (one * len(batch) / len(names))))
        plans.append((func, batch, passes))
    best = [float('inf')] * len(funcs)
    for _ in range(repeats):
        for i, (func, batch, passes) in enumerate(plans):
            start = _clock()
            for _ in range(passes):
                collections.deque(_imap(func, batch), maxlen=0)
            elapsed = _clock() - start
            best[i] = min(best[i], elapsed / passes / len(batch) * 1e6)
    return best


def _same_answer(pike, plugin, name):
    """The two hosts loaded their own copies: compare by content."""
    def key(answer):
        if answer is None:
            return None
        if isinstance(answer, tuple):
            return answer[0].cfg, answer[1]
        return answer.cfg
    if key(pike) != key(plugin):
        raise RuntimeError('answers differ for %r' % name)


def _check_same(funcs, names):
    """Both (pike, plugin) lookups give the same answer for every name."""
    pike, plugin = funcs
    for name in names:
        _same_answer(pike(name), plugin(name), name)


def _hit_and_miss_us(funcs, hits, misses, opts):
    """Best per-call us of (pike, plugin) over hits, then over misses."""
    min_time, repeats = _timing(opts)
    pike_hit, plugin_hit = _best_per_call_us(funcs, hits, min_time, repeats)
    pike_miss, plugin_miss = _best_per_call_us(funcs, misses, min_time,
                                               repeats)
    return {'pike_hit_us': pike_hit, 'plugin_hit_us': plugin_hit,
            'pike_miss_us': pike_miss, 'plugin_miss_us': plugin_miss}


def _timing(opts):
    """(seconds per timed repeat, repeats): --quick keeps it short."""
    return (0.05, 3) if opts.quick else (0.4, 5)


def _listed_metrics(host):
    return sorted(set(m for rd in host.resources_definition
                      for m in rd.cfg['metrics']))


def _load_fallback_fnmatch(sdist):
    """oslo.utils 3.28.4's oslo_utils/fnmatch.py, made to see 2.7.5.

    The file picks its own implementation unless sys.version_info >
    (2, 7, 9), i.e. on 2.7.8 and older;
    it is executed unchanged with an import hook that hands it a ``sys``
    whose version_info says 2.7.5, as on CentOS 7.
    """
    with tarfile.open(sdist) as tar:
        source = tar.extractfile(
            'oslo.utils-3.28.4/oslo_utils/fnmatch.py').read()
    import builtins
    fake_sys = types.ModuleType('sys')
    fake_sys.version_info = (2, 7, 5, 'final', 0)
    real_import = builtins.__import__

    def hooked_import(name, *args, **kwargs):
        if name == 'sys':
            return fake_sys
        return real_import(name, *args, **kwargs)
    module = types.ModuleType('oslo_utils_fnmatch_3_28_4')
    module.__dict__['__builtins__'] = dict(vars(builtins),
                                           __import__=hooked_import)
    exec(compile(source, 'oslo_utils/fnmatch.py (3.28.4)', 'exec'),
         module.__dict__)
    if not hasattr(module, '_MATCH_CACHE'):
        raise RuntimeError('fallback fnmatch was not selected')
    return module


def worker_lookup(opts):
    _quiet_logs()
    pike, plugin = _hosts()
    fallback = None
    if opts.fallback:
        from ceilometer.dispatcher import gnocchi
        fallback = _load_fallback_fnmatch(opts.fallback)
        gnocchi.fnmatch = fallback
    hits = _listed_metrics(pike)
    misses = ['unknown.metric.%d' % i
              for i in range(50 if opts.quick else 200)]
    funcs = (pike._get_resource_definition_from_metric,
             plugin._get_resource_definition_from_metric)
    _check_same(funcs, hits + misses)
    result = _hit_and_miss_us(funcs, hits, misses, opts)
    result.update(names=len(hits), fallback=bool(fallback))
    common.emit(result)


def worker_patterns(opts):
    """A file with wildcards: the memo path instead of the literal dict."""
    _quiet_logs()
    resources = _stock_definitions()
    # 300 wildcard entries after the stock ones, as an operator adds
    # hardware or custom meters: misses scan them all in Pike's loop.
    resources.append({'resource_type': 'generic',
                      'metrics': ['custom.%03d.*' % i for i in range(300)]})
    path = _write_yaml(opts.tmp, resources)
    pike, plugin = _hosts(path)
    matched = ['custom.%03d.rate' % i for i in range(0, 300, 3)]
    misses = ['unknown.metric.%d' % i for i in range(200)]
    funcs = (pike._get_resource_definition_from_metric,
             plugin._get_resource_definition_from_metric)
    for name in matched + misses:   # first resolution fills the memo
        plugin._get_resource_definition_from_metric(name)
    result = _hit_and_miss_us(funcs, matched, misses, opts)
    common.emit({'pike_pattern_hit_us': result.pop('pike_hit_us'),
                 'plugin_pattern_hit_us': result.pop('plugin_hit_us'),
                 'pike_miss_us': result['pike_miss_us'],
                 'plugin_miss_us': result['plugin_miss_us']})


def worker_events(opts):
    _quiet_logs()
    pike, plugin = _hosts()
    hits = sorted(set(e for rd in pike.resources_definition
                      for key in ('event_create', 'event_delete',
                                  'event_update')
                      for e in rd._ensure_list(rd.cfg.get(key, []))))
    # Most notifications reaching the event pipeline match no definition.
    misses = ['compute.instance.update', 'port.update.end',
              'volume.attach.end', 'image.send', 'identity.authenticate'] + [
        'unknown.event.%d' % i for i in range(95)]
    funcs = (pike._get_resource_definition_from_event,
             plugin._get_resource_definition_from_event)
    _check_same(funcs, hits + misses)
    result = _hit_and_miss_us(funcs, hits, misses, opts)
    result.update(event_types=len(hits))
    common.emit(result)


def _batch(pike, samples, resources):
    """One polling cycle: each resource one sample of 10 distinct metrics.

    Resources cycle over the definitions with at least 10 metrics in the
    file (instance, its disks and interfaces, hosts, ipmi, switch ports,
    identity, nova_compute: what fills a real batch), metrics rotating so
    that every metric of a definition appears; the first definitions in
    the file, the cheapest for Pike's loop, are included.
    """
    per_resource = samples // resources
    definitions = [rd for rd in pike.resources_definition
                   if not rd.cfg.get('ignore') and
                   len(rd.cfg['metrics']) >= per_resource]
    batch = []
    for r in range(resources):
        rd = definitions[r % len(definitions)]
        names = rd.cfg['metrics']
        for i in range(per_resource):
            batch.append({
                'counter_name': names[(r + i) % len(names)],
                'counter_type': 'gauge', 'counter_unit': 'B',
                'counter_volume': float(i), 'user_id': 'user',
                'project_id': 'project', 'resource_id': 'res-%05d' % r,
                'timestamp': '2024-01-01T00:00:%02d' % (i % 60),
                'resource_metadata': {
                    'host': 'node-%d' % (r % 10),
                    'display_name': 'vm-%d' % r,
                    'instance_id': 'inst-%d' % r,
                    'name': 'dev-%d' % r,
                    'flavor': {'id': 'm1.small', 'name': 'm1.small'},
                    'image_ref': 'img-1'}})
    return batch


def worker_record(opts):
    _quiet_logs()
    pike, plugin = _hosts()
    batch = _batch(pike, opts.samples, opts.resources)
    repeats = 3 if opts.quick else 5
    best = {}
    for _ in range(repeats):
        for label, host in (('pike', pike), ('plugin', plugin)):
            data = list(batch)
            gc.collect()
            start = _clock()
            host.record_metering_data(data)
            elapsed = _clock() - start
            best[label] = min(best.get(label, float('inf')), elapsed)
    if pike.stub.measures != plugin.stub.measures:
        raise RuntimeError('the two sides posted different measures: %d vs '
                           '%d' % (pike.stub.measures, plugin.stub.measures))
    common.emit({'pike_ms': best['pike'] * 1e3,
                 'plugin_ms': best['plugin'] * 1e3,
                 'samples': len(batch), 'resources': opts.resources,
                 'measures_per_run': pike.stub.measures // repeats})


# The _py27 rows: how many listed names --quick samples from the stock
# file. Pike's loop costs up to ~10 ms per name on 2.7, so the full mix
# (all 173 names + 10%) takes seconds per pass.
QUICK_LISTED = 40


def _name_mix(host, quick):
    """(listed, unknown, mix): the stock file's names, 10% more, shuffled.

    Seeded, so that both sides and every run see the same order.
    """
    rng = random.Random(20171)
    listed = _listed_metrics(host)
    if quick:
        listed = sorted(rng.sample(listed, min(len(listed), QUICK_LISTED)))
    unknown = ['unknown.metric.%d' % i
               for i in range(max(1, len(listed) // 10))]
    mix = listed + unknown
    rng.shuffle(mix)
    return listed, unknown, mix


def worker_mix(opts):
    """The mix, then hits, misses and pattern hits alone (for _py27)."""
    _quiet_logs()
    resources = _stock_definitions()
    pike, plugin = _hosts()
    listed, unknown, mix = _name_mix(pike, opts.quick)
    funcs = (pike._get_resource_definition_from_metric,
             plugin._get_resource_definition_from_metric)
    _check_same(funcs, mix)
    min_time, repeats = _timing(opts)
    pike_mix, plugin_mix = _best_per_call_us(funcs, mix, min_time, repeats)
    result = _hit_and_miss_us(funcs, listed, unknown, opts)
    # Pattern hits: the stock file plus one definition of wildcards, as an
    # operator adds custom meters; names only those patterns match.
    resources.append({'resource_type': 'generic',
                      'metrics': ['custom.%02d.*' % i for i in range(30)]})
    pike_p, plugin_p = _hosts(_write_yaml(opts.tmp, resources))
    matched = ['custom.%02d.rate' % i
               for i in range(0, 30, 3 if opts.quick else 1)]
    pfuncs = (pike_p._get_resource_definition_from_metric,
              plugin_p._get_resource_definition_from_metric)
    _check_same(pfuncs, matched)
    pike_pat, plugin_pat = _best_per_call_us(pfuncs, matched, min_time,
                                             repeats)
    result.update(pike_mix_us=pike_mix, plugin_mix_us=plugin_mix,
                  pike_pattern_hit_us=pike_pat,
                  plugin_pattern_hit_us=plugin_pat,
                  names=len(mix), unknown=len(unknown),
                  python='%d.%d.%d' % sys.version_info[:3])
    common.emit(result)


def worker_record_mix(opts):
    """record_metering_data over the name mix (for _py27).

    Each resource gets ``samples / resources`` consecutive names of the
    shuffled mix, cycling, so that every name of the stock file and the
    unknown ones appear. Pike's side runs once (tens of seconds on 2.7),
    the plugin's three times, best kept.
    """
    _quiet_logs()
    pike, plugin = _hosts()
    _listed, _unknown, mix = _name_mix(pike, False)
    per_resource = opts.samples // opts.resources
    batch = []
    for r in range(opts.resources):
        for i in range(per_resource):
            batch.append({
                'counter_name': mix[(r * per_resource + i) % len(mix)],
                'counter_type': 'gauge', 'counter_unit': 'B',
                'counter_volume': float(i), 'user_id': 'user',
                'project_id': 'project', 'resource_id': 'res-%05d' % r,
                'timestamp': '2024-01-01T00:00:%02d' % (i % 60),
                'resource_metadata': {'host': 'node-%d' % (r % 10),
                                      'display_name': 'vm-%d' % r}})
    best = {}
    for label, host, repeats in (('pike', pike, 1), ('plugin', plugin, 3)):
        for _ in range(repeats):
            data = list(batch)
            gc.collect()
            start = _clock()
            host.record_metering_data(data)
            elapsed = _clock() - start
            best[label] = min(best.get(label, float('inf')), elapsed)
    if pike.stub.measures != plugin.stub.measures // 3:
        raise RuntimeError('the two sides posted different measures: %d vs '
                           '%d' % (pike.stub.measures,
                                   plugin.stub.measures // 3))
    common.emit({'pike_ms': best['pike'] * 1e3,
                 'plugin_ms': best['plugin'] * 1e3,
                 'samples': len(batch), 'resources': opts.resources,
                 'measures_per_run': pike.stub.measures,
                 'python': '%d.%d.%d' % sys.version_info[:3]})


def worker_memo(opts):
    """Unknown names through the plugin, or through upstream's set."""
    _quiet_logs()
    resources = _stock_definitions()
    # One wildcard definition, so that unknown names go through the memo
    # rather than being answered by the literal dict alone.
    resources.append({'resource_type': 'generic',
                      'metrics': ['custom.*.rate']})
    path = _write_yaml(opts.tmp, resources)
    pike, plugin = _hosts(path)
    gc.collect()
    before = common.current_rss_mib()
    if opts.side == 'plugin':
        lookup = plugin._get_resource_definition_from_metric
        logged = plugin._already_logged_metric_names
    else:
        # What Pike keeps per unknown name: only the logged-names set
        # (its loop remembers nothing, it rescans every time).
        lookup = None
        logged = pike._already_logged_metric_names
    start = _clock()
    for i in range(opts.names):
        name = 'unknown.metric.%09d' % i
        if lookup is None or lookup(name) is None:
            if name not in logged:
                logged.add(name)
    elapsed = _clock() - start
    gc.collect()
    result = {'names': opts.names, 'logged_entries': len(logged),
              'rss_growth_mib': common.current_rss_mib() - before,
              'seconds': elapsed}
    if opts.side == 'plugin':
        memo = plugin.metric_index.metrics.memo
        result.update(memo_entries=len(memo), bound=memo.maxsize)
    common.emit(result)


def _stock_definitions():
    from ceilometer.dispatcher import gnocchi
    import yaml
    path = os.path.join(os.path.dirname(gnocchi.__file__), 'data',
                        'gnocchi_resources.yaml')
    with open(path) as f:
        return yaml.safe_load(f)['resources']


def _write_yaml(directory, resources):
    import yaml
    path = os.path.join(directory, 'gnocchi_resources.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump({'resources': resources}, f)
    return path


WORKERS = {'lookup': worker_lookup, 'patterns': worker_patterns,
           'events': worker_events, 'record': worker_record,
           'memo': worker_memo, 'mix': worker_mix,
           'record_mix': worker_record_mix}


def worker_main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument('kind', choices=sorted(WORKERS))
    parser.add_argument('--quick', action='store_true')
    parser.add_argument('--fallback', default=None)
    parser.add_argument('--samples', type=int, default=10000)
    parser.add_argument('--resources', type=int, default=1000)
    parser.add_argument('--names', type=int, default=1000000)
    parser.add_argument('--side', default='plugin')
    parser.add_argument('--tmp', default=None)
    opts = parser.parse_args(argv)
    import warnings
    warnings.simplefilter('ignore')
    WORKERS[opts.kind](opts)


# ------------------------------------------------------------ the section

def _worker(kind, args, tmp, *extra, **kwargs):
    """Run a worker; ``python=`` another interpreter (Pike's 2.7)."""
    argv = [os.path.abspath(__file__), 'worker', kind, '--tmp', tmp]
    if args.quick:
        argv.append('--quick')
    result, _peak, _wall = common.run_worker(
        argv + list(extra), timeout=1800, python=kwargs.get('python'))
    return result


def _fallback_sdist():
    """oslo.utils 3.28.4, sha256-checked by tools/fetch-pike-sdists.sh."""
    dest = os.environ.get('PIKE_SDISTS') or os.path.join(
        tempfile.gettempdir(), 'openstack-fastpath-pike-sdists')
    script = os.path.join(ROOT, 'tools', 'fetch-pike-sdists.sh')
    if not os.path.exists(script):
        return None, 'tools/fetch-pike-sdists.sh is missing'
    proc = subprocess.run(['bash', script, dest], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT,
                          env=dict(os.environ, PYTHON=sys.executable))
    path = os.path.join(dest, FALLBACK_SDIST)
    if proc.returncode != 0 or not os.path.exists(path):
        return None, proc.stdout.decode('utf-8', 'replace')[-300:]
    return path, None


def _r(value):
    return round(value, 4 if value < 1 else 2)


def run(args, report):
    names = args.metriccache_names or (100000 if args.quick else 1000000)
    samples, resources = (2000, 200) if args.quick else (10000, 1000)
    with tempfile.TemporaryDirectory(prefix='metriccache-bench-') as tmp:
        lookup = _worker('lookup', args, tmp)
        report.add_row(SECTION, 'metric_lookup_us',
                       **dict((k, _r(v)) for k, v in lookup.items()
                              if k.endswith('_us')))
        hit = lookup['pike_hit_us'] / lookup['plugin_hit_us']
        miss = lookup['pike_miss_us'] / lookup['plugin_miss_us']
        report.add_ratio('metric_lookup_hit_vs_pike', round(hit))
        report.add_ratio('metric_lookup_miss_vs_pike', round(miss))
        # The headline is the worse of the two.
        report.add_ratio('metric_lookup_vs_pike', round(min(hit, miss)),
                         '>=', 1000)

        sdist, why = _fallback_sdist()
        if sdist:
            fb = _worker('lookup', args, tmp, '--fallback', sdist)
            report.add_row(SECTION, 'metric_lookup_fallback_fnmatch_us',
                           **dict((k, _r(v)) for k, v in fb.items()
                                  if k.endswith('_us')))
            report.add_ratio('metric_lookup_fallback_vs_pike', round(min(
                fb['pike_hit_us'] / fb['plugin_hit_us'],
                fb['pike_miss_us'] / fb['plugin_miss_us'])))
        else:
            report.note('metriccache: fallback-fnmatch rows skipped, '
                        'oslo.utils 3.28.4 sdist unavailable: %s' % why)

        pat = _worker('patterns', args, tmp)
        report.add_row(SECTION, 'metric_lookup_300_patterns_us',
                       **dict((k, _r(v)) for k, v in pat.items()
                              if k.endswith('_us')))
        report.add_ratio('metric_lookup_patterns_vs_pike', round(min(
            pat['pike_pattern_hit_us'] / pat['plugin_pattern_hit_us'],
            pat['pike_miss_us'] / pat['plugin_miss_us'])))

        ev = _worker('events', args, tmp)
        report.add_row(SECTION, 'event_lookup_us',
                       **dict((k, _r(v)) for k, v in ev.items()
                              if k.endswith('_us')))
        report.add_ratio('event_lookup_vs_loop', round(min(
            ev['pike_hit_us'] / ev['plugin_hit_us'],
            ev['pike_miss_us'] / ev['plugin_miss_us'])), '>=', 100)

        rec = _worker('record', args, tmp, '--samples', str(samples),
                      '--resources', str(resources))
        report.add_row(SECTION, 'record_batch_ms',
                       pike_ms=_r(rec['pike_ms']),
                       plugin_ms=_r(rec['plugin_ms']),
                       samples=rec['samples'], resources=rec['resources'])
        report.add_ratio('record_batch_vs_pike',
                         round(rec['pike_ms'] / rec['plugin_ms'], 2),
                         '>=', 3)

        memo = _worker('memo', args, tmp, '--names', str(names))
        upstream = _worker('memo', args, tmp, '--names', str(names),
                           '--side', 'pike')
        report.add_row(SECTION, 'metric_memo_unknown_names',
                       names=memo['names'], bound=memo['bound'],
                       memo_entries=memo['memo_entries'],
                       logged_entries=memo['logged_entries'],
                       rss_growth_mib=_r(memo['rss_growth_mib']))
        report.add_row(SECTION, 'pike_logged_set_unknown_names',
                       names=upstream['names'],
                       logged_entries=upstream['logged_entries'],
                       rss_growth_mib=_r(upstream['rss_growth_mib']))
        report.add_ratio('metric_memo_entries_per_bound',
                         memo['memo_entries'] / float(memo['bound']),
                         '<=', 1)
        _run_py27(args, report, tmp)
        if args.quick:
            report.note('metriccache: --quick uses %d samples over %d '
                        'resources and %d unknown names'
                        % (samples, resources, names))


def _ratio(pike, plugin):
    return round(pike / plugin, 1 if pike / plugin < 100 else None)


def _run_py27(args, report, tmp):
    """The same questions on Pike's own interpreter, CPython 2.7."""
    python = common.pike27_python()
    mix = _worker('mix', args, tmp, python=python)
    report.add_row(SECTION, 'metric_lookup_mix_us_py27',
                   **dict((k, _r(v)) for k, v in mix.items()
                          if k.endswith('_us')))
    report.add_ratio('metric_lookup_vs_pike_py27',
                     _ratio(mix['pike_mix_us'], mix['plugin_mix_us']),
                     '>=', 10000)
    for kind in ('hit', 'miss', 'pattern_hit'):
        report.add_ratio('metric_lookup_%s_vs_pike_py27' % kind, _ratio(
            mix['pike_%s_us' % kind], mix['plugin_%s_us' % kind]))
    # 10,000 samples over 1,000 resources: Pike's side alone takes about
    # a minute on 2.7; --quick keeps a twentieth of it.
    samples, resources = (500, 50) if args.quick else (10000, 1000)
    rec = _worker('record_mix', args, tmp, '--samples', str(samples),
                  '--resources', str(resources), python=python)
    report.add_row(SECTION, 'record_batch_mix_ms_py27',
                   pike_ms=_r(rec['pike_ms']), plugin_ms=_r(rec['plugin_ms']),
                   samples=rec['samples'], resources=rec['resources'])
    report.add_ratio('record_batch_vs_pike_py27',
                     _ratio(rec['pike_ms'], rec['plugin_ms']), '>=', 100)
    if args.quick:
        report.note('metriccache: --quick _py27 rows use %d of the stock '
                    'file\'s metric names (+10%% unknown) and %d samples '
                    'over %d resources' % (mix['names'] - mix['unknown'],
                                           samples, resources))


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == 'worker':
        worker_main(sys.argv[2:])
    else:
        sys.stderr.write(json.dumps({'usage': 'run through tools/bench/'
                                              'run.py --only metriccache'})
                         + '\n')
        sys.exit(2)
