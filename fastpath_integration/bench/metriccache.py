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

Both sides are real code in one worker per row: Pike 9.0.7's
``GnocchiDispatcher`` and the plugin's ``MetricCacheDispatcher`` over the
same resource file, with keystone and the gnocchi client stubbed at the
client object. Timed rows alternate the two sides and keep the best of
several repeats (timeit). The ``_py27`` rows run on Pike's CPython 2.7,
so the workers stay in the 2.7/3 common subset; see
doc/source/metriccache.rst.
"""

import collections
import gc
import itertools
import os
import random
import sys
import timeit

from fastpath_integration.bench import fnmatch as oslo_fnmatch
from fastpath_integration.bench import runner
from fastpath_integration.bench import workers

_imap = getattr(itertools, 'imap', map)
_US = (('hit us', 'hit_us'), ('miss us', 'miss_us'),
       ('pattern hit us', 'pattern_hit_us'), ('mix us', 'mix_us'))

LOOKUP_27 = runner.Table(
    'Metric lookup on Pike\'s CPython 2.7', 'Pike\'s dispatcher loop (2.7 '
    'fnmatch: 100 patterns, then cleared) and the plugin over a shuffled mix '
    'of every stock metric name plus 10% unknown ones; vs: Pike\'s time over '
    'the plugin\'s.', _US[3:] + _US[:3], ('mix_us', 'hit_us'), True,
    'lookup_us_py27', True)
MIX_27 = LOOKUP_27.pair('metric_lookup_mix_us_py27', 'Pike loop, 2.7',
                        'plugin, 2.7')
LOOKUP = runner.Table(
    'Metric and event lookup on Python 3', 'Per-call time of finding a '
    'metric\'s (or event\'s) resource definition; best of repeats; vs: '
    'Pike\'s time over the plugin\'s (hit, else pattern hit).', _US,
    ('hit_us', 'pattern_hit_us', 'mix_us'), True, 'lookup_us', True)
METRIC = LOOKUP.pair('metric_lookup_us', 'Pike loop, metric',
                     'plugin, metric')
FALLBACK = LOOKUP.pair('metric_lookup_fallback_fnmatch_us',
                       'Pike loop, oslo fallback fnmatch',
                       'plugin, oslo fallback fnmatch')
PATTERNS = LOOKUP.pair('metric_lookup_300_patterns_us',
                       'Pike loop, 300 patterns', 'plugin, 300 patterns')
EVENT = LOOKUP.pair('event_lookup_us', 'Pike loop, event', 'plugin, event')
RECORD = runner.Table(
    'record_metering_data of a sample batch', 'Pike\'s gnocchi dispatcher '
    'and the plugin with the gnocchi client stubbed; vs: Pike\'s time over '
    'the plugin\'s.', (('ms', 'ms'), ('samples', 'samples'),
                       ('resources', 'resources')), 'ms', True)
RECORD_27 = RECORD.pair('record_batch_mix_ms_py27', 'Pike dispatcher, 2.7',
                        'plugin, 2.7')
RECORD_3 = RECORD.pair('record_batch_ms', 'Pike dispatcher, 3', 'plugin, 3')
MEMO = runner.Table(
    'Memory for names no definition lists', 'RSS growth after looking up '
    'that many distinct unknown names.', (
        ('RSS growth MiB', 'rss_growth_mib'), ('names', 'names'),
        ('bound', 'bound'), ('memo entries', 'memo_entries'),
        ('logged entries', 'logged_entries')))
PIKE_MEMO = MEMO.row('pike_logged_set_unknown_names',
                     'Pike (unbounded logged set)')
PLUGIN_MEMO = MEMO.row('metric_memo_unknown_names', 'plugin')
HIT_MISS = ('hit_us', 'miss_us')
RATIOS = (
    runner.ratio('metric_lookup_hit_vs_pike', *METRIC, key='hit_us'),
    runner.ratio('metric_lookup_miss_vs_pike', *METRIC, key='miss_us'),
    # The headline is the worse of the two.
    runner.ratio('metric_lookup_vs_pike', *METRIC, key=HIT_MISS, op='>=',
                 bound=1000),
    runner.ratio('metric_lookup_fallback_vs_pike', *FALLBACK, key=HIT_MISS),
    runner.ratio('metric_lookup_patterns_vs_pike', *PATTERNS,
                 key=('pattern_hit_us', 'miss_us')),
    runner.ratio('event_lookup_vs_loop', *EVENT, key=HIT_MISS, op='>=',
                 bound=100),
    runner.ratio('record_batch_vs_pike', *RECORD_3, key='ms', op='>=',
                 bound=3),
    runner.ratio('metric_memo_entries_per_bound', lambda metric: metric(
        PLUGIN_MEMO, 'memo_entries') / metric(PLUGIN_MEMO, 'bound'),
        op='<=', bound=1),
    runner.ratio('metric_lookup_vs_pike_py27', *MIX_27, key='mix_us',
                 op='>=', bound=10000),
    runner.ratio('metric_lookup_hit_vs_pike_py27', *MIX_27, key='hit_us'),
    runner.ratio('metric_lookup_miss_vs_pike_py27', *MIX_27, key='miss_us'),
    runner.ratio('metric_lookup_pattern_hit_vs_pike_py27', *MIX_27,
                 key='pattern_hit_us'),
    runner.ratio('record_batch_vs_pike_py27', *RECORD_27, key='ms', op='>=',
                 bound=100),
)


def add_arguments(parser):
    parser.add_argument('--metriccache-names', type=int, default=None,
                        help='distinct unknown metric names for the memo '
                             'memory row (default 1,000,000; --quick '
                             '100,000)')


def run(args, report):
    import tempfile
    quick = args.quick
    names = args.metriccache_names or (100000 if quick else 1000000)
    samples, resources = (2000, 200) if quick else (10000, 1000)
    with tempfile.TemporaryDirectory(prefix='metriccache-bench-') as tmp:
        def measure(row, function, python=None, **params):
            report.measure(row, function, dict(params, quick=quick, tmp=tmp),
                           python)
        measure(METRIC[0], lookup)
        try:
            measure(FALLBACK[0], lookup, fallback=oslo_fnmatch.
                    fallback_sources(tmp)['unpatched'])
        except Exception as exc:  # sdist unavailable (offline, no cache)
            report.failed(FALLBACK[0], exc)
        measure(PATTERNS[0], patterns)
        measure(EVENT[0], events)
        measure(RECORD_3[0], record, samples=samples, resources=resources)
        measure(PLUGIN_MEMO, memo, names=names, side='plugin')
        measure(PIKE_MEMO, memo, names=names, side='pike')
        python = workers.pike27_python()
        measure(MIX_27[0], mix, python)
        # Pike's side alone takes about a minute on 2.7 at full size.
        measure(RECORD_27[0], record_mix, python, **(
            dict(samples=500, resources=50) if quick
            else dict(samples=10000, resources=1000)))
    report.note('metriccache: %d samples over %d resources, %d unknown '
                'names%s' % (samples, resources, names, quick and
                             '; _py27 rows use %d stock names' % QUICK_LISTED
                             or ''))


# -- workers: Python 3 and, for the _py27 rows, Pike's CPython 2.7 ------------

class _Stub(object):
    """The gnocchi client: every call accepted, counted, nothing sent."""

    def __init__(self):
        self.measures = 0
        self.metric = self.resource = self

    def batch_resources_metrics_measures(self, measures, create_metrics):
        self.measures += sum(len(m) for r in measures.values()
                             for m in r.values())

    def update(self, *args, **kwargs):
        pass

    create = update

    def search(self, *args, **kwargs):
        return []


def _hosts(resources=None, tmp=None):
    """(Pike's dispatcher, the plugin's), over the same resource file."""
    import logging
    import warnings

    from ceilometer.dispatcher import gnocchi
    from ceilometer.dispatcher import gnocchi_opts
    from oslo_config import cfg

    from ceilometer_metriccache import opts
    from ceilometer_metriccache import pike_dispatcher
    warnings.simplefilter('ignore')
    logging.getLogger().setLevel(logging.CRITICAL)
    conf = cfg.ConfigOpts()
    conf.register_opts(gnocchi_opts.dispatcher_opts,
                       group='dispatcher_gnocchi')
    opts.register_opts(conf)
    conf([], project='ceilometer', default_config_files=[])
    conf.set_override('filter_service_activity', False,
                      group='dispatcher_gnocchi')
    if resources:
        import yaml
        path = os.path.join(tmp, 'gnocchi_resources.yaml')
        with open(path, 'w') as out:
            yaml.safe_dump({'resources': resources}, out)
        conf.set_override('resources_definition_file', path,
                          group='dispatcher_gnocchi')
    # Stubbed for good: the worker only ever talks to the _Stub.
    gnocchi.keystone_client.get_client = lambda *args, **kwargs: None
    hosts = []
    for cls in (gnocchi.GnocchiDispatcher,
                pike_dispatcher.MetricCacheDispatcher):
        stub = _Stub()
        gnocchi.gnocchi_client.get_gnocchiclient = lambda *a, **k: stub
        hosts.append(cls(conf))
        hosts[-1].stub = stub
    return hosts


def _stock_definitions(*extra):
    """The resource file shipped in ceilometer 9.0.7, plus extra entries."""
    from ceilometer.dispatcher import gnocchi
    import yaml
    with open(os.path.join(os.path.dirname(gnocchi.__file__), 'data',
                           'gnocchi_resources.yaml')) as stock:
        return yaml.safe_load(stock)['resources'] + list(extra)


def _per_call_us(hosts, names, quick, event=False):
    """Best per-call us of (Pike's, the plugin's) lookup, alternating.

    Both give the same answer for every name first. A fast lookup gets the
    names repeated until one pass lasts a couple of milliseconds, so that
    the pass's own cost is spread thin; the harness is the same for both.
    """
    attr = '_get_resource_definition_from_' + ('event' if event else 'metric')
    funcs = [getattr(host, attr) for host in hosts]

    def same(answer):
        return answer and (answer[0].cfg, answer[1]) \
            if isinstance(answer, tuple) else answer and answer.cfg
    for name in names:
        if same(funcs[0](name)) != same(funcs[1](name)):
            raise AssertionError('answers differ for %r' % name)
    min_time, repeats = (0.05, 3) if quick else (0.4, 5)
    timers = []
    for func in funcs:
        def one_pass(func=func, batch=list(names)):
            collections.deque(_imap(func, batch), maxlen=0)
        one = max(timeit.Timer(one_pass).timeit(1), 1e-7)
        batch = list(names) * max(1, int(0.002 / one))
        timers.append((timeit.Timer(lambda f=func, b=batch: collections.deque(
            _imap(f, b), maxlen=0)), len(batch), max(1, int(
                min_time / (one * len(batch) / len(names))))))
    best = [float('inf')] * len(funcs)
    for _ in range(repeats):
        for i, (timer, calls, passes) in enumerate(timers):
            best[i] = min(best[i], timer.timeit(passes) / passes / calls * 1e6)
    return best


def _sides(prefix_values):
    """{'pike_hit_us': .., 'plugin_hit_us': ..} from {'hit_us': (a, b)}."""
    return dict(('%s_%s' % (side, key), round(pair[i], 4))
                for key, pair in prefix_values.items()
                for i, side in enumerate(('pike', 'plugin')))


def _misses(count):
    return ['unknown.metric.%d' % i for i in range(count)]


def _listed(host):
    return sorted(set(m for rd in host.resources_definition
                      for m in rd.cfg['metrics']))


def lookup(params):
    hosts = _hosts()
    if params.get('fallback'):
        from ceilometer.dispatcher import gnocchi
        gnocchi.fnmatch = oslo_fnmatch.load_fallback(params['fallback'])
    quick = params['quick']
    return _sides({'hit_us': _per_call_us(hosts, _listed(hosts[0]), quick),
                   'miss_us': _per_call_us(hosts, _misses(
                       50 if quick else 200), quick)})


def patterns(params):
    """Lookups in a file with 300 wildcards: the memo, not the dict.

    The wildcards follow the stock entries, as an operator adds meters.
    """
    hosts = _hosts(_stock_definitions({
        'resource_type': 'generic',
        'metrics': ['custom.%03d.*' % i for i in range(300)]}),
        params['tmp'])
    matched = ['custom.%03d.rate' % i for i in range(0, 300, 3)]
    for name in matched + _misses(200):  # first resolution fills the memo
        hosts[1]._get_resource_definition_from_metric(name)
    return _sides({'pattern_hit_us': _per_call_us(hosts, matched,
                                                  params['quick']),
                   'miss_us': _per_call_us(hosts, _misses(200),
                                           params['quick'])})


def events(params):
    hosts = _hosts()
    hits = sorted(set(e for rd in hosts[0].resources_definition
                      for key in ('event_create', 'event_delete',
                                  'event_update')
                      for e in rd._ensure_list(rd.cfg.get(key, []))))
    # Most notifications reaching the event pipeline match no definition.
    misses = ['compute.instance.update', 'port.update.end',
              'volume.attach.end', 'image.send', 'identity.authenticate'] + [
        'unknown.event.%d' % i for i in range(95)]
    return _sides({'hit_us': _per_call_us(hosts, hits, params['quick'], True),
                   'miss_us': _per_call_us(hosts, misses, params['quick'],
                                           True)})


def _record(hosts, batch, repeats):
    """Best ms of record_metering_data per side; the same measures posted.

    Pike's side runs repeats[0] times, the plugin's repeats[1] times.
    """
    best = [float('inf')] * 2
    for i in range(max(repeats)):
        for side, host in enumerate(hosts):
            if i < repeats[side]:
                data = list(batch)
                gc.collect()
                start = timeit.default_timer()
                host.record_metering_data(data)
                best[side] = min(best[side], timeit.default_timer() - start)
    posted = [host.stub.measures // count
              for host, count in zip(hosts, repeats)]
    if posted[0] != posted[1]:
        raise AssertionError('the two sides posted different measures: %s'
                             % posted)
    return dict(_sides({'ms': [t * 1e3 for t in best]}),
                samples=len(batch), measures_per_run=posted[0])


def _sample(counter, r, i, **metadata):
    return {'counter_name': counter, 'counter_type': 'gauge',
            'counter_unit': 'B', 'counter_volume': float(i),
            'user_id': 'user', 'project_id': 'project',
            'resource_id': 'res-%05d' % r,
            'timestamp': '2024-01-01T00:00:%02d' % (i % 60),
            'resource_metadata': dict(metadata, host='node-%d' % (r % 10),
                                      display_name='vm-%d' % r)}


def record(params):
    """One polling cycle: each resource one sample of 10 metrics.

    Over the definitions with at least 10 metrics (what fills a batch).
    """
    hosts = _hosts()
    per = params['samples'] // params['resources']
    definitions = [rd.cfg['metrics'] for rd in hosts[0].resources_definition
                   if not rd.cfg.get('ignore') and
                   len(rd.cfg['metrics']) >= per]
    batch = [_sample(names[(r + i) % len(names)], r, i,
                     instance_id='inst-%d' % r, name='dev-%d' % r,
                     image_ref='img-1', flavor={'id': 'm1.small',
                                                'name': 'm1.small'})
             for r in range(params['resources'])
             for names in [definitions[r % len(definitions)]]
             for i in range(per)]
    repeats = 3 if params['quick'] else 5
    return dict(_record(hosts, batch, (repeats, repeats)),
                resources=params['resources'])


# The _py27 rows: how many listed names --quick samples from the stock
# file. Pike's loop costs up to ~10 ms per name on 2.7.
QUICK_LISTED = 40


def _name_mix(host, quick):
    """(listed, unknown, mix): the stock names, 10% more, shuffled.

    Seeded; one name repeated would keep 2.7's fnmatch cache warm.
    """
    rng = random.Random(20171)
    listed = _listed(host)
    if quick:
        listed = sorted(rng.sample(listed, min(len(listed), QUICK_LISTED)))
    unknown = _misses(max(1, len(listed) // 10))
    mix = listed + unknown
    rng.shuffle(mix)
    return listed, unknown, mix


def mix(params):
    """The mix, then hits, misses and pattern hits alone (for _py27)."""
    quick = params['quick']
    hosts = _hosts()
    listed, unknown, names = _name_mix(hosts[0], quick)
    pattern_hosts = _hosts(_stock_definitions({
        'resource_type': 'generic',
        'metrics': ['custom.%02d.*' % i for i in range(30)]}), params['tmp'])
    return dict(_sides({
        'mix_us': _per_call_us(hosts, names, quick),
        'hit_us': _per_call_us(hosts, listed, quick),
        'miss_us': _per_call_us(hosts, unknown, quick),
        'pattern_hit_us': _per_call_us(pattern_hosts, [
            'custom.%02d.rate' % i for i in range(0, 30, 3 if quick else 1)],
            quick)}), names=len(names), unknown=len(unknown),
        python='%d.%d.%d' % sys.version_info[:3])


def record_mix(params):
    """record_metering_data over the name mix (for _py27).

    Each resource gets consecutive names of the mix, cycling. Pike's side
    runs once (tens of seconds on 2.7), the plugin's three times.
    """
    hosts = _hosts()
    names = _name_mix(hosts[0], False)[2]
    per = params['samples'] // params['resources']
    batch = [_sample(names[(r * per + i) % len(names)], r, i)
             for r in range(params['resources']) for i in range(per)]
    return dict(_record(hosts, batch, (1, 3)), resources=params['resources'],
                python='%d.%d.%d' % sys.version_info[:3])


def memo(params):
    """Unknown names through the plugin's memo, or Pike's logged set.

    Pike's loop remembers nothing else: it rescans every time.
    """
    # One wildcard definition, so that unknown names go through the memo.
    pike, plugin = _hosts(_stock_definitions({
        'resource_type': 'generic', 'metrics': ['custom.*.rate']}),
        params['tmp'])
    host = plugin if params['side'] == 'plugin' else pike
    lookup = host._get_resource_definition_from_metric \
        if host is plugin else lambda name: None
    logged = host._already_logged_metric_names
    gc.collect()
    before = workers.current_rss_mib()
    for i in range(params['names']):
        name = 'unknown.metric.%09d' % i
        if lookup(name) is None and name not in logged:
            logged.add(name)
    gc.collect()
    result = {'names': params['names'], 'logged_entries': len(logged),
              'rss_growth_mib': round(workers.current_rss_mib() - before, 2)}
    if host is plugin:
        cache = plugin.metric_index.metrics.memo
        result.update(memo_entries=len(cache), bound=cache.maxsize)
    return result
