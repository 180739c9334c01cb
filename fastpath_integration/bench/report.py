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
"""How a run is printed: text tables, JSON, and ``--report DIR``.

``render`` writes every table that has rows in this run, then the ratios,
as text, markdown or reStructuredText; ``write`` makes ``--report``'s
report.md and report.rst and one PNG chart per charted table.
"""

import json
import os

from fastpath_integration.bench import runner


def render(report, fmt):
    """Every table with rows in this run, then the ratios, as fmt."""
    out = []
    for table in report.tables:
        cells = []
        for row in table.rows:
            metrics = report.rows.get(row.key(report))
            if metrics is None:
                continue
            values = [metrics.get(row.prefix + key)
                      for _heading, key in table.columns]
            if 'status' in metrics:
                values = [metrics['status']] + [None] * (len(values) - 1)
            vs = table.vs(row, report) if row.vs else None
            cells.append([row.label.format(**report.vars)] + values +
                         [vs and '%sx' % _fmt(vs)])
        if cells:
            out.append(_render(fmt, table.title, table.what, ['row'] + [
                h for h, _key in table.columns] + ['vs'], cells))
    cells = []
    for name, value in report.ratios.items():
        target = report.targets.get(name)
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


def write(report, meta, directory):
    """DIR/report.md, DIR/report.rst and one PNG per charted table."""
    os.makedirs(directory, exist_ok=True)
    header = 'Python %s, %s CPUs; quick: %s; wall %s s.' % (
        meta['python'], meta['cpus'], meta['quick'], meta['wall_s'])
    images = [(t.title, _chart(report, t, meta, directory))
              for t in report.tables if t.chart]
    title = 'Bench run of %s' % meta['started']
    with open(os.path.join(directory, 'report.md'), 'w') as out:
        out.write('# %s\n\n%s\n\n%s' % (title, header,
                                        render(report, 'markdown')))
        out.writelines('\n![%s](%s)\n' % (t, os.path.basename(p))
                       for t, p in images if p)
        out.writelines('\n- %s' % text for text in report.notes)
    with open(os.path.join(directory, 'report.rst'), 'w') as out:
        out.write('%s\n%s\n\n%s Written by ``tox -e bench -- --report '
                  'DIR``.\n\n%s' % (title, '=' * len(title), header,
                                    render(report, 'rst')))
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
        except runner.Missing:
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


def write_json(report, meta, path):
    with open(path, 'w') as out:
        json.dump(report.as_dict(meta), out, indent=2, sort_keys=True)
