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
"""A Pike glance_store patched by patches/glance_store, with fastsheep too.

An operator may rebuild glance_store with the series and also install the
fastsheep plugin. glance registers the options of every
``glance_store.drivers`` entry point in ``[glance_store]``; both drivers
own ``sheepdog_store_address``, ``_port``, ``_chunk_size`` and
``_read_size``, and two different option objects under one name would
make oslo.config raise DuplicateOptError, so glance-api would not start.
tools/test-patches.sh runs this module with the patched tree first on
PYTHONPATH and the repository root after it, on Python 3 and 2.7.
"""

import os
import shutil
import sys
import tempfile
import unittest

from oslo_config import cfg
from oslo_utils import units

SHARED = ('sheepdog_store_address', 'sheepdog_store_port',
          'sheepdog_store_chunk_size', 'sheepdog_store_read_size')

ENTRY_POINTS = """\
[glance_store.drivers]
fastsheep = glance_store_fastsheep.store:Store
"""


class TestPatchedTreeWithPlugin(unittest.TestCase):

    def setUp(self):
        from glance_store._drivers import sheepdog as in_tree
        self.in_tree = in_tree
        # Only the patched driver has the read size option.
        self.assertTrue(hasattr(in_tree, 'DEFAULT_READ_SIZE'),
                        '%s is not the patched driver' % in_tree.__file__)

    def _install_entry_point(self):
        """Make fastsheep a glance_store.drivers entry point, as pip would.

        The repository is on the path but not installed, so a throw-away
        dist-info directory carries the entry point of setup.cfg, unless
        the checkout's own egg-info (``pip install -e``, as ``tox -e py27``
        leaves it) already does: a second ``fastsheep`` entry point would
        make stevedore refuse both and glance_store skip the driver.
        """
        import pkg_resources
        if any(True for _ in pkg_resources.iter_entry_points(
                'glance_store.drivers', 'fastsheep')):
            return
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        info = os.path.join(tmp, 'fastsheep_probe-1.0.dist-info')
        os.mkdir(info)
        with open(os.path.join(info, 'METADATA'), 'w') as f:
            f.write('Metadata-Version: 2.1\nName: fastsheep-probe\n'
                    'Version: 1.0\n')
        with open(os.path.join(info, 'entry_points.txt'), 'w') as f:
            f.write(ENTRY_POINTS)
        sys.path.append(tmp)
        self.addCleanup(sys.path.remove, tmp)
        pkg_resources.working_set.add_entry(tmp)

    def test_plugin_shares_the_in_tree_options(self):
        from glance_store_fastsheep import opts
        in_tree = dict((opt.dest, opt) for opt in self.in_tree._SHEEPDOG_OPTS)
        plugin = dict((opt.dest, opt) for opt in opts.SHEEPDOG_OPTS)
        for name in SHARED:
            self.assertIs(in_tree[name], plugin[name], name)

    def test_glance_registers_both_drivers(self):
        import glance_store
        from glance_store import backend
        from glance_store_fastsheep import store
        self._install_entry_point()
        drivers = [ext.name for ext in
                   backend.extension.ExtensionManager('glance_store.drivers')]
        self.assertIn('fastsheep', drivers)
        self.assertIn('sheepdog', drivers)
        conf = cfg.ConfigOpts()
        # What glance-api does at start-up: every driver's options in
        # [glance_store]; DuplicateOptError would fail here.
        glance_store.register_opts(conf)
        registered = conf.glance_store.keys()
        for opt in store.Store.OPTIONS:
            self.assertIn(opt.dest, registered)
        conf([], project='glance')
        self.assertEqual(units.Mi,
                         conf.glance_store.sheepdog_store_read_size)

    def test_plugin_sees_a_one_mib_read_size_default(self):
        from glance_store_fastsheep import opts
        conf = cfg.ConfigOpts()
        conf.register_opts(self.in_tree._SHEEPDOG_OPTS, group='glance_store')
        conf.register_opts(opts.SHEEPDOG_OPTS, group='glance_store')
        conf([], project='glance')
        self.assertEqual(units.Mi,
                         conf.glance_store.sheepdog_store_read_size)
        self.assertEqual(units.Mi, self.in_tree.DEFAULT_READ_SIZE)
