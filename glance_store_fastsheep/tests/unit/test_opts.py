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

import glance_store
from oslo_config import cfg
from oslotest import base

from glance_store_fastsheep import opts


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

    def test_in_tree_option_objects_are_shared(self):
        in_tree = opts._in_tree_options()
        own = dict((opt.dest, opt) for opt in opts.SHEEPDOG_OPTS)
        for opt in in_tree:
            self.assertIs(opt, own[opt.dest])

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
