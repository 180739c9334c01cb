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
"""The bench's api26 section: glance 2026.1's image API against dog.

    tox -e bench -- --only api26 [--size 1G] [--api26-rounds 3]

``run`` starts ``glance26`` (the measure, described there) in the cached
``openstack-2026.1`` venv, whose glance 32.0.0 needs Python 3.13, and
adds the rows of the JSON it writes.
"""

import json
import os
import subprocess
import sys
import tempfile

from fastpath_integration.bench import clusters
from fastpath_integration.bench import glance26
from fastpath_integration.bench import runner
from fastpath_integration.harness import venvs

MIB = glance26.MIB

TABLE = runner.Table(
    'glance 2026.1 image API on a real cluster (Python 3.13)',
    'glance-api 32.0.0 under uWSGI, fastsheep the default backend '
    '(glance\'s sha512 hashing on), 1 node; median of alternating '
    'rounds; vs: MB/s over dog\'s (copy-image: over a GET plus a PUT).',
    (('MB/s', 'mb_s'), ('s', 'median_s'), ('peak RSS MiB', 'peak_rss_mib')),
    ratio='mb_s')
DOG_WRITE = TABLE.row('api26_dog_write', 'dog vdi write < file')
PUT = TABLE.row('api26_put', 'PUT /v2/images/ID/file', DOG_WRITE)
DOG_READ = TABLE.row('api26_dog_read', 'dog vdi read | dd')
GET = TABLE.row('api26_get', 'GET /v2/images/ID/file', DOG_READ)
GET_PLUS_PUT = TABLE.row('api26_get_plus_put', 'GET, then PUT to the '
                         'second backend')
COPY = TABLE.row('api26_copy', 'copy-image to the second backend',
                 GET_PLUS_PUT)
ROWS = {'dog_write': DOG_WRITE, 'api26_put': PUT, 'dog_read': DOG_READ,
        'api26_get': GET, 'get_plus_put': GET_PLUS_PUT, 'api26_copy': COPY}
RATIOS = (
    runner.ratio('api26_put_vs_dog_write', PUT, DOG_WRITE, op='>=',
                 bound=1.0),
    runner.ratio('api26_get_vs_dog_read', GET, DOG_READ, op='>=',
                 bound=1.0),
    # Reported: glance stages the whole image, then imports it.
    runner.ratio('api26_copy_vs_get_plus_put', COPY, GET_PLUS_PUT),
)


def add_arguments(parser):
    parser.add_argument('--api26-rounds', type=int, default=None,
                        help='rounds of the glance 2026.1 API rows '
                        '(default 3; 2 with --quick, at 64 MiB)')


def run(args, report):
    """The rows, from main() run in the 2026.1 venv on Python 3.13."""
    if not clusters.real_available(args, report):
        return
    rounds = args.api26_rounds or (2 if args.quick else 3)
    size = 64 * MIB if args.quick else args.size_bytes
    try:
        venv = venvs.ensure_venv(glance26.VENV,
                                 python=venvs.interpreter(glance26.PYTHON))
        top = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))
        with tempfile.NamedTemporaryFile(suffix='.json') as out:
            subprocess.run(
                [os.path.join(venv, 'bin', 'python'), '-m',
                 'fastpath_integration.bench.glance26',
                 '--size', str(size), '--rounds', str(rounds),
                 '--json', out.name],
                check=True, stdout=sys.stderr,
                env=venvs.venv_env(venv, {'PYTHONPATH': top}))
            with open(out.name) as f:
                result = json.load(f)
    except Exception as exc:
        for row in ROWS.values():
            report.failed(row, exc)
        return
    for label, row in ROWS.items():
        metrics = dict(result['rows'][label])
        if row in (PUT, GET, COPY):
            metrics['peak_rss_mib'] = result['glance_api_peak_rss_mib']
        report.add(row, **metrics)
    report.note('api26: %d round(s) of %d MiB, one node; glance-api peak '
                'RSS %.1f MiB' % (rounds, size // MIB,
                                  result['glance_api_peak_rss_mib']))
