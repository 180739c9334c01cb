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
"""``--report DIR``: the run's tables as Markdown and reStructuredText,
its charts as PNG.

matplotlib is imported only here, and only when a report is asked for,
so the plain bench run needs no plotting library.
"""

import os

import tables


def write_report(report, meta, directory):
    """Write report.md and one PNG per charted question; return paths."""
    if not os.path.isdir(directory):
        os.makedirs(directory)
    written = []
    images = []
    for question in tables.QUESTIONS:
        if not question.chart:
            continue
        cells = question.cells(report.rows)
        if cells:
            path = os.path.join(directory, question.chart + '.png')
            _bar_chart(question, cells, meta, path)
            images.append((question.title, os.path.basename(path)))
            written.append(path)
    path = os.path.join(directory, 'report.md')
    with open(path, 'w') as out:
        out.write('# openstack-fastpath bench, %s\n\n' % meta['started'])
        out.write('Python %s, %s CPUs, %s; quick: %s; wall %s s.\n\n'
                  % (meta['python'], meta['cpus'], meta['machine'],
                     meta['quick'], meta['wall_s']))
        out.write(tables.tables(report, 'markdown'))
        for title, image in images:
            out.write('\n![%s](%s)\n' % (title, image))
        for text in report.notes:
            out.write('\n- %s' % text)
        out.write('\n')
    written.append(path)
    path = os.path.join(directory, 'report.rst')
    with open(path, 'w') as out:
        title = 'Bench run of %s' % meta['started']
        out.write('%s\n%s\n\nPython %s, %s CPUs; quick: %s; wall %s s. '
                  'Written by ``tox -e bench -- --report DIR``.\n\n'
                  % (title, '=' * len(title), meta['python'], meta['cpus'],
                     meta['quick'], meta['wall_s']))
        out.write(tables.tables(report, 'rst'))
        if report.notes:
            # Notes are free text: a literal block, so nothing in them
            # is read as markup.
            out.write('\nNotes::\n\n')
            for text in report.notes:
                out.write('    %s\n' % text)
    written.append(path)
    return written


def _bar_chart(question, cells, meta, path):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    column = question.columns[0]
    labels = [label for label, values, _ratio in cells
              if values.get(column.key) is not None]
    values = [values[column.key] for _label, values, _ratio in cells
              if values.get(column.key) is not None]
    figure, axes = pyplot.subplots(figsize=(8, 0.5 * len(labels) + 1.5))
    bars = axes.barh(range(len(labels)), values, color='#3572a5')
    axes.set_yticks(range(len(labels)))
    axes.set_yticklabels(labels)
    axes.invert_yaxis()
    if question.log_scale:
        axes.set_xscale('log')
    axes.set_xlabel(column.heading)
    # Rows name their own interpreter; the runner's is not theirs.
    axes.set_title(question.title, fontsize=10)
    figure.text(0.99, 0.01, 'bench run %s' % meta['started'], fontsize=7,
                ha='right', va='bottom', color='#666666')
    for bar, value in zip(bars, values):
        axes.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                  ' ' + tables.fmt_value(value), va='center', fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
