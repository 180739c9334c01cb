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

import io
import os
import re

import fixtures
import glance_store
from oslo_config import cfg
from oslo_config import generator
from oslo_utils import importutils
from oslotest import base
from pbr import version
import testtools

from glance_store_fastsheep import opts

# Pike's glance_store (0.22.0) has the in-tree sheepdog driver; current
# glance_store (Ussuri and later) has none.
IN_TREE = importutils.try_import('glance_store._drivers.sheepdog')
NO_IN_TREE = ('this glance_store has no in-tree sheepdog driver (removed '
              'in Ussuri); tox -e py27 and tox -e pike run this test on '
              'glance_store 0.22.0')
WITH_IN_TREE = ('this glance_store has the in-tree sheepdog driver; '
                'tox -e py3 runs this test on current glance_store')
# The in-tree options Pike's sheepdog driver has in every tree.
PIKE_SHARED = ('sheepdog_store_address', 'sheepdog_store_port',
               'sheepdog_store_chunk_size')

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# The oslo.config of Pike's pins (tools/pike-constraints.txt), whose
# generator wrote the Pike sample.
PIKE_OSLO_CONFIG = '4.11.2'


class TestOptionRegistration(base.BaseTestCase):

    def test_glance_store_register_opts_with_every_driver(self):
        # glance-api's first call: it gathers the OPTIONS of every
        # installed driver, this one included, into [glance_store]. On
        # Pike the in-tree sheepdog driver is among them.
        conf = cfg.ConfigOpts()
        glance_store.register_opts(conf)
        conf([], project='glance')
        self.assertEqual(opts.DEFAULT_READ_SIZE,
                         conf.glance_store.sheepdog_store_read_size)
        self.assertEqual(7000, conf.glance_store.sheepdog_store_port)
        self.assertEqual(64, conf.glance_store.sheepdog_store_chunk_size)

    @testtools.skipIf(IN_TREE is None, NO_IN_TREE)
    def test_in_tree_option_objects_are_shared(self):
        in_tree = dict((opt.dest, opt) for opt in opts._in_tree_options())
        own = dict((opt.dest, opt) for opt in opts.SHEEPDOG_OPTS)
        shared = [name for name in opts.SHARED_OPTION_NAMES
                  if name in in_tree]
        self.assertEqual([], [n for n in PIKE_SHARED if n not in shared])
        for name in shared:
            self.assertIs(in_tree[name], own[name], name)

    @testtools.skipIf(IN_TREE is not None, WITH_IN_TREE)
    def test_without_in_tree_driver_every_option_is_ours(self):
        self.assertEqual([], opts._in_tree_options())
        own = dict((opt.dest, opt) for opt in opts.SHEEPDOG_OPTS)
        for name in opts.SHARED_OPTION_NAMES:
            # This module's help, in the layout TestOptionHelp checks.
            self.assertIn('Possible values:', own[name].help, name)

    def test_share_options_replaces_only_same_names(self):
        ours = [cfg.IntOpt('sheepdog_store_port', default=7000, help='a'),
                cfg.IntOpt('sheepdog_store_read_size', default=1, help='b')]
        theirs = [cfg.IntOpt('sheepdog_store_port', default=7000,
                             help='other help'),
                  cfg.StrOpt('something_else')]
        shared = opts.share_options(ours, theirs)
        self.assertIs(theirs[0], shared[0])
        self.assertIs(ours[1], shared[1])
        self.assertEqual(2, len(shared))

    def test_list_opts_lists_every_option_once(self):
        [(group, listed)] = opts.list_opts()
        self.assertEqual('glance_store', group)
        names = [opt.dest for opt in listed]
        self.assertEqual(len(names), len(set(names)))
        self.assertIn('sheepdog_store_write_concurrency', names)


class TestSharedOptions(base.BaseTestCase):

    def test_only_the_named_options_are_shared(self):
        # A tree patched further than patches/glance_store may own more
        # sheepdog_store_* options: those keep this driver's objects.
        theirs = [cfg.HostAddressOpt('sheepdog_store_address',
                                     default='127.0.0.1'),
                  cfg.IntOpt('sheepdog_store_read_size', default=1 << 20),
                  cfg.IntOpt('sheepdog_store_pipe_size', default=1)]
        shared = opts.share_options(opts.SHEEPDOG_OPTS, theirs)
        by_name = dict((opt.dest, opt) for opt in shared)
        self.assertIs(theirs[0], by_name['sheepdog_store_address'])
        self.assertIs(theirs[1], by_name['sheepdog_store_read_size'])
        self.assertIsNot(theirs[2], by_name['sheepdog_store_pipe_size'])
        self.assertEqual(opts.DEFAULT_PIPE_SIZE,
                         by_name['sheepdog_store_pipe_size'].default)
        self.assertEqual([opt.dest for opt in opts.SHEEPDOG_OPTS],
                         [opt.dest for opt in shared])

    def test_shared_names_are_the_in_tree_ones(self):
        self.assertEqual(
            set(['sheepdog_store_address', 'sheepdog_store_port',
                 'sheepdog_store_chunk_size', 'sheepdog_store_read_size']),
            set(opts.SHARED_OPTION_NAMES))

    EXPECTED_DEFAULTS = {
        'sheepdog_store_address': opts.DEFAULT_ADDR,
        'sheepdog_store_port': opts.DEFAULT_PORT,
        'sheepdog_store_chunk_size': opts.DEFAULT_CHUNK_SIZE,
        'sheepdog_store_read_size': opts.DEFAULT_READ_SIZE}

    def test_shared_defaults_are_the_documented_ones(self):
        own = dict((opt.dest, opt.default) for opt in opts.SHEEPDOG_OPTS)
        self.assertEqual(self.EXPECTED_DEFAULTS,
                         dict((name, own[name])
                              for name in self.EXPECTED_DEFAULTS))

    @testtools.skipIf(IN_TREE is None, NO_IN_TREE)
    def test_in_tree_defaults_are_ours(self):
        # One default per option: whichever object glance_store
        # registers first, an operator gets the documented default.
        in_tree = dict((opt.dest, opt.default)
                       for opt in opts._in_tree_options()
                       if opt.dest in self.EXPECTED_DEFAULTS)
        self.assertEqual([], [n for n in PIKE_SHARED if n not in in_tree])
        for name, default in in_tree.items():
            self.assertEqual(self.EXPECTED_DEFAULTS[name], default, name)


class TestOptionHelp(base.BaseTestCase):

    def test_upstream_layout(self):
        # glance_store's own layout: a one-line summary, a blank line,
        # then "Possible values:" and "Related options:" as bullets.
        own = [opt for opt in opts.SHEEPDOG_OPTS
               if opt.dest not in opts.SHARED_OPTION_NAMES or
               not opts._in_tree_options()]
        self.assertLessEqual(
            len(opts.SHEEPDOG_OPTS) - len(opts.SHARED_OPTION_NAMES),
            len(own))
        for opt in own:
            lines = opt.help.strip().splitlines()
            self.assertTrue(lines[0].strip(), opt.dest)
            self.assertIn('', lines, opt.dest)
            possible = lines.index('Possible values:')
            related = lines.index('Related options:')
            self.assertLess(possible, related, opt.dest)
            self.assertTrue(lines[possible + 1].lstrip().startswith('* '),
                            opt.dest)
            self.assertTrue(lines[related + 1].lstrip().startswith('* '),
                            opt.dest)

    def test_no_measured_figures(self):
        # Figures go stale with every run: they live in the docs, dated,
        # with the command that produced them. The help gives the rule.
        rate = re.compile(r'\b(?:[KMG]i?B|[KMG]bit)/s\b|\bper second\b')
        for opt in opts.SHEEPDOG_OPTS:
            self.assertIsNone(rate.search(opt.help), opt.dest)
            self.assertNotIn('Measured', opt.help, opt.dest)

    def test_bounds_are_oslo_config_ones(self):
        conf = cfg.ConfigOpts()
        conf.register_opts(opts.SHEEPDOG_OPTS, group='glance_store')
        for name, value in (('sheepdog_store_write_concurrency', 0),
                            ('sheepdog_store_write_budget', -1),
                            ('sheepdog_store_read_size', 4095),
                            ('sheepdog_store_pipe_size', -1),
                            # F_SETPIPE_SZ would truncate it to 4096.
                            ('sheepdog_store_pipe_size', 1 << 32),
                            ('sheepdog_store_transfer_timeout', 0.5)):
            self.assertRaises(ValueError, conf.set_override, name, value,
                              group='glance_store')


class TestSampleConfig(base.BaseTestCase):
    """The checked-in samples are what oslo-config-generator writes now.

    Two samples, because Pike's glance_store registers the in-tree
    objects (and help) of the shared options: one generated against
    current glance_store, one against Pike's, each with its
    etc/oslo-config-generator file (doc/source/fastsheep.rst says how to
    regenerate them).
    """

    @staticmethod
    def generator_conf(*args):
        conf = cfg.ConfigOpts()
        generator.register_cli_opts(conf)
        conf(list(args))
        return conf

    def check(self, name, command):
        config_file = os.path.join(TOP, 'etc', 'oslo-config-generator',
                                   name)
        sample = self.generator_conf('--config-file',
                                     config_file).output_file
        output = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'sample')
        generator.generate(self.generator_conf(
            '--config-file', config_file, '--output-file', output))
        with io.open(output, encoding='utf-8') as generated:
            generated = generated.read()
        with io.open(os.path.join(TOP, sample), encoding='utf-8') as kept:
            kept = kept.read()
        self.assertIn('#sheepdog_store_read_window = ', generated)
        self.assertEqual(kept, generated,
                         '%s is stale; regenerate it: %s' % (sample, command))

    @testtools.skipIf(IN_TREE is not None, WITH_IN_TREE)
    def test_current_sample(self):
        self.check('glance-store-fastsheep.conf',
                   '.tox/py3/bin/oslo-config-generator --config-file '
                   'etc/oslo-config-generator/glance-store-fastsheep.conf')

    def test_pike_sample(self):
        found = version.VersionInfo('oslo.config').version_string()
        if IN_TREE is None or found != PIKE_OSLO_CONFIG:
            self.skipTest('the Pike sample is what oslo.config %s writes '
                          'with glance_store 0.22.0, this env has '
                          'oslo.config %s and %s in-tree sheepdog driver; '
                          'tox -e py27 runs this test'
                          % (PIKE_OSLO_CONFIG, found,
                             'the' if IN_TREE else 'no'))
        self.check('glance-store-fastsheep-pike.conf',
                   '.tox/py27/bin/oslo-config-generator --config-file '
                   'etc/oslo-config-generator/'
                   'glance-store-fastsheep-pike.conf')
