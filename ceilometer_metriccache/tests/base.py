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
"""Build real ceilometer dispatchers/publishers over the installed release.

The same tests run against ceilometer 9.0.7 (``tox -e pike``), where the
gnocchi code is ``ceilometer.dispatcher.gnocchi.GnocchiDispatcher``, and
against current ceilometer (``tox -e py3``), where it is
``ceilometer.publisher.gnocchi.GnocchiPublisher``. This module hides the
differences the tests do not care about.
"""

import fnmatch
import logging
import os

import fixtures
from oslo_config import cfg
from oslo_utils import netutils
from oslotest import base as oslo_base
import six
from stevedore import extension
import yaml

from ceilometer_metriccache.tests import fakes

try:
    from ceilometer.publisher import gnocchi as host_module
    PIKE = False
except ImportError:
    from ceilometer.dispatcher import gnocchi as host_module
    PIKE = True

RELEASE = 'pike' if PIKE else 'current'


def _resources_definition_args():
    init = host_module.ResourcesDefinition.__init__
    return getattr(init, '__func__', init).__code__.co_argcount - 1


# Queens (ceilometer 10): a publisher, but Pike's ResourcesDefinition
# (definition, default archive policy, plugin manager), one archive policy
# per definition, and the resource created with ``rd.metrics`` itself.
# Rocky (11) added per-metric policies and the override argument.
QUEENS = not PIKE and _resources_definition_args() == 3
QUEENS_WILDCARDS = (
    'Queens creates a resource with rd.metrics itself, which lists no '
    'pattern-matched name, so wildcard_metrics cannot give such a metric '
    'its definition\'s (or the URL\'s) archive policy there (known '
    'limitation); py27, pike and line-ussuri on run this test')
NOT_PIKE = ('Pike only: this ceilometer has no gnocchi dispatcher; '
            'tox -e pike runs this test')
NOT_CURRENT = ('Queens and later only: this ceilometer has no gnocchi '
               'publisher; tox -e py3 runs this test')


def stock_resources_file():
    """The gnocchi_resources.yaml shipped in the installed ceilometer."""
    return os.path.join(os.path.dirname(host_module.__file__), 'data',
                        'gnocchi_resources.yaml')


def load_stock_definitions():
    with open(stock_resources_file()) as f:
        return yaml.safe_load(f)['resources']


_PLUGIN_MANAGER = []


def plugin_manager():
    if not _PLUGIN_MANAGER:
        _PLUGIN_MANAGER.append(extension.ExtensionManager(
            namespace='ceilometer.event.trait_plugin'))
    return _PLUGIN_MANAGER[0]


def make_definition(cfg_dict, archive_policy='low'):
    """Upstream's ResourcesDefinition for one definition dict."""
    if PIKE or QUEENS:
        return host_module.ResourcesDefinition(cfg_dict, archive_policy,
                                               plugin_manager())
    return host_module.ResourcesDefinition(cfg_dict, archive_policy, None,
                                           plugin_manager())


class _Host(object):
    """Just what upstream's lookup methods read from ``self``."""

    def __init__(self, definitions):
        self.resources_definition = definitions


def _upstream_function(cls, name):
    """Upstream's method as a plain function (2.7 binds it to cls)."""
    return six.get_unbound_function(getattr(cls, name))


def upstream_metric_loop(definitions, name):
    """Pike's fnmatch loop: Pike's own code, or its semantics on current.

    Current ceilometer no longer has the loop (8099a9491 replaced it by a
    dict of literal names); there it is what ``[metriccache]
    wildcard_metrics`` opts into, so the Pike semantics are spelled out:
    first definition, in file order, with an entry fnmatch accepts.
    ``tox -e pike`` checks the same index against Pike's own loop.
    """
    if PIKE:
        return _upstream_function(host_module.GnocchiDispatcher,
                                  '_get_resource_definition_from_metric')(
            _Host(definitions), name)
    for rd in definitions:
        for entry in rd.cfg['metrics']:
            if fnmatch.fnmatch(name, entry):
                return rd
    return None


def upstream_event_loop(definitions, event_type):
    """Upstream's own event loop (still a loop in current ceilometer)."""
    cls = (host_module.GnocchiDispatcher if PIKE
           else host_module.GnocchiPublisher)
    return _upstream_function(cls, '_get_resource_definition_from_event')(
        _Host(definitions), event_type)


def upstream_is_swift(definitions, name):
    """Pike's own answer: does any swift_account definition match name."""
    return _upstream_function(host_module.GnocchiDispatcher,
                              '_is_swift_account_sample')(
        _Host(definitions), {'counter_name': name})


class _FnmatchModule(object):
    """What upstream calls as ``fnmatch.fnmatch``, minus some patterns."""

    def __init__(self, matches_nothing):
        self._matches_nothing = frozenset(matches_nothing)

    def fnmatch(self, name, pattern):
        if pattern in self._matches_nothing:
            return False
        return fnmatch.fnmatch(name, pattern)


def bad_patterns_match_nothing(patterns):
    """Upstream's loops, with these patterns matching nothing.

    The contract for a pattern Python 2.7's re rejects: 2.7's fnmatch
    raises and 3.x reads it its own way; the plugin makes it match
    nothing on both, so the oracle is upstream's code with that one
    difference.
    """
    return fixtures.MockPatch(host_module.__name__ + '.fnmatch',
                              _FnmatchModule(patterns))


class TestCase(oslo_base.BaseTestCase):

    def setUp(self):
        super(TestCase, self).setUp()
        self.session = fakes.FakeGnocchiSession()
        self.logs = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        self.tempdir = self.useFixture(fixtures.TempDir()).path

    def write_resources(self, resources, name='resources.yaml'):
        path = os.path.join(self.tempdir, name)
        with open(path, 'w') as f:
            yaml.safe_dump({'resources': resources}, f)
        return path

    def stub_clients(self):
        module = host_module.__name__
        self.useFixture(fixtures.MockPatch(
            module + '.keystone_client.get_client'))
        client = fakes.gnocchi_client(self.session)
        self.useFixture(fixtures.MockPatch(
            module + '.gnocchi_client.get_gnocchiclient',
            return_value=client))

    def make_conf(self, resources_file=None, memo_size=None,
                  wildcard_metrics=None):
        """A ceilometer configuration for the installed release."""
        if PIKE:
            from ceilometer.dispatcher import gnocchi_opts
            conf = cfg.ConfigOpts()
            conf.register_opts(gnocchi_opts.dispatcher_opts,
                               group='dispatcher_gnocchi')
            conf([], project='ceilometer', default_config_files=[])
            conf.set_override('filter_service_activity', False,
                              group='dispatcher_gnocchi')
            if resources_file:
                conf.set_override('resources_definition_file',
                                  resources_file, group='dispatcher_gnocchi')
        else:
            from ceilometer import service
            conf = service.prepare_service([], [])
        self._set_plugin_opts(conf, memo_size, wildcard_metrics)
        return conf

    @staticmethod
    def publisher_url(resources_file=None, query=''):
        url = 'gnocchi-metriccache://?enable_filter_project=false'
        if resources_file and not PIKE:
            url += '&resources_definition_file=' + resources_file
        return url + query

    def make_host(self, cls=None, resources_file=None, memo_size=None,
                  wildcard_metrics=None):
        """The plugin (default) or upstream's class, fully constructed."""
        self.stub_clients()
        if cls is None:
            cls = self.plugin_class()
        conf = self.make_conf(resources_file, memo_size, wildcard_metrics)
        if PIKE:
            return cls(conf)
        return cls(conf, netutils.urlsplit(self.publisher_url(
            resources_file)))

    @staticmethod
    def _set_plugin_opts(conf, memo_size, wildcard_metrics):
        from ceilometer_metriccache import opts
        opts.register_opts(conf)
        if memo_size is not None:
            conf.set_override('memo_size', memo_size, group=opts.GROUP)
        if wildcard_metrics is not None:
            conf.set_override('wildcard_metrics', wildcard_metrics,
                              group=opts.GROUP)

    @staticmethod
    def plugin_class():
        if PIKE:
            from ceilometer_metriccache import pike_dispatcher
            return pike_dispatcher.MetricCacheDispatcher
        from ceilometer_metriccache import current_publisher
        return current_publisher.MetricCachePublisher

    @staticmethod
    def upstream_class():
        if PIKE:
            return host_module.GnocchiDispatcher
        return host_module.GnocchiPublisher

    def record(self, host, samples):
        """Push sample dicts through the host's record/publish path."""
        if PIKE:
            return host.record_metering_data([dict(s) for s in samples])
        from ceilometer import sample as sample_mod
        return host.publish_samples([
            sample_mod.Sample(name=s['counter_name'],
                              type=s.get('counter_type', 'gauge'),
                              unit=s['counter_unit'],
                              volume=s['counter_volume'],
                              user_id=s['user_id'],
                              project_id=s['project_id'],
                              resource_id=s['resource_id'],
                              timestamp=s['timestamp'],
                              resource_metadata=s.get('resource_metadata',
                                                      {}))
            for s in samples])

    def lookup(self, host, name):
        """The plugin's answer through the path record/publish uses."""
        if PIKE:
            return host._get_resource_definition_from_metric(name)
        return host.metric_map.get(name)


def sample(name, resource_id, value=1.0, unit='B', **extra):
    data = {'counter_name': name, 'counter_unit': unit,
            'counter_volume': value, 'counter_type': 'gauge',
            'user_id': 'u1', 'project_id': 'p1',
            'resource_id': resource_id,
            'timestamp': '2024-01-01T00:00:00',
            'resource_metadata': {}}
    data.update(extra)
    return data


def event(event_type, resource_id):
    """An event whose traits carry the resource id, for either release."""
    if PIKE:
        return {'event_type': event_type,
                'traits': [['resource_id', 1, resource_id]],
                'message_id': 'm-' + resource_id, 'raw': {},
                'generated': '2024-01-01T00:00:00'}
    from ceilometer.event import models
    return models.Event('m-' + resource_id, event_type,
                        '2024-01-01T00:00:00',
                        [models.Trait('resource_id', 1, resource_id)], {})


def publish_events(host, events):
    if PIKE:
        return host.record_events(events)
    return host.publish_events(events)
