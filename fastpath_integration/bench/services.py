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
"""The seeds' tables on real Pike services (CPython 2.7), side by side.

Pike glance-api 15.0.2 with the in-tree driver, with patches/glance_store
and with fastsheep over one sheepdog emulator, then the notification
agents of Pike 9.0.7 and of the current ceilometer with RabbitMQ and
gnocchi, all started by the integration harness's fixtures; rows and
methods: doc/source/bench-sheepdog.rst.
"""

import logging
import os
import shutil
import sys
import tempfile

from fastpath_integration.bench import agent_burst
from fastpath_integration.bench import clusters
from fastpath_integration.bench import glance_api
from fastpath_integration.bench import runner
from fastpath_integration.bench import transfers
from fastpath_integration.bench import workers

MIB = clusters.MIB
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


def _api(verb, key, what, chart):
    table = runner.Table(
        '%s through Pike glance-api (CPython 2.7)' % verb.title(), what,
        (('MB/s', 'mb_s'), ('glance-api CPU s', 'cpu_s'),
         ('peak RSS MiB', 'peak_rss_mib'), ('bytes', 'size')), 'mb_s',
        chart=chart)
    pike = table.row('api_%s_pike_py27' % key,
                     'Pike in-tree driver')
    return table, dict([('pike', pike)] + [(cfg, table.row(
        'api_%s_%s_py27' % (key, cfg), label, pike))
        for cfg, label in (('patched', 'Pike tree + patches/glance_store'),
                           ('plugin', 'fastsheep plugin'))])


API_GET, GETS = _api(
    'Download', 'get', 'One image streamed over HTTP (v2) from Pike '
    'glance-api 15.0.2, eventlet, one worker, over the sheepdog emulator; '
    'byte count and sha256 checked; vs: MB/s over the in-tree driver\'s.',
    'api_download_mb_s')
CEILING = API_GET.row('api_get_ceiling', 'ceiling: dog vdi read | dd',
                      GETS['pike'])
API_PUT, PUTS = _api(
    'Upload', 'put', 'The same image uploaded through the v2 API; glance '
    'hashes it (md5 without OpenSSL on this 2.7); vs: MB/s over the '
    'in-tree driver\'s.', 'api_upload_mb_s')
AGENT = runner.Table(
    'Notification agent CPU for one burst', 'CPU seconds of '
    'ceilometer-agent-notification from the first sample until every '
    'measure is in gnocchi (real RabbitMQ and gnocchi); vs: stock CPU over '
    'this row\'s.', (('CPU s', 'cpu_s'), ('wall s', 'wall_s'),
                     ('samples', 'samples'), ('peak RSS MiB', 'peak_rss_mib')),
    'cpu_s', True, 'agent_cpu_s')
AGENTS = {'pike_py27': AGENT.row('agent_cpu_pike_py27',
                                 'Pike 9.0.7 stock dispatcher, 2.7')}
AGENTS['patched_py27'] = AGENT.row('agent_cpu_patched_py27',
                                   'Pike 9.0.7 + patches/ceilometer, 2.7',
                                   AGENTS['pike_py27'])
AGENTS['plugin_py27'] = AGENT.row('agent_cpu_plugin_py27',
                                  'Pike 9.0.7 + metric-cache plugin, 2.7',
                                  AGENTS['pike_py27'])
AGENTS['stock_current'] = AGENT.row('agent_cpu_stock_current',
                                    'current ceilometer, gnocchi://')
AGENTS['plugin_current'] = AGENT.row(
    'agent_cpu_plugin_current', 'current ceilometer, gnocchi-metriccache://',
    AGENTS['stock_current'])
RATIOS = (
    runner.ratio('api_get_vs_pike_py27', GETS['plugin'], GETS['pike'],
                 op='>=', bound=5),
    runner.ratio('api_get_patched_vs_pike_py27', GETS['patched'],
                 GETS['pike'], op='>=', bound=4),
    runner.ratio('api_put_vs_pike_py27', PUTS['plugin'], PUTS['pike'],
                 op='>=', bound=10),
    runner.ratio('api_get_plugin_vs_ceiling_py27', GETS['plugin'], CEILING),
    runner.ratio('agent_cpu_pike_vs_plugin_py27', AGENTS['pike_py27'],
                 AGENTS['plugin_py27'], 'cpu_s', '>=', 5),
    runner.ratio('agent_cpu_pike_vs_patched_py27', AGENTS['pike_py27'],
                 AGENTS['patched_py27'], 'cpu_s', '>=', 4),
    runner.ratio('agent_cpu_stock_vs_plugin_current',
                 AGENTS['stock_current'], AGENTS['plugin_current'], 'cpu_s'),
)


def add_arguments(parser):
    parser.add_argument('--services-samples', type=int, default=None,
                        help='samples in the agent CPU burst (default '
                        '10000; 2000 with --quick)')


class Section(object):
    """One run of the section: its sizes, its report and its run directory.

    The glance rows and the agent rows share the services they start
    and the report they add to; a row that fails is noted and the
    section goes on to the next.
    """

    def __init__(self, args, report):
        self.args, self.report = args, report
        self.size = 64 * MIB if args.quick else args.size_bytes
        self.samples = args.services_samples or (2000 if args.quick
                                                 else 10000)

    # -- plumbing ------------------------------------------------------

    def _progress(self, text, *args):
        sys.stderr.write('bench: services: %s\n' % (text % args))
        sys.stderr.flush()

    def _row(self, row, **metrics):
        self.report.add(row, **metrics)
        self._progress('%s %s', row.name, metrics)

    def _failed(self, row, exc):
        self.report.failed(row, exc)
        self.report.note('services: %s FAILED' % row.name)

    # -- glance ----------------------------------------------------------

    def _curl_row(self, row, glance, size, args):
        """One curl against glance: MB/s, glance-api's CPU and peak RSS."""
        out, metrics = glance_api.curl(glance, size, args)
        del metrics['times_s']  # one curl per row
        self._row(row, **metrics)
        return out

    def _put(self, cfg, glance, path, size):
        image = glance_api.create_image(glance.url)
        self._curl_row(PUTS[cfg], glance, size, [
            '-X', 'PUT', '-H', 'Content-Type: application/octet-stream',
            '-T', path, '%s/v2/images/%s/file' % (glance.url, image)])
        return image

    def _get(self, cfg, glance, image, size, sha256):
        url = '%s/v2/images/%s/file' % (glance.url, image)
        got = int(self._curl_row(GETS[cfg], glance, size, [
            '-o', '/dev/null', '-w', '%{size_download}', url]))
        if got != size:
            raise RuntimeError('%s: %d bytes downloaded, %d stored'
                               % (cfg, got, size))
        glance_api.check_sha(url, sha256)

    def _ceiling(self, emulator, vdi, size):
        """The sheepdog section's ``dog vdi read | dd``, on this VDI."""
        self._row(CEILING, **workers.run(transfers.work, dict(
            emulator.params, kind='ceiling', name=vdi, size=size,
            repeats=1)))

    def glance_rows(self, stack, rundir, emulator):
        from fastpath_integration.harness import glance as harness_glance
        source, sha = emulator.source.path, emulator.source.sha256()
        small = os.path.join(rundir, 'image-intree.raw')
        small_size = min(self.size, PUT_INTREE_MAX)
        with open(source, 'rb') as src, open(small, 'wb') as dst:
            dst.write(src.read(small_size))
        for cfg, store in GLANCE_CONFIGS:
            try:
                self._progress('starting Pike glance-api (%s)', store)
                glance = stack.useFixture(harness_glance.Glance(
                    rundir, 'pike-glance-%s' % store, sheepdog=emulator,
                    release='pike', server='eventlet', store=store))
                path, size = ((small, small_size) if store != 'fastsheep'
                              else (source, self.size))
                image = self._put(cfg, glance, path, size)
                if size != self.size:
                    # The download row streams the full size from every
                    # configuration: the source VDI, as a location.
                    image = glance_api.image_at(glance, emulator,
                                                emulator.params['name'])
                self._get(cfg, glance, image, self.size, sha)
                if cfg == 'plugin':
                    self._ceiling(emulator, image, self.size)
            except Exception as exc:  # noqa: one row, not the section
                self._failed(GETS[cfg], exc)

    # -- ceilometer ------------------------------------------------------

    def _burst(self, agent_name, pid, transport_url, topic, gnocchi_url):
        self._row(AGENTS[agent_name], **agent_burst.burst(
            self.samples, self.rundir, agent_name, pid, transport_url, topic,
            gnocchi_url))

    def agent_rows(self, stack, rundir, rabbit, gnocchi):
        from fastpath_integration.harness import ceilometer
        import fixtures
        # Current ceilometer first: its ceilometer-upgrade creates the
        # resource types every agent posts to.
        for cfg, publisher in (('stock', 'stock'), ('plugin', 'plugin')):
            name = '%s_current' % cfg
            topic = 'bench-%s' % name
            try:
                with fixtures.Fixture() as scope:
                    agent = scope.useFixture(ceilometer.CeilometerAgent(
                        rundir, 'bench-' + name, topic, rabbit.url,
                        gnocchi.url, publisher=publisher,
                        upgrade=cfg == 'stock'))
                    self._burst(name, agent.service.pid, rabbit.url, topic,
                                gnocchi.url)
            except Exception as exc:  # noqa: one row, not the section
                self._failed(AGENTS[name], exc)
        for cfg, dispatcher in PIKE_AGENTS:
            name = '%s_py27' % cfg
            topic = 'bench-%s' % name
            try:
                self._progress('starting Pike notification agent (%s)',
                               dispatcher)
                with fixtures.Fixture() as scope:
                    agent = scope.useFixture(ceilometer.CeilometerAgent(
                        rundir, 'bench-' + name, topic, rabbit.url,
                        gnocchi.url, release='pike', publisher=dispatcher,
                        resources_extra=IGNORED_WILDCARD))
                    self._burst(name, agent.pid, rabbit.url, topic,
                                gnocchi.url)
            except Exception as exc:  # noqa: one row, not the section
                self._failed(AGENTS[name], exc)

    # -- the section -----------------------------------------------------

    def run(self):
        from fastpath_integration.harness import ceilometer
        from fastpath_integration.harness import glance as harness_glance
        from fastpath_integration.harness import infrastructure
        from fastpath_integration.harness import stack as harness_stack
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
                for service in ('gnocchi', ceilometer.VENVS['current'],
                                harness_glance.VENVS['pike', 'eventlet'],
                                ceilometer.VENVS['pike']):
                    venvs.ensure_venv(service)
                harness_stack.install_project(rundir)
                self._progress('writing a %d MiB source image',
                               self.size // MIB)
                emulator = clusters.Emulated(self.args, self.size)
                emulator.start()
                stack.addCleanup(emulator.stop)
                self.glance_rows(stack, rundir, emulator)
                pg = stack.useFixture(infrastructure.PostgreSQL(
                    rundir, databases=('gnocchi',)))
                rabbit = stack.useFixture(infrastructure.RabbitMQ(rundir))
                gnocchi = stack.useFixture(infrastructure.Gnocchi(
                    rundir, pg.urls['gnocchi']))
                self.agent_rows(stack, rundir, rabbit, gnocchi)
        finally:
            shutil.rmtree(rundir, ignore_errors=True)
        self.report.note(
            'services: Pike glance-api 15.0.2 (eventlet, 1 worker) and '
            'ceilometer 9.0.7 on CPython 2.7 over the sheepdog emulator; '
            'get %d MiB per configuration, in-tree put %d MiB; agent '
            'burst %d samples; 2.7 here has no OpenSSL (builtin md5 caps '
            'uploads)' % (self.size // MIB, min(self.size, PUT_INTREE_MAX)
                          // MIB, self.samples))


def run(args, report):
    Section(args, report).run()
