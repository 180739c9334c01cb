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
"""The bench's rows arranged as one table per question a reader asks.

Sections record flat rows (``Report.add_row``); which rows answer which
question, in what order and under which labels, is decided here, in one
place, so the sections stay measurement code. A row no question names is
still printed, in a table of its section's leftovers: nothing measured is
hidden by a missing entry here.
"""

import collections


Column = collections.namedtuple('Column', 'heading key')
# ``row`` is a Report row name; ``prefix`` picks that row's metrics
# ``<prefix><column key>`` (rows that hold Pike and the plugin side by
# side); ``vs`` is the label of the row this one's ratio is taken against.
Row = collections.namedtuple('Row', 'label row prefix vs')


def row(label, name, prefix='', vs=None):
    return Row(label, name, prefix, vs)


class Question(object):
    """One table: what was asked, which rows answer it, and how to compare.

    ``ratio`` names the column the ratio is taken on (a tuple: the first
    that both rows have); ``higher_is_better``
    says which way round: throughput rows are divided by their baseline,
    times and CPU seconds divide it, so every ratio reads "times better".
    ``chart`` is the PNG's file name stem, or None for no chart.
    """

    def __init__(self, name, section, title, what, columns, rows,
                 ratio=None, higher_is_better=True, chart=None,
                 log_scale=False):
        self.name = name
        self.section = section
        self.title = title
        self.what = what
        self.columns = [Column(*c) for c in columns]
        self.rows = rows
        self.ratio = ratio
        self.higher_is_better = higher_is_better
        self.chart = chart
        self.log_scale = log_scale

    def row_names(self):
        return set(r.row for r in self.rows)

    def cells(self, rows):
        """[(label, {column key: value}, ratio or None)] present in rows."""
        found = []
        values_by_label = {}
        for spec in self.rows:
            metrics = rows.get(spec.row)
            if metrics is None:
                continue
            values = dict((c.key, metrics.get(spec.prefix + c.key))
                          for c in self.columns)
            if all(v is None for v in values.values()):
                continue
            values_by_label[spec.label] = values
            found.append((spec, values))
        out = []
        for spec, values in found:
            out.append((spec.label, values,
                        self._ratio(values, values_by_label.get(spec.vs))))
        return out

    def _ratio(self, values, baseline):
        if not self.ratio or baseline is None:
            return None
        keys = self.ratio if isinstance(self.ratio, tuple) else (self.ratio,)
        for key in keys:
            mine, base = values.get(key), baseline.get(key)
            if mine and base:
                return (float(mine) / base if self.higher_is_better
                        else float(base) / mine)
        return None


def _throughput(section, name, title, what, rows, chart=None):
    return Question(name, section, title, what,
                    [('MB/s', 'mb_s'), ('size MiB', 'size_mib'),
                     ('peak RSS MiB', 'peak_rss_mib'),
                     ('RSS growth MiB', 'rss_growth_mib')],
                    rows, ratio='mb_s', chart=chart)


def _lookup(section, name, title, what, rows, chart=None):
    return Question(name, section, title, what,
                    [('hit us', 'hit_us'), ('miss us', 'miss_us'),
                     ('pattern hit us', 'pattern_hit_us'),
                     ('mix us', 'mix_us')],
                    rows, ratio=('hit_us', 'pattern_hit_us', 'mix_us'),
                    higher_is_better=False,
                    chart=chart, log_scale=True)


def _api(name, title, what, verb, chart):
    pike = 'Pike in-tree driver'
    rows = [row(pike, 'api_%s_pike_py27' % verb),
            row('Pike tree + patches/glance_store',
                'api_%s_patched_py27' % verb, vs=pike),
            row('fastsheep plugin', 'api_%s_plugin_py27' % verb, vs=pike)]
    if verb == 'get':
        rows.append(row('ceiling: dog vdi read | dd', 'api_get_ceiling',
                        vs=pike))
    return Question('services', name, title, what,
                    [('MB/s', 'mb_s'), ('glance-api CPU s', 'cpu_s'),
                     ('peak RSS MiB', 'peak_rss_mib'), ('bytes', 'size')],
                    rows, ratio='mb_s', chart=chart)


QUESTIONS = [
    _api('api_get', 'Download through Pike glance-api (CPython 2.7)',
         'One image streamed over HTTP (v2) from Pike glance-api 15.0.2, '
         'eventlet, one worker, over the sheepdog emulator; byte count and '
         'sha256 checked; vs: MB/s over the in-tree driver\'s.',
         'get', 'api_download_mb_s'),
    _api('api_put', 'Upload through Pike glance-api (CPython 2.7)',
         'The same image uploaded through the v2 API; glance hashes it '
         '(md5 without OpenSSL on this 2.7); vs: MB/s over the in-tree '
         'driver\'s.', 'put', 'api_upload_mb_s'),
    Question(
        'services', 'agent_cpu', 'Notification agent CPU for one burst',
        'CPU seconds of ceilometer-agent-notification from the first sample '
        'until every measure is in gnocchi (real RabbitMQ and gnocchi); '
        'vs: stock CPU over this row\'s.',
        [('CPU s', 'cpu_s'), ('wall s', 'wall_s'), ('samples', 'samples'),
         ('peak RSS MiB', 'peak_rss_mib')],
        [row('Pike 9.0.7 stock dispatcher, 2.7', 'agent_cpu_pike_py27'),
         row('Pike 9.0.7 + patches/ceilometer, 2.7',
             'agent_cpu_patched_py27',
             vs='Pike 9.0.7 stock dispatcher, 2.7'),
         row('Pike 9.0.7 + metric-cache plugin, 2.7',
             'agent_cpu_plugin_py27',
             vs='Pike 9.0.7 stock dispatcher, 2.7'),
         row('current ceilometer, gnocchi://', 'agent_cpu_stock_current'),
         row('current ceilometer, gnocchi-metriccache://',
             'agent_cpu_plugin_current',
             vs='current ceilometer, gnocchi://')],
        ratio='cpu_s', higher_is_better=False, chart='agent_cpu_s'),
    _throughput(
        'sheepdog', 'download', 'Download through the store driver',
        'get() of one image on the emulator, consumed whole and checked '
        'by sha256; median of the timed repeats; vs: MB/s over Pike\'s.',
        [row('Pike in-tree driver, eventlet', 'pike_get_eventlet'),
         row('fastsheep, eventlet', 'fastsheep_get_eventlet',
             vs='Pike in-tree driver, eventlet'),
         row('fastsheep, native threads', 'fastsheep_get_threads',
             vs='Pike in-tree driver, eventlet'),
         row('fastsheep, eventlet, 256 MiB chunks',
             'fastsheep_get_eventlet_chunk256',
             vs='Pike in-tree driver, eventlet'),
         row('Pike in-tree driver, eventlet 0.20, 2.7',
             'pike_get_eventlet_py27'),
         row('fastsheep, eventlet 0.20, 2.7', 'fastsheep_get_eventlet_py27',
             vs='Pike in-tree driver, eventlet 0.20, 2.7'),
         row('fastsheep, eventlet 0.20, 256 MiB chunks, 2.7',
             'fastsheep_get_eventlet_chunk256_py27',
             vs='Pike in-tree driver, eventlet 0.20, 2.7'),
         row('ceiling: dog vdi read | reader', 'ceiling',
             vs='Pike in-tree driver, eventlet'),
         row('ceiling: dog | dd (shell pipe)', 'ceiling_shell_pipe',
             vs='Pike in-tree driver, eventlet')],
        chart='download_mb_s'),
    _throughput(
        'sheepdog', 'upload', 'Upload through the store driver',
        'add() of one image on the emulator, stored bytes checked by '
        'sha256; the 50 ms rows add 50 ms per dog write call; vs: MB/s '
        'over Pike\'s (50 ms rows: concurrent over serial).',
        [row('Pike in-tree driver, eventlet', 'pike_put_eventlet'),
         row('fastsheep, eventlet', 'fastsheep_put_eventlet',
             vs='Pike in-tree driver, eventlet'),
         row('fastsheep, native threads', 'fastsheep_put_threads',
             vs='Pike in-tree driver, eventlet'),
         row('Pike in-tree driver, eventlet 0.20, 2.7',
             'pike_put_eventlet_py27'),
         row('fastsheep, eventlet 0.20, 2.7', 'fastsheep_put_eventlet_py27',
             vs='Pike in-tree driver, eventlet 0.20, 2.7'),
         row('fastsheep, one write at a time, 50 ms/call',
             'fastsheep_put_serial_50ms'),
         row('fastsheep, writes in flight, 50 ms/call',
             'fastsheep_put_concurrent_50ms',
             vs='fastsheep, one write at a time, 50 ms/call')],
        chart='upload_mb_s'),
    Question(
        'sheepdog', 'hub_stall', 'Does a transfer freeze the eventlet hub?',
        'Worst lateness of a 1 ms greenthread ticker while a get and a put '
        'run; the idle-process control is the machine\'s own noise.',
        [('worst tick ms', 'hub_max_stall_ms'),
         ('worst without CPU wait ms', 'hub_stall_no_cpu_wait_ms'),
         ('idle control ms', 'idle_process_stall_ms'),
         ('get MB/s', 'get_mb_s'), ('put MB/s', 'put_mb_s')],
        [row('Pike in-tree driver', 'pike_hub_stall'),
         row('fastsheep', 'fastsheep_hub_stall', vs='Pike in-tree driver')],
        ratio='hub_max_stall_ms', higher_is_better=False),
    _throughput(
        'readahead', 'readahead_cold', 'Read-ahead where objects are slow',
        'get() on the emulator\'s cold model (a per-object latency in each '
        'dog process): one reader against the default (readers ramp up to '
        'N while one more pays) and 16 MiB windows; vs: MB/s over N=1.',
        [row('N=1, eventlet', 'readahead_get_single_eventlet'),
         row('default, eventlet', 'readahead_get_parallel_eventlet',
             vs='N=1, eventlet'),
         row('16 MiB windows, eventlet', 'readahead_get_w16_eventlet',
             vs='N=1, eventlet'),
         row('N=1, native threads', 'readahead_get_single_threads'),
         row('default, native threads', 'readahead_get_parallel_threads',
             vs='N=1, native threads')]),
    _throughput(
        'readahead', 'readahead_hot', 'Read-ahead on a hot cache',
        'get() on the emulator\'s hot model (each dog invocation pays a '
        'lookup and a 4 MiB inode read, as dog/vdi.c does): one reader '
        'against the default, 16 MiB windows, and readers pinned at 4; '
        'vs: MB/s over N=1.',
        [row('N=1', 'readahead_get_single_hot'),
         row('default', 'readahead_get_parallel_hot', vs='N=1'),
         row('16 MiB windows', 'readahead_get_w16_hot', vs='N=1'),
         row('4 readers pinned, 16 MiB windows',
             'readahead_get_fixed4_w16_hot', vs='N=1'),
         row('4 readers pinned, 64 MiB windows',
             'readahead_get_fixed4_w64_hot', vs='N=1')]),
    Question(
        'metriccache', 'lookup_py27', 'Metric lookup on Pike\'s CPython 2.7',
        'Pike\'s dispatcher loop (2.7 fnmatch: 100 patterns, then cleared) '
        'and the plugin over a shuffled mix of every stock metric name plus '
        '10% unknown ones; vs: Pike\'s time over the plugin\'s.',
        [('mix us', 'mix_us'), ('hit us', 'hit_us'), ('miss us', 'miss_us'),
         ('pattern hit us', 'pattern_hit_us')],
        [row('Pike loop, 2.7', 'metric_lookup_mix_us_py27', 'pike_'),
         row('plugin, 2.7', 'metric_lookup_mix_us_py27', 'plugin_',
             vs='Pike loop, 2.7')],
        ratio=('mix_us', 'hit_us'), higher_is_better=False,
        chart='lookup_us_py27', log_scale=True),
    _lookup(
        'metriccache', 'lookup', 'Metric and event lookup on Python 3',
        'Per-call time of finding a metric\'s (or event\'s) resource '
        'definition; best of repeats; vs: Pike\'s time over the '
        'plugin\'s (hit, else pattern hit).',
        [row('Pike loop, metric', 'metric_lookup_us', 'pike_'),
         row('plugin, metric', 'metric_lookup_us', 'plugin_',
             vs='Pike loop, metric'),
         row('Pike loop, oslo fallback fnmatch',
             'metric_lookup_fallback_fnmatch_us', 'pike_'),
         row('plugin, oslo fallback fnmatch',
             'metric_lookup_fallback_fnmatch_us', 'plugin_',
             vs='Pike loop, oslo fallback fnmatch'),
         row('Pike loop, 300 patterns', 'metric_lookup_300_patterns_us',
             'pike_'),
         row('plugin, 300 patterns', 'metric_lookup_300_patterns_us',
             'plugin_', vs='Pike loop, 300 patterns'),
         row('Pike loop, event', 'event_lookup_us', 'pike_'),
         row('plugin, event', 'event_lookup_us', 'plugin_',
             vs='Pike loop, event')],
        chart='lookup_us'),
    Question(
        'metriccache', 'record', 'record_metering_data of a sample batch',
        'Pike\'s gnocchi dispatcher and the plugin with the gnocchi client '
        'stubbed; vs: Pike\'s time over the plugin\'s.',
        [('ms', 'ms'), ('samples', 'samples'), ('resources', 'resources')],
        [row('Pike dispatcher, 2.7', 'record_batch_mix_ms_py27', 'pike_'),
         row('plugin, 2.7', 'record_batch_mix_ms_py27', 'plugin_',
             vs='Pike dispatcher, 2.7'),
         row('Pike dispatcher, 3', 'record_batch_ms', 'pike_'),
         row('plugin, 3', 'record_batch_ms', 'plugin_',
             vs='Pike dispatcher, 3')],
        ratio='ms', higher_is_better=False),
    Question(
        'metriccache', 'memo', 'Memory for names no definition lists',
        'RSS growth after looking up that many distinct unknown names.',
        [('RSS growth MiB', 'rss_growth_mib'), ('names', 'names'),
         ('bound', 'bound'), ('memo entries', 'memo_entries'),
         ('logged entries', 'logged_entries')],
        [row('Pike (unbounded logged set)', 'pike_logged_set_unknown_names'),
         row('plugin', 'metric_memo_unknown_names')]),
    Question(
        'fnmatch', 'oslo_fnmatch', 'oslo.utils fallback fnmatch cache',
        'Per-call time cycling through N distinct patterns, oslo.utils '
        '3.28.4 fallback path, unpatched and with the LRU patch.',
        [('us per call', 'us_per_call')],
        [row('unpatched, %s patterns' % n, 'oslo_fnmatch_unpatched_%s' % n)
         for n in (100, 101, 256, 257)] +
        [row('patched, %s patterns' % n, 'oslo_fnmatch_patched_%s' % n)
         for n in (100, 101, 256, 257)]),
]


def tables(report, fmt):
    """Every table of ``report`` rendered as ``fmt``: text, markdown or rst.

    The questions with rows in this run, then each section's rows no
    question names, then the ratios with their targets.
    """
    shown = set()
    out = []
    for question in QUESTIONS:
        cells = question.cells(report.rows)
        if not cells:
            continue
        shown |= question.row_names()
        out.append(_render(question.title, question.what,
                           [c.heading for c in question.columns],
                           [c.key for c in question.columns],
                           cells, bool(question.ratio), fmt))
    leftovers = collections.OrderedDict()
    for name, metrics in report.rows.items():
        if name not in shown:
            leftovers.setdefault(metrics['section'], []).append(
                (name, metrics))
    for section, rows in leftovers.items():
        keys = []
        for _name, metrics in rows:
            keys += [k for k in metrics if k != 'section' and k not in keys]
        out.append(_render('Other %s rows' % section,
                           'Rows not yet arranged into a question.',
                           keys, keys,
                           [(name, metrics, None) for name, metrics in rows],
                           False, fmt))
    out.append(_ratios(report, fmt))
    return '\n'.join(out)


def _render(title, what, headings, keys, cells, with_ratio, fmt):
    headings = ['row'] + headings + (['vs'] if with_ratio else [])
    body = []
    for label, values, ratio in cells:
        line = [label] + [fmt_value(values.get(k)) for k in keys]
        if with_ratio:
            line.append('' if ratio is None else '%sx' % fmt_value(ratio))
        body.append(line)
    # Columns no row of this run has are dropped.
    keep = [i for i in range(len(headings))
            if i == 0 or any(line[i] not in ('', '-') for line in body)]
    headings = [headings[i] for i in keep]
    body = [[line[i] for i in keep] for line in body]
    if fmt == 'rst':
        lines = [title, '-' * len(title), '', what, '',
                 '.. list-table::', '   :header-rows: 1', '']
        for line in [headings] + body:
            lines.append('   * - %s' % _rst_cell(line[0]))
            lines += [('     - %s' % _rst_cell(c)).rstrip()
                      for c in line[1:]]
        return '\n'.join(lines) + '\n'
    if fmt == 'markdown':
        lines = ['### %s' % title, '', what, '',
                 '| %s |' % ' | '.join(headings),
                 '|%s|' % '|'.join(['---'] + ['--:'] * (len(headings) - 1))]
        lines += ['| %s |' % ' | '.join(c.replace('|', '\\|') for c in line)
                  for line in body]
        return '\n'.join(lines) + '\n'
    widths = [max(len(line[i]) for line in [headings] + body)
              for i in range(len(headings))]
    lines = ['== %s ==' % title, what]
    for line in [headings] + body:
        lines.append('  '.join([line[0].ljust(widths[0])] +
                               [c.rjust(w) for c, w in
                                zip(line[1:], widths[1:])]).rstrip())
    return '\n'.join(lines) + '\n'


def _ratios(report, fmt):
    cells = []
    for name, value in report.ratios.items():
        target = report.targets.get(name)
        verdict = ''
        if target:
            verdict = '%s %s %s' % (target['op'], fmt_value(target['bound']),
                                    'met' if target['met'] else 'MISSED')
        cells.append((name, {'value': value, 'target': verdict}, None))
    return _render('Ratios and targets', 'Every ratio is taken from rows '
                   'measured in this run.', ['value', 'target'],
                   ['value', 'target'], cells, False, fmt)


def _rst_cell(text):
    # A literal keeps "dog | dd" and "*" from being read as markup.
    return '``%s``' % text if any(c in text for c in '|*`_') else text


def fmt_value(value):
    if value is None:
        return '-'
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return '%.3g' % value if abs(value) < 100 else '%.0f' % value
    if isinstance(value, list):
        return str(value)
    return str(value)
