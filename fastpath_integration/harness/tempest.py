"""tempest's image API tests against keystone and glance-api of a line.

    python -m fastpath_integration.harness.tempest [--line 2026.1]
        [--regex REGEX] [--log-dir DIR]

How OpenStack validates a store: tempest, unmodified, run against a
deployment whose default image store is the store. Here the deployment
is the line's keystone (uWSGI, fernet, bootstrapped) and glance-api
(uWSGI, as devstack runs it, ``flavor = keystone+cachemanagement``)
from one cached venv with the line's upper-constraints, on the
harness's PostgreSQL, with ``enabled_backends``:

- ``fastsheep``, the default, on a real 3-node sheepdog cluster
  keeping 2 copies;
- ``fastsheep2`` on a second real cluster (one sheep): copy-image and
  imports to several stores write the same image to both (two backends
  on one cluster would both name the VDI after the image id);
- ``fs`` (file) and ``web`` (http, read only);

import methods glance-direct, web-download (from a loopback HTTP server
started here, which ``[image] http_image`` names too) and copy-image;
``show_image_direct_url``, ``show_multiple_locations``,
``do_secure_hash`` and the image cache with its prefetcher.

tempest.conf says exactly that: dynamic credentials, glance the only
service available, the ``[image-feature-enabled]`` flags the
deployment has. The result is printed as passed, skipped (with
tempest's reason) and failed tests; the exit status is tempest's.
Every service started is stopped, whatever happens.
"""

import argparse
import collections
import logging
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import fixtures
import requests

from fastpath_integration.harness import devstack
from fastpath_integration.harness import glance
from fastpath_integration.harness import host
from fastpath_integration.harness import infrastructure
from fastpath_integration.harness import keystone
from fastpath_integration.harness import processes
from fastpath_integration.harness import sheepdog
from fastpath_integration.harness import venvs

LOG = logging.getLogger('fastpath_integration')

# Per line: the venv of its services and of its tempest (both with the
# line's upper-constraints, tools/integration/requirements/), the
# interpreter the line is tested on, and (``glance``) the glance-api.conf
# settings the line's tempest needs beyond the deployment's own. The
# services venv carries the line's glance patch series
# (patches/lines/glance-LINE, venvs.SERIES).
LINES = {
    # glance_store 4.3.3, the last multi-store without
    # [backend_defaults].
    '2023.1': {'services': 'openstack-2023.1',
               'tempest': 'tempest-2023.1', 'python': (3, 10),
               # glance 26 turns oslo.policy's new defaults on; tempest
               # 34.2.0 expects the deprecated ones: its
               # test_delete_locations removes an http location (no
               # store involved) as a project member, which the new
               # default (delete_image_location: role:admin) refuses
               # and the deprecated one (rule:default) allows.
               'glance': [('oslo_policy', 'enforce_new_defaults', 'false'),
                          ('oslo_policy', 'enforce_scope', 'false')],
               # Tests not run on this line, each with why and the env
               # that runs it (passed to ``tempest run --exclude-regex``).
               'exclude': [
                   (r'test_image_caching\.ImageCachingTest\.'
                    r'test_image_caching_cycle',
                    "tempest 34.2.0 asserts an image it has just queued "
                    "for the cache is still queued, while glance 26's "
                    "cache worker caches it at once (41 ms in one run "
                    "in four here); tempest 46.2.0 dropped that "
                    "assertion, and tox -e tempest-2026.1 runs the "
                    "test")]},
    '2026.1': {'services': 'openstack-2026.1',
               'tempest': 'tempest-2026.1', 'python': (3, 13),
               'glance': [], 'exclude': []},
}
DEFAULT_REGEX = r'^tempest\.api\.image\.v2'
SECOND_BACKEND = 'fastsheep2'
# The default backend's cluster as deployed (the integration stack's
# too): several sheep, objects replicated. The second backend's cluster
# only holds copies: one sheep.
CLUSTERS = ((3, 2), (1, 1))
# What web-download fetches and ``[image] http_image`` names: bytes the
# tests only move around (tempest checks sizes and checksums, never the
# format of this image).
HTTP_IMAGE = 'cirros-stand-in.img'
HTTP_IMAGE_SIZE = 1024 * 1024 + 7
# ``[image] http_qcow2_image``: web-download of an image created as
# qcow2, which glance's format inspection checks.
HTTP_QCOW2_IMAGE = 'cirros-stand-in.qcow2'
QCOW2_CLUSTER_BITS = 16


def empty_qcow2(virtual_size):
    """An empty qcow2 (version 2) image, as ``qemu-img create`` makes it.

    Four clusters: the header, the refcount table, one refcount block
    (16-bit refcounts of the four clusters) and the L1 table, which maps
    nothing. No qemu-img is needed on the machine.
    """
    cluster = 1 << QCOW2_CLUSTER_BITS
    # One L2 table (cluster / 8 entries) maps that many clusters.
    l1_size = -(-virtual_size // (cluster * (cluster // 8)))
    header = struct.pack(
        '>4sIQIIQIIQQIIQ', b'QFI\xfb', 2, 0, 0, QCOW2_CLUSTER_BITS,
        virtual_size, 0, l1_size, 3 * cluster, cluster, 1, 0, 0)
    refcount_table = struct.pack('>Q', 2 * cluster)
    refcount_block = struct.pack('>4H', 1, 1, 1, 1)
    return b''.join(part.ljust(cluster, b'\0') for part in (
        header, refcount_table, refcount_block, b''))


class LoopbackHTTP(fixtures.Fixture):
    """A static HTTP server on a free loopback port serving ``root``."""

    def __init__(self, rundir, root):
        super(LoopbackHTTP, self).__init__()
        self.rundir = rundir
        self.root = root

    def _setUp(self):
        self.port = host.free_port()
        service = self.useFixture(processes.Service(
            'http-images', [sys.executable, '-m', 'http.server',
                            '--bind', '127.0.0.1', '--directory', self.root,
                            str(self.port)],
            os.path.join(self.rundir, 'http-images.log')))
        service.wait_ready(lambda: host.port_open(self.port), 30)
        self.url = 'http://127.0.0.1:%d' % self.port


class Deployment(fixtures.Fixture):
    """keystone, glance-api and what they stand on, for one line."""

    def __init__(self, rundir, line):
        super(Deployment, self).__init__()
        self.rundir = rundir
        self.line = line

    def _setUp(self):
        services = LINES[self.line]['services']
        venvs.ensure_venv(services)
        venvs.ensure_venv(LINES[self.line]['tempest'])
        venvs.install_wheel(self.rundir, (services,))
        images = os.path.join(self.rundir, 'http-images')
        os.makedirs(images)
        with open(os.path.join(images, HTTP_IMAGE), 'wb') as f:
            f.write(os.urandom(HTTP_IMAGE_SIZE))
        with open(os.path.join(images, HTTP_QCOW2_IMAGE), 'wb') as f:
            f.write(empty_qcow2(HTTP_IMAGE_SIZE))
        web = self.useFixture(LoopbackHTTP(self.rundir, images))
        self.http_image = '%s/%s' % (web.url, HTTP_IMAGE)
        self.http_qcow2_image = '%s/%s' % (web.url, HTTP_QCOW2_IMAGE)
        pg = self.useFixture(infrastructure.PostgreSQL(
            self.rundir, databases=('keystone', 'glance')))
        self.keystone = self.useFixture(keystone.Keystone(
            self.rundir, services, pg.urls['keystone']))
        clusters = [self.useFixture(sheepdog.SheepdogCluster(
            nodes=nodes, copies=copies)) for nodes, copies in CLUSTERS]
        cache = os.path.join(self.rundir, 'glance', 'image-cache')
        self.glance = self.useFixture(glance.Glance(
            self.rundir, 'glance', sheepdog=clusters[0], server='uwsgi',
            db_url=pg.urls['glance'], backends={SECOND_BACKEND: clusters[1]},
            keystone=self.keystone, venv=services, settings=[
                ('DEFAULT', 'enabled_backends', 'fs:file,web:http'),
                ('DEFAULT', 'enabled_import_methods',
                 '[glance-direct,web-download,copy-image]'),
                ('DEFAULT', 'do_secure_hash', 'true'),
                ('DEFAULT', 'image_cache_dir', cache),
                # web-download only from the loopback server's port.
                ('import_filtering_opts', 'allowed_ports',
                 '[%d]' % web.port),
                ('oslo_messaging_notifications', 'driver', 'noop'),
                ('DEFAULT', 'debug', 'true'),
                # tempest's ListUserImagesTest uploads bogus bytes as
                # each disk format (to the default store); with glance's
                # format enforcement, which the store does not take part
                # in, it would skip.
                ('image_format', 'require_image_format_match', 'false'),
                # glance lists an image's stores by weight, equal
                # weights in the order written; tempest's import waiter
                # expects the writable store ids sorted. The default
                # store weighs most: reads go to it first.
                (glance.BACKEND, 'weight', '30'),
                (SECOND_BACKEND, 'weight', '20'),
                ('fs', 'weight', '10'),
            ] + LINES[self.line]['glance']))
        # The metadata definitions glance ships, as devstack loads them:
        # tempest's metadefs tests use its resource types.
        venv = venvs.ensure_venv(services)
        processes.run([os.path.join(venv, 'bin', 'glance-manage'),
                       '--config-file', self.glance.conf,
                       'db_load_metadefs',
                       os.path.join(venv, 'etc', 'glance', 'metadefs')],
                      log=os.path.join(self.rundir, 'metadefs.log'),
                      env=venvs.venv_env(venv))
        self.keystone.add_service('image', 'glance', self.glance.url)
        self.backends = [self.glance.backend, SECOND_BACKEND, 'fs', 'web']
        LOG.info('deployment up: keystone %s, glance %s (backends %s)',
                 self.keystone.url, self.glance.url,
                 ', '.join(self.backends))


def check_stores_detail(deployment):
    """``GET /v2/info/stores/detail`` as admin: every backend listed.

    No tempest test calls it; unpatched glance answers 500 as soon as a
    backend's type is not one glance describes (patches/lines/glance-LINE,
    stores-detail-any-store-type.patch). Returns a line for the report;
    raises when the answer is wrong.
    """
    resp = requests.get(
        deployment.glance.url + '/v2/info/stores/detail',
        headers={'X-Auth-Token': deployment.keystone.admin_token()},
        timeout=30)
    if resp.status_code != 200:
        raise RuntimeError('GET /v2/info/stores/detail: %d %s' % (
            resp.status_code, resp.text[:500]))
    stores = dict((store['id'], store['type'])
                  for store in resp.json()['stores'])
    if sorted(stores) != sorted(deployment.backends):
        raise RuntimeError('GET /v2/info/stores/detail lists %s, not %s'
                           % (sorted(stores), sorted(deployment.backends)))
    return 'GET /v2/info/stores/detail: 200, %s' % ', '.join(
        '%s (%s)' % item for item in sorted(stores.items()))


def tempest_conf(deployment, workspace):
    """tempest.conf for the deployment: what it has, nothing more."""
    ks = deployment.keystone
    settings = [
        ('DEFAULT', 'log_file', os.path.join(workspace, 'tempest.log')),
        ('oslo_concurrency', 'lock_path', os.path.join(workspace, 'lock')),
        ('auth', 'use_dynamic_credentials', 'true'),
        ('auth', 'admin_username', 'admin'),
        ('auth', 'admin_password', ks.admin_password),
        ('auth', 'admin_project_name', 'admin'),
        ('auth', 'admin_domain_name', 'Default'),
        ('identity', 'uri_v3', ks.url),
        ('identity', 'auth_version', 'v3'),
        ('identity', 'region', ks.region),
        ('service_available', 'glance', 'true'),
        ('service_available', 'nova', 'false'),
        ('service_available', 'cinder', 'false'),
        ('service_available', 'neutron', 'false'),
        ('service_available', 'swift', 'false'),
        ('image', 'http_image', deployment.http_image),
        ('image', 'http_qcow2_image', deployment.http_qcow2_image),
        ('image', 'image_caching_enabled', 'true'),
        ('image', 'build_timeout', '120'),
        ('image-feature-enabled', 'import_image', 'true'),
        ('image-feature-enabled', 'os_glance_reserved', 'true'),
        ('image-feature-enabled', 'manage_locations', 'true'),
        ('image-feature-enabled', 'do_secure_hash', 'true'),
        ('image-feature-enabled', 'http_store_enabled', 'true'),
        ('image-feature-enabled', 'image_conversion', 'false'),
        ('image-feature-enabled', 'image_format_enforcement', 'false'),
    ]
    path = os.path.join(workspace, 'etc', 'tempest.conf')
    devstack.write_ini(path, settings)
    return path


# The skips this deployment expects, by a pattern of the test id, with
# why: each needs a service or a feature outside the store driver. Any
# other skip is reported as unexplained and fails the run.
EXPECTED_SKIPS = (
    (r'test_images_formats\.ImagesFormatTest|'
     r'test_images_dependency\.ImageDependencyTests',
     'needs nova (and cinder): not deployed'),
    (r'test_remote_|image_remote',
     'needs a second glance-api (image_remote): not deployed'),
    (r'test_image_glance_download_import',
     'glance-download imports from a glance of another region: one '
     'region here'),
    (r'test_image_task\.ImageTaskCreate\.test_image_tasks_create',
     "tempest's own skip for glance bug 2030527"),
)


def why_skipped(test):
    """The harness's reason for an expected skip, or None."""
    for pattern, reason in EXPECTED_SKIPS:
        if re.search(pattern, test):
            return reason
    return None


# stestr's per-test lines, as ``tempest run`` prints them.
_RESULT = re.compile(
    r'^\{\d+\} (?P<test>\S+(?: \([^)]*\))?)(?: \[[\d.]+s\])? \.\.\. '
    r'(?P<status>ok|FAILED|SKIPPED)(?:: (?P<reason>.*))?$')


def summarize(output):
    """{status: [(test, reason)]} from ``tempest run``'s output."""
    results = collections.OrderedDict(
        (status, []) for status in ('ok', 'SKIPPED', 'FAILED'))
    for line in output.splitlines():
        match = _RESULT.match(line.strip())
        if match:
            results[match.group('status')].append(
                (match.group('test'), match.group('reason') or ''))
    return results


def unexplained(results):
    return [test for test, _reason in results['SKIPPED']
            if why_skipped(test) is None]


def report(results, wall):
    lines = ['tempest image v2: %d passed, %d skipped, %d failed (%.0fs)'
             % (len(results['ok']), len(results['SKIPPED']),
                len(results['FAILED']), wall)]
    if results['SKIPPED']:
        lines.append('skipped (tempest says; the harness says):')
        for test, reason in results['SKIPPED']:
            lines.append('  %s: %s; %s' % (
                test, reason, why_skipped(test) or 'UNEXPLAINED'))
    if results['FAILED']:
        lines.append('failed:')
        lines.extend('  %s' % test for test, _reason in results['FAILED'])
    return '\n'.join(lines)


def excluded(line):
    """``tempest run`` arguments leaving out line's excluded tests."""
    patterns = [pattern for pattern, _why in LINES[line]['exclude']]
    return ['--exclude-regex', '|'.join(patterns)] if patterns else []


def report_excluded(line):
    return '\n'.join('not run on %s (the harness says): %s: %s'
                     % (line, pattern, why)
                     for pattern, why in LINES[line]['exclude'])


def run_tempest(deployment, workspace, regex, concurrency):
    """``tempest run`` from the line's tempest venv: (rc, results)."""
    venv = venvs.ensure_venv(LINES[deployment.line]['tempest'])
    env = venvs.venv_env(venv)
    tempest = os.path.join(venv, 'bin', 'tempest')
    # A bare workspace: ``tempest run`` writes its .stestr.conf there.
    # (``tempest init`` would also register it in ~/.tempest.)
    os.makedirs(os.path.join(workspace, 'etc'))
    conf = tempest_conf(deployment, workspace)
    log = os.path.join(deployment.rundir, 'tempest-run.log')
    started = time.monotonic()
    with open(log, 'wb') as out:
        proc = subprocess.Popen(
            [tempest, 'run', '--config-file', conf, '--regex', regex,
             '--concurrency', str(concurrency)] + excluded(deployment.line),
            cwd=workspace, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        for chunk in iter(lambda: proc.stdout.readline(), b''):
            out.write(chunk)
            sys.stdout.write(chunk.decode('utf-8', 'replace'))
            sys.stdout.flush()
        rc = proc.wait()
    with open(log, 'rb') as f:
        results = summarize(f.read().decode('utf-8', 'replace'))
    return rc, results, time.monotonic() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--line', default='2026.1', choices=sorted(LINES))
    parser.add_argument('--regex', default=DEFAULT_REGEX)
    parser.add_argument('--concurrency', type=int, default=2)
    parser.add_argument('--log-dir', help='copy service logs here')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO,
                        format='%(asctime)s harness %(message)s')
    if sys.version_info[:2] != LINES[args.line]['python']:
        parser.error('line %s runs on Python %d.%d, not %d.%d' % (
            (args.line,) + LINES[args.line]['python'] +
            sys.version_info[:2]))
    signal.signal(signal.SIGTERM, processes.on_signal)
    signal.signal(signal.SIGHUP, processes.on_signal)
    started = time.monotonic()
    rundir = tempfile.mkdtemp(prefix='fastpath-tempest-')
    # The private PostgreSQL runs as the postgres user: let it in.
    os.chmod(rundir, 0o755)
    deployment = Deployment(rundir, args.line)
    rc = 1
    try:
        try:
            deployment.setUp()
        except Exception:
            LOG.exception('deployment failed')
            deployment = None
            raise
        LOG.info('deployment up in %.1fs', time.monotonic() - started)
        workspace = os.path.join(rundir, 'tempest')
        rc, results, wall = run_tempest(deployment, workspace, args.regex,
                                        args.concurrency)
        print('\n' + report(results, wall), flush=True)
        if LINES[args.line]['exclude']:
            print(report_excluded(args.line), flush=True)
        try:
            print(check_stores_detail(deployment), flush=True)
        except Exception:
            LOG.exception('stores detail')
            rc = 1
        if rc == 0 and not results['ok']:
            LOG.error('tempest ran no test')
            rc = 1
        if rc == 0 and unexplained(results):
            LOG.error('skips the harness does not explain: %s',
                      ', '.join(unexplained(results)))
            rc = 1
    except (KeyboardInterrupt, processes.Terminated) as e:
        LOG.error('interrupted: %s', e)
        rc = 130
    except Exception:
        LOG.exception('tempest run failed')
        rc = 1
    finally:
        processes.save_logs(rundir, args.log_dir)
        try:
            if deployment is not None:
                deployment.cleanUp()
        finally:
            shutil.rmtree(rundir, ignore_errors=True)
        LOG.info('tempest %s wall time %.1fs (rc=%d)', args.line,
                 time.monotonic() - started, rc)
    return rc


if __name__ == '__main__':
    sys.exit(main())
