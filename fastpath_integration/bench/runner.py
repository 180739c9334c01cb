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
"""The bench runner: every side-by-side benchmark section in one run.

A section is a module ``<name>_bench`` that declares its tables (``Table``
and their rows) and its ratios (``RATIOS``, made by ``ratio``), and has
``run(args, report)``, and optionally ``add_arguments(parser)``. This
module runs the sections, their workers (worker.py) and writes the report;
doc/source/bench-sheepdog.rst says how to add a section. Section modules
are imported by workers on CPython 2.7 too, so this module's top level
stays in the 2.7/3 common subset.
"""

import collections
import json
import operator
import os
import subprocess
import sys

import worker

SECTIONS = ('sheepdog', 'readahead', 'metriccache', 'fnmatch', 'services',
            'real', 'concurrent')
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
    """Rows, ratios and targets of one run, and how they are printed."""

    def __init__(self):
        self.rows = collections.OrderedDict()
        self.ratios = collections.OrderedDict()
        self.targets = {}
        self.notes = []
        self.vars = {}
        self.tables = []

    def add(self, row, **metrics):
        for key in MEDIANS:
            if isinstance(metrics.get(key), list):
                metrics[key] = round(worker.median(metrics[key]), 2)
        self.rows.setdefault(row.key(self), {}).update(metrics)

    def failed(self, row, exc):
        lines = [line for line in str(exc).splitlines() if line.strip()]
        self.rows[row.key(self)] = {'status': 'FAILED: %s' % (
            lines[-1].strip()[:300] if lines else type(exc).__name__)}
        sys.stderr.write('bench: row %s FAILED:\n%s\n' % (row.key(self), exc))

    def note(self, text):
        self.notes.append(text)

    def measure(self, row, target, params, python=None, env=None):
        """Run one worker and record its result as ``row``."""
        try:
            result = run_worker(target, params, python, env)
        except RuntimeError as exc:
            self.failed(row, exc)
            return None
        self.add(row, **result)
        return result

    def interleave(self, rows, target, rounds, env=None):
        """Rows whose ratio matters, measured in alternating rounds.

        ``rows`` is [(row, params)]; each round runs every row's worker
        once, in the reverse order of the round before, so that a slow
        spell of this shared machine lands on both sides of the ratio.
        A row's MB/s is over the median of its rounds' times; its peak
        figures (``PEAKS``) the largest, its ``MEDIANS`` the median.
        """
        merged = {}
        for number in range(rounds):
            for row, params in rows if number % 2 == 0 else rows[::-1]:
                try:
                    result = run_worker(target, dict(params, repeats=1),
                                        env=env)
                except RuntimeError as exc:
                    return self.failed(row, exc)
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
            result['mb_s'] = round(result['size'] / worker.median(
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

    def render(self, fmt):
        """Every table with rows in this run, then the ratios, as fmt."""
        out = []
        for table in self.tables:
            cells = []
            for row in table.rows:
                metrics = self.rows.get(row.key(self))
                if metrics is None:
                    continue
                values = [metrics.get(row.prefix + key)
                          for _heading, key in table.columns]
                if 'status' in metrics:
                    values = [metrics['status']] + [None] * (len(values) - 1)
                vs = table.vs(row, self) if row.vs else None
                cells.append([row.label.format(**self.vars)] + values +
                             [vs and '%sx' % _fmt(vs)])
            if cells:
                out.append(_render(fmt, table.title, table.what, ['row'] + [
                    h for h, _key in table.columns] + ['vs'], cells))
        cells = []
        for name, value in self.ratios.items():
            target = self.targets.get(name)
            cells.append([name, value, target and '%s %s %s' % (
                target['op'], _fmt(target['bound']),
                'met' if target['met'] else 'MISSED')])
        out.append(_render(fmt, 'Ratios and targets', 'Every ratio is '
                           'taken from rows measured in this run.',
                           ['ratio', 'value', 'target'], cells))
        return '\n'.join(out)


def _fmt(value):
    if value is None:
        return '-'
    if isinstance(value, float):
        return '%.3g' % value if abs(value) < 100 else '%.0f' % value
    return str(value)


def _render(fmt, title, what, headings, cells):
    body = [[_fmt(c) for c in line] for line in cells]
    # Columns no row of this run has are dropped.
    keep = [i for i in range(len(headings))
            if i == 0 or any(line[i] != '-' for line in body)]
    rows = [[line[i] for i in keep] for line in [headings] + body]
    if fmt == 'rst':
        lines = [title, '-' * len(title), '', what, '', '.. list-table::',
                 '   :header-rows: 1', '']
        for line in rows:
            # A literal keeps "dog | dd" and "*" from being read as markup.
            line = ['``%s``' % c if any(x in c for x in '|*`_') else c
                    for c in line]
            lines += ['   * - ' + line[0]] + [
                ('     - ' + c).rstrip() for c in line[1:]]
        return '\n'.join(lines) + '\n'
    if fmt == 'markdown':
        lines = ['### ' + title, '', what, '']
        lines += ['| %s |' % ' | '.join(c.replace('|', '\\|') for c in line)
                  for line in rows]
        lines.insert(5, '|---' + '|--:' * (len(rows[0]) - 1) + '|')
        return '\n'.join(lines) + '\n'
    widths = [max(len(line[i]) for line in rows) for i in range(len(keep))]
    return '\n'.join(['== %s ==' % title, what] + [
        '  '.join([line[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(line[1:], widths[1:])]).rstrip()
        for line in rows]) + '\n'


def run_worker(target, params, python=None, env=None, timeout=1800):
    """Run ``worker.py MODULE:FUNCTION`` with params; return its result.

    ``python`` is another interpreter (the Pike 2.7 venv's); the worker
    puts this tree on its path, so the tree under test is what runs. A
    worker that fails raises RuntimeError with its stderr's tail.
    """
    child_env = dict(os.environ, **(env or {}))
    if python:
        child_env.pop('VIRTUAL_ENV', None)
    proc = subprocess.run(
        [python or sys.executable, os.path.join(worker.HERE, 'worker.py'),
         target], input=json.dumps(params).encode(), env=child_env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if proc.returncode:
        raise RuntimeError('worker %s failed (exit %d):\n%s' % (
            target, proc.returncode,
            proc.stderr.decode('utf-8', 'replace')[-3000:]))
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def pike27_python():
    """CPython 2.7 of the cached pike27-bench venv, with Pike's pins."""
    sys.path.insert(0, worker.TOPDIR)
    from fastpath_integration.harness import venvs
    return os.path.join(venvs.ensure_venv('pike27-bench'), 'bin', 'python')


def parse_size(text):
    """'1G', '256M', '4096' (sheepdog CLI suffixes) in bytes."""
    text = text.strip().upper().rstrip('B') or '0'
    suffix = text[-1] if text[-1] in _SUFFIXES else ''
    return int(float(text[:len(text) - len(suffix)]) * _SUFFIXES[suffix])


def write_random_file(path, size):
    """size seeded pseudo-random bytes, incompressible; their sha256."""
    import hashlib
    import random
    rng = random.Random(20171110)
    digest = hashlib.sha256()
    with open(path, 'wb') as dst:
        while size:
            block = rng.randbytes(min(size, 16 << 20))
            dst.write(block)
            digest.update(block)
            size -= len(block)
    return digest.hexdigest()


def write_report(report, meta, directory):
    """DIR/report.md, DIR/report.rst and one PNG per charted table."""
    os.makedirs(directory, exist_ok=True)
    header = 'Python %s, %s CPUs; quick: %s; wall %s s.' % (
        meta['python'], meta['cpus'], meta['quick'], meta['wall_s'])
    images = [(t.title, _chart(report, t, meta, directory))
              for t in report.tables if t.chart]
    title = 'Bench run of %s' % meta['started']
    with open(os.path.join(directory, 'report.md'), 'w') as out:
        out.write('# %s\n\n%s\n\n%s' % (title, header,
                                        report.render('markdown')))
        out.writelines('\n![%s](%s)\n' % (t, os.path.basename(p))
                       for t, p in images if p)
        out.writelines('\n- %s' % text for text in report.notes)
    with open(os.path.join(directory, 'report.rst'), 'w') as out:
        out.write('%s\n%s\n\n%s Written by ``tox -e bench -- --report '
                  'DIR``.\n\n%s' % (title, '=' * len(title), header,
                                    report.render('rst')))
        # Notes are free text: a literal block, read as no markup.
        out.write('\nNotes::\n\n' + ''.join(
            '    %s\n' % text for text in report.notes))
    return [p for _t, p in images if p] + [
        os.path.join(directory, 'report.%s' % ext) for ext in ('md', 'rst')]


def _chart(report, table, meta, directory):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    heading, key = table.columns[0]
    bars = []
    for row in table.rows:
        try:
            bars.append((row.label.format(**report.vars),
                         row.metric(report, key)))
        except Missing:
            continue
    if not bars:
        return None
    figure, axes = pyplot.subplots(figsize=(8, 0.5 * len(bars) + 1.5))
    drawn = axes.barh(range(len(bars)), [v for _l, v in bars],
                      color='#3572a5')
    axes.set_yticks(range(len(bars)))
    axes.set_yticklabels([label for label, _v in bars])
    axes.invert_yaxis()
    if table.log_scale:
        axes.set_xscale('log')
    axes.set_xlabel(heading)
    axes.set_title(table.title, fontsize=10)
    figure.text(0.99, 0.01, 'bench run %s' % meta['started'], fontsize=7,
                ha='right', va='bottom', color='#666666')
    for bar, (_label, value) in zip(drawn, bars):
        axes.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                  ' ' + _fmt(value), va='center', fontsize=8)
    figure.tight_layout()
    path = os.path.join(directory, table.chart + '.png')
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return path


def main(argv=None):
    import argparse
    import importlib
    import platform
    import time
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', metavar='FILE',
                        help='also write rows, ratios and targets as JSON')
    parser.add_argument('--report', metavar='DIR',
                        help='also write the tables as DIR/report.md and '
                             'report.rst, and each table\'s chart as PNG')
    parser.add_argument('--size', default='1G',
                        help='image size for transfer rows (default 1G)')
    parser.add_argument('--quick', action='store_true',
                        help='small sizes and few repeats')
    parser.add_argument('--only', default='', help='comma-separated '
                        'sections: %s' % ', '.join(SECTIONS))
    parser.add_argument('--strict', action='store_true',
                        help='exit 1 when a ratio misses its target')
    modules = [importlib.import_module(name + '_bench') for name in SECTIONS]
    for module in modules:
        getattr(module, 'add_arguments', lambda parser: None)(parser)
    args = parser.parse_args(argv)
    args.size_bytes = parse_size(args.size)
    wanted = set(filter(None, args.only.split(','))) or set(SECTIONS)
    if wanted - set(SECTIONS):
        parser.error('unknown section(s): %s'
                     % ', '.join(sorted(wanted - set(SECTIONS))))
    report = Report()
    started = time.time()
    for name, module in zip(SECTIONS, modules):
        if name not in wanted:
            continue
        sys.stderr.write('bench: running %s\n' % name)
        report.tables += [v for v in vars(module).values()
                          if isinstance(v, Table)]
        try:
            module.run(args, report)
        finally:
            report.evaluate(module.RATIOS, args)
    meta = {'python': platform.python_version(), 'cpus': os.cpu_count(),
            'machine': platform.machine(), 'size_bytes': args.size_bytes,
            'quick': args.quick, 'wall_s': round(time.time() - started, 1),
            'started': time.strftime('%Y-%m-%dT%H:%M:%SZ',
                                     time.gmtime(started))}
    sys.stdout.write('\n' + report.render('text') + ''.join(
        'note: %s\n' % text for text in report.notes))
    if args.json:
        with open(args.json, 'w') as out:
            json.dump(report.as_dict(meta), out, indent=2, sort_keys=True)
    if args.report:
        for path in write_report(report, meta, args.report):
            sys.stderr.write('bench: wrote %s\n' % path)
    missed = report.missed()
    if missed:
        sys.stderr.write('bench: targets missed: %s\n' % ', '.join(missed))
    return 1 if missed and args.strict else 0


if __name__ == '__main__':
    import bench  # one module object: the sections import it by name
    sys.exit(bench.main())
