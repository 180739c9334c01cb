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
"""Rows, tables, ratios and the alternating rounds that measure them.

A section declares its tables (``Table`` and their rows) and its ratios
(``RATIOS``, made by ``ratio``); its ``run(args, report)`` measures rows
into a ``Report``, each in a worker child (``workers.run``), the rows
whose ratio matters in alternating rounds (``Report.interleave``). The
workers of the ``_py27`` rows import section modules on CPython 2.7, so
this module's top level stays in the 2.7/3 common subset.
"""

import collections
import operator
import sys

from fastpath_integration.bench import progress
from fastpath_integration.bench import workers

THROUGHPUT = (('MB/s', 'mb_s'), ('size MiB', 'size_mib'),
              ('peak RSS MiB', 'peak_rss_mib'),
              ('RSS growth MiB', 'rss_growth_mib'))
# Figures a row reports as the largest over its interleaved rounds.
PEAKS = ('rss_growth_mib', 'peak_rss_mib', 'peak_children', 'peak_fds')
# Figures a worker reports as a list of one; a row reports the median.
MEDIANS = ('cpu_s_gib', 'sheep_cpu_s_gib')
_OPS = {'>=': operator.ge, '<=': operator.le}
_SUFFIXES = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}


class Missing(Exception):
    """A ratio's row was not measured (or failed) in this run."""


class Row(object):
    """One row of a table; ``name`` is its key in the JSON.

    ``name`` and ``label`` may hold ``{var}`` fields that the section
    sets in ``report.vars`` (an option's value). ``prefix`` picks this
    row's metrics out of a result that holds two sides (``pike_ms``,
    ``plugin_ms``); ``vs`` is the row the table's ratio column divides by.
    """

    def __init__(self, table, name, label, vs=None, prefix=''):
        self.table, self.name, self.label = table, name, label
        self.vs, self.prefix = vs, prefix

    def key(self, report):
        return self.name.format(**report.vars)

    def metric(self, report, key):
        value = report.rows.get(self.key(report), {}).get(self.prefix + key)
        if value is None or isinstance(value, bool):
            raise Missing(self.key(report))
        return float(value)


class Table(object):
    """One question: its rows, the columns that answer it, its chart.

    ``ratio`` is the column key (or keys: the first both rows have) of the
    "vs" column; with ``lower_is_better`` (times, CPU seconds) it reads
    baseline over row, so that every ratio reads "times better".
    """

    def __init__(self, title, what, columns, ratio=None,
                 lower_is_better=False, chart=None, log_scale=False):
        self.title, self.what, self.columns = title, what, columns
        self.ratio = (ratio,) if isinstance(ratio, str) else ratio
        self.lower_is_better = lower_is_better
        self.chart, self.log_scale = chart, log_scale
        self.rows = []

    def row(self, name, label, vs=None, prefix=''):
        row = Row(self, name, label, vs, prefix)
        self.rows.append(row)
        return row

    def pair(self, name, pike_label, plugin_label):
        """Pike's side and the plugin's of one two-sided result."""
        pike = self.row(name, pike_label, prefix='pike_')
        return pike, self.row(name, plugin_label, pike, 'plugin_')

    def vs(self, row, report):
        for key in self.ratio or ():
            try:
                mine, base = row.metric(report, key), \
                    row.vs.metric(report, key)
            except Missing:
                continue
            if mine and base:
                return base / mine if self.lower_is_better else mine / base
        return None


class Ratio(object):

    def __init__(self, name, num, den, key, op, bound):
        self.name, self.num, self.den = name, num, den
        self.key, self.op, self.bound = key, op, bound

    def value(self, report):
        if callable(self.num) and not isinstance(self.num, Row):
            return self.num(lambda row, key: row.metric(report, key))
        values = []
        for key in self.key:
            value = self.num.metric(report, key)
            values.append(value / self.den.metric(report, key)
                          if self.den else value)
        return min(values)


def ratio(name, num, den=None, key='mb_s', op=None, bound=None):
    """A ratio (num over den on ``key``) or a value (no den), and its target.

    ``key`` may be a tuple: the lowest ratio over those keys is taken. For
    anything else ``num`` is a function of ``metric(row, key)``. ``bound``
    may be a function of the run's arguments. A row that was not measured
    makes the ratio None and its target missed.
    """
    return Ratio(name, num, den, (key,) if isinstance(key, str) else key,
                 op, bound)


class Report(object):
    """Rows, ratios and targets of one run (``report`` prints them)."""

    def __init__(self):
        self.rows = collections.OrderedDict()
        self.ratios = collections.OrderedDict()
        self.targets = {}
        self.notes = []
        self.vars = {}
        self.tables = []
        # The runner's (cli.main); silent for a Report used alone.
        self.progress = progress.Silent()

    def add(self, row, **metrics):
        for key in MEDIANS:
            if isinstance(metrics.get(key), list):
                metrics[key] = round(workers.median(metrics[key]), 2)
        self.rows.setdefault(row.key(self), {}).update(metrics)
        self.progress.recorded(row.key(self))

    def failed(self, row, exc):
        lines = [line for line in str(exc).splitlines() if line.strip()]
        self.rows[row.key(self)] = {'status': 'FAILED: %s' % (
            lines[-1].strip()[:300] if lines else type(exc).__name__)}
        self.progress.recorded(row.key(self))
        sys.stderr.write('bench: row %s FAILED:\n%s\n' % (row.key(self), exc))

    def note(self, text):
        self.notes.append(text)

    def measure(self, row, function, params, python=None, env=None):
        """function(params) in a worker; its result recorded as ``row``."""
        self.progress.start_row(row.key(self))
        try:
            result = workers.run(function, params, python, env)
        except RuntimeError as exc:
            self.failed(row, exc)
            return None
        self.add(row, **result)
        return result

    def interleave(self, rows, function, rounds, env=None, here=False):
        """Rows whose ratio matters, measured in alternating rounds.

        ``rows`` is [(row, params)]; each round runs every row's worker
        once, in the reverse order of the round before, so that a slow
        spell of this shared machine lands on both sides of the ratio.
        A row's MB/s is over the median of its rounds' times; its peak
        figures (``PEAKS``) the largest, its ``MEDIANS`` the median.
        ``here``: function(params) runs in this process (it drives
        services or processes of its own), not in a worker.
        """
        merged = {}
        for number in range(rounds):
            for row, params in rows if number % 2 == 0 else rows[::-1]:
                self.progress.start_row(row.key(self), number + 1, rounds)
                try:
                    result = function(params) if here else workers.run(
                        function, dict(params, repeats=1), env=env)
                except RuntimeError as exc:
                    # No round of these rows runs any more: the others
                    # are done as far as this run goes.
                    for other, _params in rows:
                        self.progress.recorded(other.key(self))
                    return self.failed(row, exc)
                self.progress.round_done(row.key(self), rounds)
                both = merged.setdefault(row, dict(result, times_s=[], **{
                    key: [] for key in MEDIANS if key in result}))
                both['times_s'] += result['times_s']
                for key in MEDIANS:
                    if key in result:
                        both[key] += result[key]
                for key in PEAKS:
                    if key in result:
                        both[key] = max(both[key], result[key])
        for row, _params in rows:
            result = merged[row]
            result['mb_s'] = round(result['size'] / workers.median(
                result['times_s']) / 1e6, 1)
            self.add(row, **result)

    def evaluate(self, ratios, args):
        for spec in ratios:
            try:
                value = round(spec.value(self), 3)
            except (Missing, ZeroDivisionError):
                value = None
            self.ratios[spec.name] = value
            if spec.op:
                bound = spec.bound(args) if callable(spec.bound) \
                    else spec.bound
                self.targets[spec.name] = {
                    'op': spec.op, 'bound': bound,
                    'met': value is not None and _OPS[spec.op](value, bound)}

    def missed(self):
        return sorted(n for n, t in self.targets.items() if not t['met'])

    def as_dict(self, meta):
        return {'meta': meta, 'rows': self.rows, 'ratios': self.ratios,
                'targets': self.targets, 'notes': self.notes}


def parse_size(text):
    """'1G', '256M', '4096' (sheepdog CLI suffixes) in bytes."""
    text = text.strip().upper().rstrip('B') or '0'
    suffix = text[-1] if text[-1] in _SUFFIXES else ''
    return int(float(text[:len(text) - len(suffix)]) * _SUFFIXES[suffix])
