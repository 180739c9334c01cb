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
"""glance 2026.1's image API on a real cluster against dog: the measure.

    python -m fastpath_integration.bench.glance26 [--size 1G]
        [--rounds 3] [--nodes 1] [--json FILE]

Run by the bench's ``api26`` section (``api26.run``) in the cached
``openstack-2026.1`` venv: glance 32.0.0 needs Python 3.13, which the
bench's own interpreter is not, so nothing here imports the bench's
runner.

glance-api 32.0.0 under uWSGI from the tempest env's cached
``openstack-2026.1`` venv (Python 3.13, the line's glance series
applied), fastsheep its default backend on a real sheepdog cluster and
``fastsheep2`` on a second one, glance's own hashing on (sha512). Each
round, in alternating order within each pair:

- ``PUT /v2/images/{id}/file`` of the source file against ``dog vdi
  write`` of the same bytes;
- ``GET /v2/images/{id}/file`` of that image against ``dog vdi read`` of
  its VDI into ``dd``;
- copy-image of that image to ``fastsheep2`` (import call until the
  image lists the store) against that round's GET plus PUT.

Rows are the median of the rounds; ratios read "times better" for the
API side (``api26_put_vs_dog_write`` is dog's time over the PUT's). The
peak RSS is the largest VmHWM among glance-api's uWSGI processes after
the run. curl moves the bytes (as an operator would); no keystone (the
harness's trusting pipeline).
"""

import argparse
import json
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import fixtures
import requests

from fastpath_integration.bench import glance_api
from fastpath_integration.harness import glance
from fastpath_integration.harness import infrastructure
from fastpath_integration.harness import processes
from fastpath_integration.harness import sheepdog
from fastpath_integration.harness import venvs

LOG = logging.getLogger('fastpath_integration')
MIB = 1 << 20
VENV = 'openstack-2026.1'
SECOND = 'fastsheep2'
PYTHON = (3, 13)
COPY_TIMEOUT = 1800


def parse_size(text):
    units = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}
    text = text.strip().upper().rstrip('B').rstrip('I')
    if text[-1:] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


class Api26(fixtures.Fixture):
    """PostgreSQL, two clusters and glance-api 2026.1 on them."""

    def __init__(self, rundir, nodes, copies):
        super(Api26, self).__init__()
        self.rundir = rundir
        self.nodes, self.copies = nodes, copies

    def _setUp(self):
        venvs.ensure_venv(VENV)
        venvs.install_wheel(self.rundir, (VENV,))
        pg = self.useFixture(infrastructure.PostgreSQL(
            self.rundir, databases=('glance',)))
        self.cluster = self.useFixture(sheepdog.SheepdogCluster(
            nodes=self.nodes, copies=self.copies))
        self.second = self.useFixture(sheepdog.SheepdogCluster())
        self.api = self.useFixture(glance.Glance(
            self.rundir, 'glance26', sheepdog=self.cluster, server='uwsgi',
            db_url=pg.urls['glance'], backends={SECOND: self.second},
            venv=VENV, settings=[
                ('DEFAULT', 'enabled_import_methods',
                 '[glance-direct,copy-image]'),
                ('oslo_messaging_notifications', 'driver', 'noop')]))


def timed(cmd, **kwargs):
    started = time.monotonic()
    subprocess.run(cmd, check=True, **kwargs)
    return time.monotonic() - started


def image_json(api, image):
    resp = requests.get('%s/v2/images/%s' % (api.url, image),
                        headers=glance.ADMIN_HEADERS, timeout=60)
    resp.raise_for_status()
    return resp.json()


def put(api, path, size):
    image = glance_api.create_image(api.url)
    _out, metrics = glance_api.curl(api, size, [
        '-X', 'PUT', '-H', 'Content-Type: application/octet-stream',
        '-T', path, '%s/v2/images/%s/file' % (api.url, image)])
    shown = image_json(api, image)
    if shown['status'] != 'active' or shown['size'] != size:
        raise RuntimeError('image %s: %s, %s bytes after PUT' % (
            image, shown['status'], shown['size']))
    return image, shown, metrics['times_s'][0]


def get(api, image, size):
    got, metrics = glance_api.curl(api, size, [
        '-o', '/dev/null', '-w', '%{size_download}',
        '%s/v2/images/%s/file' % (api.url, image)])
    if int(got) != size:
        raise RuntimeError('GET %s: %s bytes, not %d' % (image, got, size))
    return metrics['times_s'][0]


def copy(api, image):
    """copy-image to the second backend; seconds until the image has it."""
    started = time.monotonic()
    resp = requests.post(
        '%s/v2/images/%s/import' % (api.url, image),
        json={'method': {'name': 'copy-image'}, 'stores': [SECOND]},
        headers=glance.ADMIN_HEADERS, timeout=60)
    resp.raise_for_status()
    deadline = started + COPY_TIMEOUT
    while time.monotonic() < deadline:
        shown = image_json(api, image)
        if SECOND in shown.get('stores', '').split(','):
            return time.monotonic() - started, shown
        if shown.get('os_glance_failed_import'):
            raise RuntimeError('copy-image of %s failed: %s' % (
                image, shown['os_glance_failed_import']))
        time.sleep(0.1)
    raise RuntimeError('copy-image of %s: no %s after %ds' % (
        image, SECOND, COPY_TIMEOUT))


def dog_write(cluster, path, size, name):
    cluster.check_dog('vdi', 'create', name, str(size))
    with open(path, 'rb') as source:
        return timed([cluster.dog_path, 'vdi', 'write', name, '-a',
                      cluster.address, '-p', str(cluster.port)],
                     stdin=source)


def dog_read(cluster, vdi):
    return timed(['bash', '-o', 'pipefail', '-c',
                  '"$0" vdi read "$1" -a "$2" -p "$3" | '
                  'dd of=/dev/null bs=1M status=none',
                  cluster.dog_path, vdi, cluster.address, str(cluster.port)])


def vdi_of(shown, cluster):
    """The VDI of the image's location on cluster (sheepdog://a:p:vdi)."""
    prefix = 'sheepdog://%s:%s:' % (cluster.address, cluster.port)
    for location in shown['locations']:
        if location['url'].startswith(prefix):
            return location['url'][len(prefix):]
    raise RuntimeError('no location on %s: %s' % (
        prefix, shown['locations']))


def check_copy(cluster, shown):
    """Fail unless the copy's VDI holds bytes of the image's hash.

    Untimed: ``dog vdi read`` of the VDI on the second cluster through
    the image's own algorithm (``os_hash_algo``, sha512 by default).
    """
    vdi = vdi_of(shown, cluster)
    out = subprocess.run(
        ['bash', '-o', 'pipefail', '-c',
         '"$0" vdi read "$1" -a "$2" -p "$3" | "$4"sum',
         cluster.dog_path, vdi, cluster.address, str(cluster.port),
         shown['os_hash_algo']], check=True, capture_output=True,
        text=True).stdout.split()[0]
    if out != shown['os_hash_value']:
        raise RuntimeError('copy on %s: %s %s, not os_hash_value %s' % (
            SECOND, shown['os_hash_algo'], out, shown['os_hash_value']))


def delete(api, image):
    requests.delete('%s/v2/images/%s' % (api.url, image),
                    headers=glance.ADMIN_HEADERS,
                    timeout=120).raise_for_status()


def one_round(deployment, path, size, number, times):
    api, cluster = deployment.api, deployment.cluster
    name = 'bench-dog-%d' % number
    first_api = number % 2 == 1
    pairs = [('dog_write', lambda: dog_write(cluster, path, size, name)),
             ('api26_put', lambda: put(api, path, size))]
    image = shown = None
    for label, call in (pairs[::-1] if first_api else pairs):
        result = call()
        if label == 'api26_put':
            image, shown, result = result
        times[label].append(result)
    vdi = vdi_of(shown, cluster)
    pairs = [('dog_read', lambda: dog_read(cluster, vdi)),
             ('api26_get', lambda: get(api, image, size))]
    for label, call in (pairs[::-1] if first_api else pairs):
        times[label].append(call())
    took, shown = copy(api, image)
    times['api26_copy'].append(took)
    check_copy(deployment.second, shown)
    times['get_plus_put'].append(times['api26_get'][-1] +
                                 times['api26_put'][-1])
    delete(api, image)
    cluster.check_dog('vdi', 'delete', name)


def summarize(times, size, peak_rss):
    rows = {}
    for label, values in times.items():
        median = statistics.median(values)
        rows[label] = {'median_s': round(median, 3),
                       'mb_s': round(size / median / 1e6, 1),
                       'times_s': [round(v, 3) for v in values]}
    ratios = {
        'api26_put_vs_dog_write': rows['dog_write']['median_s'] /
        rows['api26_put']['median_s'],
        'api26_get_vs_dog_read': rows['dog_read']['median_s'] /
        rows['api26_get']['median_s'],
        'api26_copy_vs_get_plus_put': rows['get_plus_put']['median_s'] /
        rows['api26_copy']['median_s'],
    }
    return {'size': size, 'rows': rows,
            'ratios': dict((k, round(v, 2)) for k, v in ratios.items()),
            'glance_api_peak_rss_mib': peak_rss}


def report(result, rounds, nodes, copies):
    size = result['size']
    lines = ['glance 32.0.0 (2026.1) API vs dog, %s, %d round(s), '
             'cluster of %d node(s) with %d copies; median:' % (
                 '%d MiB' % (size // MIB) if size % MIB == 0 else
                 '%d bytes' % size, rounds, nodes, copies)]
    for label, row in result['rows'].items():
        lines.append('  %-14s %8.1f MB/s  %7.3f s  %s' % (
            label, row['mb_s'], row['median_s'], row['times_s']))
    for name, value in result['ratios'].items():
        lines.append('  %-28s %.2f' % (name, value))
    lines.append('  glance-api peak RSS (largest uWSGI process): %.1f MiB'
                 % result['glance_api_peak_rss_mib'])
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--size', default='1G', type=parse_size)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--nodes', type=int, default=1)
    parser.add_argument('--copies', type=int, default=1)
    parser.add_argument('--json', help='write the result here')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format='%(asctime)s bench %(message)s')
    if sys.version_info[:2] != PYTHON:
        parser.error('runs on Python %d.%d (the %s venv), not %d.%d' % (
            PYTHON + (VENV,) + sys.version_info[:2]))
    signal.signal(signal.SIGTERM, processes.on_signal)
    rundir = tempfile.mkdtemp(prefix='fastpath-api26-')
    # The private PostgreSQL runs as the postgres user: let it in.
    os.chmod(rundir, 0o755)
    times = dict((label, []) for label in (
        'dog_write', 'api26_put', 'dog_read', 'api26_get', 'api26_copy',
        'get_plus_put'))
    try:
        source = os.path.join(rundir, 'source.img')
        with open(source, 'wb') as f:
            left = args.size
            while left:
                f.write(os.urandom(min(left, 16 * MIB)))
                left -= min(left, 16 * MIB)
        with Api26(rundir, args.nodes, args.copies) as deployment:
            for number in range(args.rounds):
                one_round(deployment, source, args.size, number, times)
                LOG.info('round %d: %s', number, dict(
                    (k, round(v[-1], 2)) for k, v in times.items()))
            peak = glance_api.tree_peak_rss_mib(deployment.api.pid)
        result = summarize(times, args.size, peak)
        print(report(result, args.rounds, args.nodes, args.copies),
              flush=True)
        if args.json:
            with open(args.json, 'w') as f:
                json.dump(result, f, indent=2, sort_keys=True)
    finally:
        shutil.rmtree(rundir, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
