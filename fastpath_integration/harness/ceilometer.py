"""ceilometer-agent-notification publishing to gnocchi, by release.

One fixture for every agent the suite and the bench run:

- ``release='current'``: the cached ``ceilometer`` venv (Python 3),
  ``publisher`` ``stock`` (``gnocchi://``) or ``plugin`` (``gnocchi://``
  rewritten by devstack/lib/fastpath to the metric-cache publisher);
- ``release='pike'``: ceilometer 9.0.7 on CPython 2.7 from the cached
  ``pike27-ceilometer`` venv with one of three gnocchi dispatchers:
  ``stock`` (Pike's own), ``patched`` (the same from a copy of 9.0.7 with
  the quilt series ``patches/ceilometer`` pushed, ahead of the venv's copy
  on PYTHONPATH) or ``plugin`` (``- gnocchi-metriccache://`` in both
  pipelines, as README tells operators, written by the same devstack
  function).

Each agent listens on its own topic so that several run side by side.
"""

import glob
import logging
import os
import uuid

import fixtures
import requests

from fastpath_integration import bus
from fastpath_integration.harness import devstack
from fastpath_integration.harness import pike_sources
from fastpath_integration.harness import processes
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)

# The cached venv of each release.
VENVS = {'current': 'ceilometer', 'pike': 'pike27-ceilometer'}
PUBLISHERS = {'current': ('stock', 'plugin'),
              'pike': ('stock', 'patched', 'plugin')}

# The suite's own definition: one exact metric name and one wildcard
# pattern. Pike lists a definition's metrics; Queens and later map each
# name to its options.
SUITE_METRICS = ('fastpath.exact.metric', 'fastpath.wild.*')

# The attributes gnocchi's ``image`` resource type requires.
IMAGE_METADATA = {'name': 'probe', 'container_format': 'bare',
                  'disk_format': 'raw'}

# Pike's gnocchiclient (3.3.1) asks for "application/json, */*"; the
# current gnocchi here (WebOb 1.8) then answers errors in HTML, so the
# dispatcher cannot read the "Unknown resources" cause of a batch post
# and never creates a resource. Every 2.7 gnocchiclient sends the same
# header; 7.x on Python 3 sends "application/json" alone. The Pike agent
# gets that one header through a sitecustomize on its PYTHONPATH; no
# ceilometer or dispatcher code is touched.
GNOCCHICLIENT_ACCEPT = (
    '"""Pike agent, current gnocchi: ask gnocchi for JSON errors."""\n'
    'from gnocchiclient.v1 import base\n'
    "base.Manager.DEFAULT_HEADERS = {'Accept': 'application/json'}\n")


class CeilometerAgent(fixtures.Fixture):
    """One notification agent, one worker, on its own topic.

    ``upgrade`` runs ``ceilometer-upgrade`` first (current release only),
    which creates gnocchi's resource types and archive policies: the
    first current agent of a gnocchi does it for every agent, Pike's
    included (the current types are a superset of Pike's).
    ``wildcard_metrics`` sets the current plugin's opt-in to Pike's
    semantics (``[metriccache] wildcard_metrics``); off, it keeps
    upstream's. ``resources_extra``: YAML appended to the resource file
    (a bad pattern, for the test that the agent survives it).

    After set-up: ``service``, ``pid``, ``log`` (the agent's log file),
    ``pipeline`` (the meter pipeline's text) and, on Pike,
    ``dispatcher_file`` (where the gnocchi dispatcher was imported from).
    """

    def __init__(self, rundir, name, topic, transport_url, gnocchi_url,
                 release='current', publisher='stock', upgrade=False,
                 wildcard_metrics=False, resources_extra=''):
        super(CeilometerAgent, self).__init__()
        if publisher not in PUBLISHERS.get(release, ()):
            raise ValueError('publisher %r of release %r is not one of %s'
                             % (publisher, release, PUBLISHERS))
        if upgrade and release != 'current':
            raise ValueError('ceilometer-upgrade runs from the current '
                             'release only')
        self.rundir = rundir
        self.name = name
        self.topic = topic
        self.transport_url = transport_url
        self.gnocchi_url = gnocchi_url
        self.release = release
        self.publisher = publisher
        self.upgrade = upgrade
        self.wildcard_metrics = wildcard_metrics
        self.resources_extra = resources_extra
        self.dispatcher_file = None

    @property
    def pike(self):
        return self.release == 'pike'

    def _setUp(self):
        venv = venvs.ensure_venv(VENVS[self.release])
        prefix = 'pike-ceilometer' if self.pike else 'ceilometer'
        base = os.path.join(self.rundir, '%s-%s' % (prefix, self.name))
        os.makedirs(base)
        self.log = os.path.join(self.rundir,
                                '%s-%s.log' % (prefix, self.name))
        resources = os.path.join(base, 'gnocchi_resources.yaml')
        write_resources_file(venv, resources, pike=self.pike,
                             extra=self.resources_extra)
        if self.pike:
            # Pike's dispatcher reads its resource file from its options.
            url = 'gnocchi://'
        else:
            url = ('gnocchi://?enable_filter_project=false'
                   '&resources_definition_file=%s' % resources)
        pipeline, event_pipeline = write_pipelines(base, url, pike=self.pike)
        if self.publisher == 'plugin':
            # README: ``- gnocchi://`` becomes the plugin's publisher in
            # both files; devstack's function does just that.
            devstack.run('configure_fastpath_ceilometer_pipelines',
                         [pipeline, event_pipeline],
                         log=os.path.join(base, 'configure.log'))
        conf = os.path.join(base, 'ceilometer.conf')
        devstack.write_ini(conf, self._settings(pipeline, event_pipeline,
                                                resources))
        env = venvs.venv_env(venv, self._pike_env(venv, base)
                             if self.pike else None)
        bindir = os.path.join(venv, 'bin')
        if self.upgrade:
            processes.run([os.path.join(bindir, 'ceilometer-upgrade'),
                           '--config-file', conf],
                          log=os.path.join(base, 'upgrade.log'), cwd=base,
                          env=env)
        self.service = self.useFixture(processes.Service(
            '%s-%s' % (prefix, self.name),
            [os.path.join(bindir, 'ceilometer-agent-notification'),
             '--config-file', conf, '--log-file', self.log],
            os.path.join(base, 'stdout.log'), cwd=base, env=env))
        self.pid = self.service.pid
        wait_agent_consuming(self.service, self.name, self.transport_url,
                             self.topic, self.gnocchi_url)
        with open(pipeline) as f:
            self.pipeline = f.read()
        LOG.info('ceilometer %s (%s, %s): topic %s', self.name,
                 self.release, self.publisher, self.topic)

    def _settings(self, pipeline, event_pipeline, resources):
        settings = [
            ('DEFAULT', 'transport_url', self.transport_url),
            ('DEFAULT', 'pipeline_cfg_file', pipeline),
            ('DEFAULT', 'event_pipeline_cfg_file', event_pipeline),
            ('oslo_messaging_notifications', 'topics', self.topic),
            ('notification', 'workers', '1'),
            ('service_credentials', 'auth_type', 'gnocchi-basic'),
            ('service_credentials', 'user', 'admin'),
            ('service_credentials', 'endpoint', self.gnocchi_url)]
        if self.pike:
            settings += [
                # Pike asks keystone for the service project's id
                # otherwise; there is no keystone here.
                ('dispatcher_gnocchi', 'filter_service_activity', 'false'),
                ('dispatcher_gnocchi', 'resources_definition_file',
                 resources)]
        elif self.wildcard_metrics:
            settings.append(('metriccache', 'wildcard_metrics', 'true'))
        return settings

    def _pike_env(self, venv, base):
        """PYTHONPATH of a Pike agent, checked against its dispatcher."""
        compat = os.path.join(base, 'compat')
        os.makedirs(compat)
        with open(os.path.join(compat, 'sitecustomize.py'), 'w') as f:
            f.write(GNOCCHICLIENT_ACCEPT)
        path = [compat]
        if self.publisher == 'patched':
            path.append(pike_sources.patched_tree(
                'ceilometer', os.path.join(base, 'patched'),
                os.path.join(base, 'patch.log')))
        extra = {'PYTHONPATH': ':'.join(path)}
        self.dispatcher_file = pike_sources.module_file(
            venv, 'ceilometer.dispatcher.gnocchi',
            venvs.venv_env(venv, extra))
        if (self.publisher == 'patched') == self.dispatcher_file.startswith(
                venvs.cache_root()):
            raise RuntimeError('%s: gnocchi dispatcher loaded from %s'
                               % (self.name, self.dispatcher_file))
        return extra


def wait_agent_consuming(service, name, transport_url, topic, gnocchi_url):
    """Ready once a sample sent on the bus reaches gnocchi.

    That proves the listener, the pipeline and the publisher (or Pike's
    dispatcher) end to end.
    """
    probe = 'fastpath-probe-%s-%s' % (name, uuid.uuid4().hex[:8])
    notifier = bus.notifier(transport_url, topic, 'ceilometer')
    try:
        bus.send_samples(notifier, [bus.sample(
            'image.size', probe, 1.0, metadata=IMAGE_METADATA)])
    finally:
        notifier.transport.cleanup()
    url = '%s/v1/resource/image/%s' % (gnocchi_url, probe)
    service.wait_ready(lambda: requests.get(
        url, auth=('admin', ''), timeout=2).status_code == 200, 180,
        '%s (probe sample in gnocchi)' % service.name)


def write_pipelines(base, publisher, pike=False):
    """Write pipeline.yaml and event_pipeline.yaml publishing everything.

    Every meter and every event goes to ``publisher``; Pike's sinks also
    carry an empty ``transformers`` list. Returns both paths.
    """
    paths = []
    for kind, items in (('meter', 'meters'), ('event', 'events')):
        prefix = '' if kind == 'meter' else 'event_'
        path = os.path.join(base, prefix + 'pipeline.yaml')
        with open(path, 'w') as f:
            f.write('---\nsources:\n'
                    '    - name: %(kind)s_source\n'
                    '      %(items)s:\n          - "*"\n'
                    '      sinks:\n          - %(kind)s_sink\n'
                    'sinks:\n'
                    '    - name: %(kind)s_sink\n'
                    '%(transformers)s'
                    '      publishers:\n          - %(publisher)s\n'
                    % {'kind': kind, 'items': items, 'publisher': publisher,
                       'transformers': '      transformers:\n' if pike
                       else ''})
        paths.append(path)
    return tuple(paths)


def write_resources_file(ceilometer_venv, path, pike=False, extra=''):
    """Write the stock gnocchi_resources.yaml plus the suite's own.

    The stock file is the one the installed ceilometer ships: its gnocchi
    dispatcher's on Pike, its gnocchi publisher's later. ``extra`` is
    YAML appended after the suite's definition.
    """
    stock = glob.glob(os.path.join(
        ceilometer_venv, 'lib', 'python*', 'site-packages', 'ceilometer',
        'dispatcher' if pike else 'publisher', 'data',
        'gnocchi_resources.yaml'))[0]
    with open(stock) as f:
        text = f.read()
    entry = '      - %s\n' if pike else '      %s:\n'
    text = (text.rstrip('\n') + '\n\n'
            '  - resource_type: generic\n'
            '    metrics:\n' +
            ''.join(entry % name for name in SUITE_METRICS) + extra)
    with open(path, 'w') as f:
        f.write(text)
