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
"""Services section: the seeds' tables, on real Pike services (CPython 2.7).

The integration harness's own fixtures start everything on loopback, side
by side in one run, and stop it all at the end:

* three Pike glance-api 15.0.2 (standalone eventlet server, one worker,
  SQLite) over one sheepdog emulator: glance_store 0.22.0's in-tree
  driver (``pike``), the same with patches/glance_store pushed
  (``patched``), and fastsheep enabled the Pike way (``plugin``);
* RabbitMQ and gnocchi, and one notification agent at a time: Pike's
  9.0.7 with the stock, patched and metric-cache dispatchers, then the
  current ceilometer with ``gnocchi://`` and ``gnocchi-metriccache://``.

Rows:

* ``api_get_<cfg>_py27``: the image streamed over HTTP from each
  glance-api by ``curl -o /dev/null`` (MB/s = 10**6 bytes/s by wall
  time, byte count checked), glance-api's CPU seconds (process tree)
  and peak RSS (VmHWM); then an untimed pass checks the sha256.
  ``api_get_ceiling`` is ``dog vdi read | dd`` on the same VDI.
* ``api_put_<cfg>_py27``: the same file uploaded through the v2 API
  (``curl -T``); the in-tree driver gets a smaller image when the size
  is above 256 MiB (its ~10 MB/s would take minutes; ratios are MB/s).
  Pike's glance hashes uploads with md5 on 2.7, and pyenv's 2.7 here has
  no OpenSSL: its builtin md5 (~640 MB/s) caps every upload row.
* ``agent_cpu_<cfg>``: one agent at a time gets the same burst of
  ``telemetry.polling`` notifications (stock names, names matched only by
  a wildcard, unmatched names); its CPU seconds from the first sample
  until a sentinel sent last is in gnocchi and the agent is idle. The
  wildcard-matched names go to an ``ignore`` definition (see
  ``IGNORED_WILDCARD``) so that the three Pike agents deliver the same
  measures; each row says how many resources and metrics the burst left
  in gnocchi, and how many POST/PATCH requests gnocchi-api logged. The
  current agents have no such definition: those names are unmatched
  there.
"""

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import common

sys.path.insert(0, common.TOPDIR)

MB = 1e6
MIB = 1 << 20
PUT_INTREE_MAX = 256 * MIB
GLANCE_CONFIGS = (('pike', 'sheepdog'), ('patched', 'patched'),
                  ('plugin', 'fastsheep'))
PIKE_AGENTS = (('pike', 'stock'), ('patched', 'patched'),
               ('plugin', 'plugin'))
# The burst's wildcard-matched names, for the Pike agents: matched only by
# a pattern, in the file's last definition, which ignores them. Pike's
# record_metering_data indexes ``rd.metrics[name]`` by the literal name,
# so a name a pattern delivers raises KeyError there and the whole batch
# (every sample of the notification) is lost; the plugin delivers it. A
# delivered wildcard name would have the plugin do the gnocchi round trips
# Pike skips, and the rows would not compare the same work.
IGNORED_WILDCARD = ('  - resource_type: generic\n'
                    '    ignore: true\n'
                    '    metrics:\n'
                    '      - fastpath.ignored.*\n')


def add_arguments(parser):
    parser.add_argument('--services-samples', type=int, default=None,
                        help='samples in the agent CPU burst (default '
                        '10000; 2000 with --quick)')


def _tree_peak_rss_mib(pid):
    from fastpath_integration.harness import processes
    peak = 0
    for p in processes.process_tree(pid):
        try:
            with open('/proc/%d/status' % p) as status:
                for line in status:
                    if line.startswith('VmHWM:'):
                        peak = max(peak, int(line.split()[1]) / 1024.0)
        except (IOError, OSError):
            continue
    return round(peak, 1)


class _Section(object):

    name = 'services'

    def __init__(self, args, report):
        self.args = args
        self.report = report
        self.quick = args.quick
        self.size = 64 * MIB if args.quick else args.size_bytes
        self.samples = args.services_samples or (2000 if args.quick
                                                 else 10000)
        self.results = {}
        self.log = logging.getLogger('bench.services')

    # -- plumbing ------------------------------------------------------

    def _progress(self, text, *args):
        sys.stderr.write('bench: services: %s\n' % (text % args))
        sys.stderr.flush()

    def _row(self, name, **metrics):
        self.results[name] = metrics
        self.report.add_row(self.name, name, **metrics)
        self._progress('%s %s', name, metrics)

    def _failed(self, name, exc):
        text = str(exc).strip().splitlines()
        self.report.add_row(self.name, name, status='FAILED')
        self.report.note('services: %s FAILED: %s' % (
            name, ' | '.join(text[:1] + text[-3:])))
        self._progress('%s FAILED: %s', name, exc)

    def ratio(self, name, numerator, denominator, key, op=None, bound=None):
        num = self.results.get(numerator, {}).get(key)
        den = self.results.get(denominator, {}).get(key)
        if not num or not den:
            self.report.ratios[name] = None
            if op is not None:
                self.report.targets[name] = {'op': op, 'bound': bound,
                                             'met': False}
            return
        self.report.add_ratio(name, round(num / den, 3), op, bound)

    # -- glance ----------------------------------------------------------

    def _curl(self, args):
        from fastpath_integration.harness import pike_glance
        cmd = ['curl', '-sS', '-f', '-H', 'Expect:']
        for key, value in pike_glance.ADMIN_HEADERS.items():
            cmd += ['-H', '%s: %s' % (key, value)]
        return subprocess.run(cmd + args, check=True, capture_output=True,
                              text=True).stdout

    def _create_image(self, url):
        from fastpath_integration.harness import pike_glance
        import requests
        resp = requests.post(url + '/v2/images', json={
            'name': 'bench-%s' % uuid.uuid4().hex[:8],
            'disk_format': 'raw', 'container_format': 'bare'},
            headers=pike_glance.ADMIN_HEADERS, timeout=60)
        resp.raise_for_status()
        return resp.json()['id']

    def _put(self, cfg, glance, path, size):
        from fastpath_integration.harness import processes
        image = self._create_image(glance.url)
        cpu = processes.cpu_seconds(glance.pid)
        start = time.monotonic()
        self._curl(['-X', 'PUT', '-H',
                    'Content-Type: application/octet-stream', '-T', path,
                    '%s/v2/images/%s/file' % (glance.url, image)])
        wall = time.monotonic() - start
        cpu = processes.cpu_seconds(glance.pid) - cpu
        self._row('api_put_%s_py27' % cfg, mb_s=round(size / wall / MB, 1),
                  cpu_s=round(cpu, 2), size=size,
                  peak_rss_mib=_tree_peak_rss_mib(glance.pid))
        return image

    def _get(self, cfg, glance, image, size, sha256):
        from fastpath_integration.harness import processes
        url = '%s/v2/images/%s/file' % (glance.url, image)
        cpu = processes.cpu_seconds(glance.pid)
        start = time.monotonic()
        got = int(self._curl(['-o', '/dev/null', '-w', '%{size_download}',
                              url]))
        wall = time.monotonic() - start
        cpu = processes.cpu_seconds(glance.pid) - cpu
        if got != size:
            raise RuntimeError('%s: %d bytes downloaded, %d stored'
                               % (cfg, got, size))
        self._check_sha(url, sha256)
        self._row('api_get_%s_py27' % cfg, mb_s=round(size / wall / MB, 1),
                  cpu_s=round(cpu, 2), size=size,
                  peak_rss_mib=_tree_peak_rss_mib(glance.pid))

    def _check_sha(self, url, sha256):
        from fastpath_integration.harness import pike_glance
        import requests
        digest = hashlib.sha256()
        with requests.get(url, headers=pike_glance.ADMIN_HEADERS,
                          stream=True, timeout=600) as resp:
            resp.raise_for_status()
            for block in resp.iter_content(MIB):
                digest.update(block)
        if digest.hexdigest() != sha256:
            raise RuntimeError('%s: sha256 differs from the source' % url)

    def _ceiling(self, emulator, vdi, size):
        start = time.monotonic()
        out = subprocess.run(
            ['bash', '-c', 'set -o pipefail; "$0" vdi read -a "$1" -p "$2" '
             '"$3" | dd of=/dev/null bs=4M 2>&1 | tail -n 1',
             emulator['FASTPATH_SHEEPDOG_COMMAND'],
             emulator['FASTPATH_SHEEPDOG_ADDRESS'],
             emulator['FASTPATH_SHEEPDOG_PORT'], vdi],
            check=True, capture_output=True, text=True).stdout
        wall = time.monotonic() - start
        if not out.startswith(str(size)):
            raise RuntimeError('ceiling: dd says %r, expected %d bytes'
                               % (out, size))
        self._row('api_get_ceiling', mb_s=round(size / wall / MB, 1),
                  size=size)

    def glance_rows(self, stack, rundir, emulator):
        from fastpath_integration.harness import pike_glance
        source = os.path.join(rundir, 'image.raw')
        self._progress('writing a %d MiB source image', self.size // MIB)
        sha = common.write_random_file(source, self.size)
        small = os.path.join(rundir, 'image-intree.raw')
        small_size = min(self.size, PUT_INTREE_MAX)
        with open(source, 'rb') as src, open(small, 'wb') as dst:
            dst.write(src.read(small_size))
        for cfg, store in GLANCE_CONFIGS:
            name = 'api_get_%s_py27' % cfg
            try:
                self._progress('starting Pike glance-api (%s)', store)
                glance = stack.useFixture(pike_glance.PikeGlance(
                    rundir, emulator, store=store))
                path, size = ((small, small_size) if store != 'fastsheep'
                              else (source, self.size))
                image = self._put(cfg, glance, path, size)
                if size != self.size:
                    # The download row streams the full size from every
                    # configuration: the plugin stores it for the others.
                    image = self._full_image_for(cfg, glance, emulator)
                self._get(cfg, glance, image, self.size, sha)
                if cfg == 'plugin':
                    self._ceiling(emulator, image, self.size)
            except Exception as exc:  # noqa: one row, not the section
                self._failed(name, exc)

    def _full_image_for(self, cfg, glance, emulator):
        """A full-size image of ``glance`` whose VDI the plugin wrote.

        The in-tree upload at ~10 MB/s would take minutes for 1 GiB; the
        bytes (and the location format) are the same either way.
        """
        from fastpath_integration.harness import pike_glance
        import json
        import requests
        vdi = self._ensure_full_vdi(emulator)
        image = self._create_image(glance.url)
        resp = requests.patch(
            glance.url + '/v2/images/' + image,
            data=json.dumps([{'op': 'add', 'path': '/locations/-', 'value': {
                'url': 'sheepdog://%s:%s:%s' % (
                    emulator['FASTPATH_SHEEPDOG_ADDRESS'],
                    emulator['FASTPATH_SHEEPDOG_PORT'], vdi),
                'metadata': {}}}]),
            headers=dict(pike_glance.ADMIN_HEADERS, **{
                'Content-Type':
                'application/openstack-images-v2.1-json-patch'}),
            timeout=120)
        resp.raise_for_status()
        return image

    def _ensure_full_vdi(self, emulator):
        """A VDI holding the full source, written with the dog CLI."""
        if getattr(self, '_full_vdi', None):
            return self._full_vdi
        vdi = 'bench-full-%s' % uuid.uuid4().hex[:8]
        dog = emulator['FASTPATH_SHEEPDOG_COMMAND']
        where = ['-a', emulator['FASTPATH_SHEEPDOG_ADDRESS'],
                 '-p', emulator['FASTPATH_SHEEPDOG_PORT']]
        subprocess.run([dog, 'vdi', 'create'] + where + [vdi,
                                                         str(self.size)],
                       check=True, capture_output=True)
        with open(os.path.join(self.rundir, 'image.raw'), 'rb') as src:
            subprocess.run([dog, 'vdi', 'write'] + where + [
                vdi, '0', str(self.size)], stdin=src, check=True,
                capture_output=True)
        self._full_vdi = vdi
        return vdi

    # -- ceilometer ------------------------------------------------------

    def _burst(self, agent_name, pid, transport_url, topic, gnocchi_url):
        from fastpath_integration import bus
        from fastpath_integration.harness import processes
        import requests
        notifier = bus.notifier(transport_url, topic, 'ceilometer')
        per = 20
        notifications = max(1, self.samples // per)
        run = uuid.uuid4().hex[:8]
        resources = ['bench-%s-%d' % (run, i) for i in range(20)]
        names = (['image.size'] +
                 ['fastpath.ignored.%d' % i for i in range(20)] +
                 ['fastpath.unmatched.%d' % i for i in range(20)] +
                 ['fastpath.exact.metric'])
        metadata = {'name': 'x', 'container_format': 'bare',
                    'disk_format': 'raw'}

        def resource_of(name, i):
            # image.size makes an ``image`` resource, the exact metric a
            # ``generic`` one: one id for both would have every agent
            # PATCH an image that gnocchi holds as generic (404s).
            rid = resources[i % len(resources)]
            return rid + '-img' if name == 'image.size' else rid
        writes = self._gnocchi_writes()
        try:
            before = processes.cpu_seconds(pid)
            start = time.monotonic()
            for n in range(notifications):
                samples = []
                for i in range(per):
                    name = names[(n * per + i) % len(names)]
                    samples.append(bus.sample(name, resource_of(name, n + i),
                                              float(n), metadata=metadata))
                bus.send_samples(notifier, samples)
            sentinel = 'bench-%s-sentinel' % run
            bus.send_samples(notifier, [
                bus.sample('fastpath.exact.metric', sentinel, 1.0)])
        finally:
            notifier.transport.cleanup()
        url = '%s/v1/resource/generic/%s' % (gnocchi_url, sentinel)
        deadline = time.monotonic() + 1800
        while not self._exists(requests, url):
            if time.monotonic() > deadline:
                raise RuntimeError('%s: burst not delivered in 30 min'
                                   % agent_name)
            time.sleep(1)
        now = processes.cpu_seconds_once_idle(pid)
        wall = time.monotonic() - start
        writes = self._gnocchi_writes() - writes
        delivered = self._delivered(requests, gnocchi_url, run)
        self._row('agent_cpu_%s' % agent_name, cpu_s=round(now - before, 2),
                  wall_s=round(wall, 1),
                  samples=notifications * per,
                  resources=delivered[0], metrics=delivered[1],
                  gnocchi_writes=writes,
                  peak_rss_mib=_tree_peak_rss_mib(pid))

    def _gnocchi_writes(self):
        """POST/PATCH requests gnocchi-api has logged so far.

        Only the agent under test writes during a burst (the bench's
        polls are GETs): equal counts mean the agents did the same
        gnocchi work, whatever their CPU.
        """
        try:
            with open(os.path.join(self.rundir, 'gnocchi-api.log')) as log:
                return sum(1 for line in log
                           if '] POST /' in line or '] PATCH /' in line)
        except (IOError, OSError):
            return 0

    @staticmethod
    def _delivered(requests, gnocchi_url, run):
        """(resources, metrics) the burst left in gnocchi.

        Rows compare CPU for the same work only if every agent delivered
        the same: a batch an agent drops costs it no gnocchi round trip.
        """
        resp = requests.post(
            '%s/v1/search/resource/generic' % gnocchi_url,
            json={'like': {'original_resource_id': 'bench-%s-%%' % run}},
            params={'limit': 1000}, auth=('admin', ''), timeout=60)
        resp.raise_for_status()
        found = resp.json()
        return len(found), sum(len(r.get('metrics') or ()) for r in found)

    @staticmethod
    def _exists(requests, url):
        """gnocchi has ``url``; a busy gnocchi that times out is a no."""
        try:
            return requests.get(url, auth=('admin', ''),
                                timeout=30).status_code == 200
        except requests.exceptions.RequestException:
            return False

    def agent_rows(self, stack, rundir, rabbit, gnocchi):
        from fastpath_integration.harness import pike_ceilometer
        from fastpath_integration.harness import services
        import fixtures
        # Current ceilometer first: its ceilometer-upgrade creates the
        # resource types every agent posts to.
        for cfg, publisher in (('stock', 'stock'), ('plugin', 'plugin')):
            name = '%s_current' % cfg
            topic = 'bench-%s' % name
            try:
                with fixtures.Fixture() as scope:
                    agent = scope.useFixture(services.CeilometerAgent(
                        rundir, 'bench-' + name, publisher, topic,
                        rabbit.url, gnocchi.url, upgrade=cfg == 'stock'))
                    self._burst(name, agent.service.pid, rabbit.url, topic,
                                gnocchi.url)
            except Exception as exc:  # noqa: one row, not the section
                self._failed('agent_cpu_%s' % name, exc)
        for cfg, dispatcher in PIKE_AGENTS:
            name = '%s_py27' % cfg
            topic = 'bench-%s' % name
            try:
                self._progress('starting Pike notification agent (%s)',
                               dispatcher)
                with fixtures.Fixture() as scope:
                    agent = scope.useFixture(
                        pike_ceilometer.PikeCeilometerAgent(
                            rundir, 'bench-' + name, dispatcher, topic,
                            rabbit.url, gnocchi.url,
                            resources_extra=IGNORED_WILDCARD))
                    self._burst(name, agent.pid, rabbit.url, topic,
                                gnocchi.url)
            except Exception as exc:  # noqa: one row, not the section
                self._failed('agent_cpu_%s' % name, exc)

    # -- the section -----------------------------------------------------

    def run(self):
        from fastpath_integration.harness import pike_ceilometer
        from fastpath_integration.harness import pike_glance
        from fastpath_integration.harness import pike_sources
        from fastpath_integration.harness import services
        from fastpath_integration.harness import venvs
        import fixtures

        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format='bench: services: %(message)s')
        self.rundir = rundir = tempfile.mkdtemp(prefix='fastpath-bench-')
        os.chmod(rundir, 0o755)
        try:
            with fixtures.Fixture() as stack:
                self._progress('service venvs (a fresh machine builds them '
                               'here, several minutes)')
                for service in ('gnocchi', 'ceilometer', pike_glance.VENV,
                                pike_ceilometer.VENV):
                    venvs.ensure_venv(service)
                log = os.path.join(rundir, 'install.log')
                for service in (pike_glance.VENV, pike_ceilometer.VENV):
                    pike_sources.install_project(service, log)
                services.Harness(rundir).install_project()
                emulator = stack.useFixture(
                    services.SheepdogEmulator(rundir)).env
                self.glance_rows(stack, rundir, emulator)
                pg = stack.useFixture(services.PostgreSQL(
                    rundir, databases=('gnocchi',)))
                rabbit = stack.useFixture(services.RabbitMQ(rundir))
                gnocchi = stack.useFixture(services.Gnocchi(
                    rundir, pg.urls['gnocchi']))
                self.agent_rows(stack, rundir, rabbit, gnocchi)
        finally:
            shutil.rmtree(rundir, ignore_errors=True)
        self.ratios()

    def ratios(self):
        self.ratio('api_get_vs_pike_py27', 'api_get_plugin_py27',
                   'api_get_pike_py27', 'mb_s', '>=', 5)
        self.ratio('api_get_patched_vs_pike_py27', 'api_get_patched_py27',
                   'api_get_pike_py27', 'mb_s', '>=', 4)
        self.ratio('api_put_vs_pike_py27', 'api_put_plugin_py27',
                   'api_put_pike_py27', 'mb_s', '>=', 10)
        self.ratio('api_get_plugin_vs_ceiling_py27', 'api_get_plugin_py27',
                   'api_get_ceiling', 'mb_s')
        self.ratio('agent_cpu_pike_vs_plugin_py27', 'agent_cpu_pike_py27',
                   'agent_cpu_plugin_py27', 'cpu_s', '>=', 5)
        self.ratio('agent_cpu_pike_vs_patched_py27', 'agent_cpu_pike_py27',
                   'agent_cpu_patched_py27', 'cpu_s', '>=', 4)
        self.ratio('agent_cpu_stock_vs_plugin_current',
                   'agent_cpu_stock_current', 'agent_cpu_plugin_current',
                   'cpu_s')
        self.report.note(
            'services: Pike glance-api 15.0.2 (eventlet, 1 worker) and '
            'ceilometer 9.0.7 on CPython 2.7 over the sheepdog emulator; '
            'get %d MiB per configuration, in-tree put %d MiB; agent '
            'burst %d samples; 2.7 here has no OpenSSL (builtin md5 caps '
            'uploads)' % (self.size // MIB, min(self.size, PUT_INTREE_MAX)
                          // MIB, self.samples))


def run(args, report):
    _Section(args, report).run()
