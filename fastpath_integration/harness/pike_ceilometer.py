"""Pike's ceilometer-agent-notification (9.0.7) on CPython 2.7.

Run from the cached ``pike27-ceilometer`` venv against the harness's
RabbitMQ and gnocchi, with one of three gnocchi dispatchers:

- ``stock``: Pike's own, ``- gnocchi://`` in the pipelines;
- ``patched``: the same dispatcher from a copy of ceilometer 9.0.7 with
  the quilt series ``patches/ceilometer`` pushed, ahead of the venv's
  copy on PYTHONPATH;
- ``plugin``: the metric-cache dispatcher as README tells operators,
  ``- gnocchi-metriccache://`` in both pipelines.
"""

import configparser
import logging
import os

import fixtures

from fastpath_integration.harness import pike_sources
from fastpath_integration.harness import processes
from fastpath_integration.harness import services
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)

VENV = 'pike27-ceilometer'
DISPATCHERS = ('stock', 'patched', 'plugin')

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


class PikeCeilometerAgent(fixtures.Fixture):
    """One Pike notification agent, one worker, on its own topic.

    ``resources_extra``: YAML appended to the resource file (a bad
    pattern, for the test that the agent survives it).
    """

    def __init__(self, rundir, name, dispatcher, topic, transport_url,
                 gnocchi_url, resources_extra=''):
        super(PikeCeilometerAgent, self).__init__()
        if dispatcher not in DISPATCHERS:
            raise ValueError('dispatcher %r is not one of %s'
                             % (dispatcher, DISPATCHERS))
        self.rundir = rundir
        self.name = name
        self.dispatcher = dispatcher
        self.topic = topic
        self.transport_url = transport_url
        self.gnocchi_url = gnocchi_url
        self.resources_extra = resources_extra

    def _pipelines(self, base):
        pipeline, event_pipeline = services.write_pipelines(
            base, 'gnocchi://', pike=True)
        if self.dispatcher == 'plugin':
            # README: ``- gnocchi://`` becomes ``- gnocchi-metriccache://``
            # in both files; devstack's function does just that.
            services.devstack_lib('configure_fastpath_ceilometer_pipelines',
                                  [pipeline, event_pipeline],
                                  log=os.path.join(base, 'configure.log'))
        return pipeline, event_pipeline

    def _setUp(self):
        venv = venvs.ensure_venv(VENV)
        base = os.path.join(self.rundir, 'pike-ceilometer-%s' % self.name)
        os.makedirs(base)
        resources = os.path.join(base, 'gnocchi_resources.yaml')
        services.write_resources_file(venv, resources, pike=True,
                                      extra=self.resources_extra)
        pipeline, event_pipeline = self._pipelines(base)
        self.log = os.path.join(self.rundir,
                                'pike-ceilometer-%s.log' % self.name)
        conf = os.path.join(base, 'ceilometer.conf')
        parser = configparser.ConfigParser(interpolation=None)
        for section, option, value in (
                ('DEFAULT', 'transport_url', self.transport_url),
                ('DEFAULT', 'pipeline_cfg_file', pipeline),
                ('DEFAULT', 'event_pipeline_cfg_file', event_pipeline),
                ('oslo_messaging_notifications', 'topics', self.topic),
                ('notification', 'workers', '1'),
                ('service_credentials', 'auth_type', 'gnocchi-basic'),
                ('service_credentials', 'user', 'admin'),
                ('service_credentials', 'endpoint', self.gnocchi_url),
                # Pike asks keystone for the service project's id
                # otherwise; there is no keystone here.
                ('dispatcher_gnocchi', 'filter_service_activity', 'false'),
                ('dispatcher_gnocchi', 'resources_definition_file',
                 resources)):
            if section != 'DEFAULT' and not parser.has_section(section):
                parser.add_section(section)
            parser.set(section, option, value)
        with open(conf, 'w') as f:
            parser.write(f)
        compat = os.path.join(base, 'compat')
        os.makedirs(compat)
        with open(os.path.join(compat, 'sitecustomize.py'), 'w') as f:
            f.write(GNOCCHICLIENT_ACCEPT)
        path = [compat]
        if self.dispatcher == 'patched':
            path.append(pike_sources.patched_tree(
                'ceilometer', os.path.join(base, 'patched'),
                os.path.join(base, 'patch.log')))
        extra = {'PYTHONPATH': ':'.join(path)}
        env = venvs.venv_env(venv, extra)
        self.dispatcher_file = pike_sources.module_file(
            venv, 'ceilometer.dispatcher.gnocchi', env)
        if (self.dispatcher == 'patched') == self.dispatcher_file.startswith(
                venvs.cache_root()):
            raise RuntimeError('%s: gnocchi dispatcher loaded from %s'
                               % (self.name, self.dispatcher_file))
        # The resource types are the current agent's ceilometer-upgrade's
        # (a superset of Pike's); Pike's own upgrade is not run.
        self.service = self.useFixture(processes.Service(
            'pike-ceilometer-%s' % self.name,
            [os.path.join(venv, 'bin', 'ceilometer-agent-notification'),
             '--config-file', conf, '--log-file', self.log],
            os.path.join(base, 'stdout.log'), cwd=base, env=env))
        self.pid = self.service.pid
        services.wait_agent_consuming(self.service, self.name,
                                      self.transport_url, self.topic,
                                      self.gnocchi_url)
        with open(pipeline) as f:
            self.pipeline = f.read()
        LOG.info('Pike ceilometer %s (%s dispatcher): topic %s', self.name,
                 self.dispatcher, self.topic)
