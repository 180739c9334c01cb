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
"""The project's main job: every side-by-side benchmark in one run.

Each section module (``SECTIONS``) has ``run(args, report)``; it may add
its own options with ``add_arguments(parser)``. The tables printed at the
end, one per question, are arranged in tables.py. Usage::

    tox -e bench -- [--json FILE] [--report DIR] [--size 1G] [--quick]
                    [--only NAME,...]
"""

import argparse
import importlib
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

# Order is the order of the printed table.
SECTIONS = (
    'sheepdog_bench',
    'readahead_bench',
    'metriccache_bench',
    'fnmatch_bench',
    'services_bench',
)


def _section_name(module_name):
    return module_name[:-len('_bench')]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', metavar='FILE',
                        help='also write rows, ratios and targets as JSON')
    parser.add_argument('--report', metavar='DIR',
                        help='also write the tables as DIR/report.md and '
                             'one bar chart per question as PNG')
    parser.add_argument('--size', default='1G',
                        help='image size for transfer rows (default 1G)')
    parser.add_argument('--quick', action='store_true',
                        help='small sizes and few repeats: under a minute')
    parser.add_argument('--only', default='',
                        help='comma-separated sections: %s' % ', '.join(
                            _section_name(s) for s in SECTIONS))
    parser.add_argument('--strict', action='store_true',
                        help='exit 1 when a ratio misses its target')
    modules = [importlib.import_module(name) for name in SECTIONS]
    for module in modules:
        if hasattr(module, 'add_arguments'):
            module.add_arguments(parser)
    args = parser.parse_args(argv)
    args.size_bytes = common.parse_size(args.size)
    wanted = set(filter(None, args.only.split(',')))
    unknown = wanted - set(_section_name(s) for s in SECTIONS)
    if unknown:
        parser.error('unknown section(s): %s' % ', '.join(sorted(unknown)))

    report = common.Report()
    started = time.time()
    for name, module in zip(SECTIONS, modules):
        if wanted and _section_name(name) not in wanted:
            continue
        sys.stderr.write('bench: running %s\n' % _section_name(name))
        module.run(args, report)
    meta = {'python': platform.python_version(),
            'machine': platform.machine(), 'cpus': os.cpu_count(),
            'size_bytes': args.size_bytes, 'quick': args.quick,
            'wall_s': round(time.time() - started, 1),
            'started': time.strftime('%Y-%m-%dT%H:%M:%SZ',
                                     time.gmtime(started))}
    report.print_table()
    if args.json:
        with open(args.json, 'w') as out:
            json.dump(report.as_dict(meta), out, indent=2, sort_keys=True)
    if args.report:
        import charts
        for path in charts.write_report(report, meta, args.report):
            sys.stderr.write('bench: wrote %s\n' % path)
    missed = report.missed()
    if missed:
        sys.stderr.write('bench: targets missed: %s\n' % ', '.join(missed))
        if args.strict:
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
