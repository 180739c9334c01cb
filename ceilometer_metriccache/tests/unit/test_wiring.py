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
"""Which class ``gnocchi-metriccache`` names, and the option."""

from oslo_config import cfg
import testtools

from ceilometer_metriccache import opts
from ceilometer_metriccache import release_publisher
from ceilometer_metriccache.tests import base


def _entry_points(group):
    try:
        from importlib import metadata
    except ImportError:   # Python 2.7 and 3.6-3.7: setuptools' own API
        import pkg_resources
        return list(pkg_resources.iter_entry_points(group))
    found = metadata.entry_points()
    if hasattr(found, 'select'):  # Python 3.10 and later
        return list(found.select(group=group))
    # 3.8, 3.9: a dict by group, listing a distribution once per sys.path
    # entry that holds it (the checkout's egg-info and the venv's
    # dist-info); 3.10 and later list each distribution once.
    unique = []
    for entry_point in found.get(group, ()):
        if entry_point not in unique:
            unique.append(entry_point)
    return unique


def _module(entry_point):
    if hasattr(entry_point, 'module_name'):  # pkg_resources
        return entry_point.module_name
    # importlib.metadata: .module from Python 3.9 on, .value always.
    return entry_point.value.split(':')[0].strip()


class TestWiring(testtools.TestCase):

    def test_publisher_matches_installed_release(self):
        if base.PIKE:
            from ceilometer.publisher import direct
            self.assertIs(direct.DirectPublisher,
                          release_publisher.MetricCachePublisher)
        else:
            from ceilometer.publisher import gnocchi
            self.assertTrue(issubclass(release_publisher.MetricCachePublisher,
                                       gnocchi.GnocchiPublisher))

    def test_entry_points_share_the_scheme_name(self):
        targets = {}
        for namespace in ('ceilometer.dispatcher.meter',
                          'ceilometer.dispatcher.event',
                          'ceilometer.sample.publisher',
                          'ceilometer.event.publisher'):
            eps = [ep for ep in _entry_points(namespace)
                   if ep.name == 'gnocchi-metriccache']
            self.assertEqual(1, len(eps), namespace)
            targets[namespace] = _module(eps[0])
        self.assertEqual('ceilometer_metriccache.pike_dispatcher',
                         targets['ceilometer.dispatcher.meter'])
        self.assertEqual('ceilometer_metriccache.release_publisher',
                         targets['ceilometer.sample.publisher'])

    def test_memo_size_option(self):
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        opts.register_opts(conf)   # idempotent, as each host registers
        conf([], default_config_files=[])
        self.assertEqual(10000, conf.metriccache.memo_size)
        self.assertFalse(conf.metriccache.wildcard_metrics)
        self.assertRaises(ValueError, conf.set_override, 'memo_size', 1,
                          group='metriccache')
        self.assertEqual([('metriccache', opts.OPTS)], opts.list_opts())
        self.assertTrue(all(o.help for o in opts.OPTS))
