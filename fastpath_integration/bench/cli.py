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

``python -m fastpath_integration.bench`` (``tox -e bench``): the command
line, with each section's own options (its ``add_arguments(parser)``),
then every section asked for, in the order of ``SECTIONS`` (then
``ON_REQUEST``), into one report; doc/source/contributor/bench.rst says
how to add a section.
"""

import argparse
import importlib
import os
import platform
import sys
import time

from fastpath_integration.bench import progress
from fastpath_integration.bench import report
from fastpath_integration.bench import runner

SECTIONS = ('sheepdog', 'readahead', 'metriccache', 'fnmatch', 'services',
            'real', 'concurrent', 'failover', 'faults', 'api26')
# Sections that run when --only names them or their module's
# requested(args) says the run asked for them (an option of theirs).
ON_REQUEST = ('revision',)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m fastpath_integration.bench',
        description=__doc__.splitlines()[0])
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
                        'sections: %s' % ', '.join(SECTIONS + ON_REQUEST))
    parser.add_argument('--strict', action='store_true',
                        help='exit 1 when a ratio misses its target')
    modules = [importlib.import_module('fastpath_integration.bench.' + name)
               for name in SECTIONS + ON_REQUEST]
    for module in modules:
        getattr(module, 'add_arguments', lambda parser: None)(parser)
    args = parser.parse_args(argv)
    args.size_bytes = runner.parse_size(args.size)
    try:
        chosen = sections(args, modules)
    except ValueError as exc:
        parser.error(str(exc))
    results = runner.Report()
    started = time.time()
    results.progress = progress.Progress(sum(
        len(table.rows) for _name, module in chosen
        for table in _tables(module)))
    try:
        for name, module in chosen:
            results.progress.start_section(name)
            results.tables += _tables(module)
            try:
                module.run(args, results)
            finally:
                results.evaluate(module.RATIOS, args)
    finally:
        results.progress.close()
    meta = {'python': platform.python_version(), 'cpus': os.cpu_count(),
            'machine': platform.machine(), 'size_bytes': args.size_bytes,
            'quick': args.quick, 'wall_s': round(time.time() - started, 1),
            'started': time.strftime('%Y-%m-%dT%H:%M:%SZ',
                                     time.gmtime(started))}
    sys.stdout.write('\n' + report.render(results, 'text') + ''.join(
        'note: %s\n' % text for text in results.notes))
    if args.json:
        report.write_json(results, meta, args.json)
    if args.report:
        for path in report.write(results, meta, args.report):
            sys.stderr.write('bench: wrote %s\n' % path)
    missed = results.missed()
    if missed:
        sys.stderr.write('bench: targets missed: %s\n' % ', '.join(missed))
    return 1 if missed and args.strict else 0


def sections(args, modules):
    """(name, module) of each section the run asks for, in run order.

    ``--only``'s; without it, every one of ``SECTIONS`` and those of
    ``ON_REQUEST`` whose ``requested(args)`` is true; ``--only`` naming
    one of ``ON_REQUEST`` whose option is not given is an error (a
    ValueError, as an unknown name is). modules: the sections' modules,
    in the order of ``SECTIONS + ON_REQUEST``.
    """
    names = SECTIONS + ON_REQUEST
    wanted = set(filter(None, args.only.split(','))) or set(SECTIONS) | set(
        name for name, module in zip(names, modules)
        if name in ON_REQUEST and module.requested(args))
    if wanted - set(names):
        raise ValueError('unknown section(s): %s' % ', '.join(
            sorted(wanted - set(names))))
    chosen = [(name, module) for name, module in zip(names, modules)
              if name in wanted]
    # Without its option such a section has nothing to measure, and its
    # targets would read as missed.
    idle = [name for name, module in chosen
            if name in ON_REQUEST and not module.requested(args)]
    if idle:
        raise ValueError('section(s) %s need their option: see --help'
                         % ', '.join(idle))
    return chosen


def _tables(module):
    return [value for value in vars(module).values()
            if isinstance(value, runner.Table)]
