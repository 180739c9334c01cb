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
"""The store's trust boundaries, against fake sheep (issue 36).

Two fake sheep (``first`` and its ``peer``) stand for the cluster and a
third, ``foreign``, for any other host a location could name. The
store is configured with ``first`` alone as its entry point:

- a location naming the foreign sheep, or a VDI not named like a glance
  image, is refused before anything connects to it, unless
  ``sheepdog_store_serve_any_name`` allows the name;
- the members are learned from the entry point only: a member that
  names another sheep in its node list changes nothing;
- a cluster down at start-up is a warning, not a disabled store.
"""

import socket

import fixtures
from glance_store import capabilities
from glance_store import exceptions

from glance_store_fastsheep.native import membership
from glance_store_fastsheep.native import proto
from glance_store_fastsheep import nodes
from glance_store_fastsheep import store_location
from glance_store_fastsheep.tests.unit import base
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base
from glance_store_fastsheep.tests.unit import test_store

IMAGE = '8d1d8cb6-5b63-4b8f-9a5e-1f3c1ab0a3d2'
OTHER = '0b7c3d52-0f7e-4d3a-8c1e-7f6a2b9e4d10'
OBJECT = native_base.OBJECT


class TrustTestCase(base.StoreTestCase):

    def setUp(self):
        super(TrustTestCase, self).setUp()
        self.first = fake_sheep.FakeSheep()
        self.addCleanup(self.first.close)
        self.peer = fake_sheep.FakeSheep(self.first)
        self.addCleanup(self.peer.close)
        self.foreign = fake_sheep.FakeSheep()
        self.addCleanup(self.foreign.close)
        self.data = native_base.payload(3 * OBJECT + 5, seed=36)
        self.first.add_image(IMAGE, self.data)
        self.foreign.add_image(IMAGE, b'not ours' * 100)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))

    def make_conf(self, **overrides):
        overrides.setdefault('sheepdog_store_client', 'native')
        overrides.setdefault('sheepdog_store_port', self.first_port())
        overrides.setdefault('sheepdog_store_serve_any_name', False)
        return super(TrustTestCase, self).make_conf(**overrides)

    def first_port(self):
        first = getattr(self, 'first', None)
        return first.port if first is not None else self.port

    def at(self, sheep, name=IMAGE, address='127.0.0.1'):
        return self.location(
            'sheepdog://%s:%d:%s' % (address, sheep.port, name))


class LocationAddressTest(TrustTestCase):

    def setUp(self):
        super(LocationAddressTest, self).setUp()
        self.conf = self.make_conf()
        self.sd = self.make_store()

    def test_a_foreign_sheep_is_refused_without_a_connection(self):
        loc = self.at(self.foreign)
        exc = self.assertRaises(exceptions.BadStoreUri, self.sd.get_size,
                                loc)
        self.assertIn('127.0.0.1:%d is neither an entry point'
                      % self.foreign.port, str(exc))
        self.assertRaises(exceptions.StoreGetNotSupported, self.sd.get, loc)
        self.assertRaises(exceptions.StoreDeleteNotSupported,
                          self.sd.delete, loc)
        self.assertEqual([], self.foreign.connections)
        self.assertIn((IMAGE, 0), self.foreign.images)

    def test_the_entry_point_and_its_members_are_served(self):
        self.assertEqual(len(self.data), self.sd.get_size(self.at(
            self.first)))
        # The peer is a member the entry point named.
        stream, length = self.sd.get(self.at(self.peer))
        self.assertEqual(self.data, b''.join(stream))
        self.assertEqual([], self.foreign.connections)

    def test_a_host_name_and_its_address_are_one_node(self):
        if ('127.0.0.1', self.first.port) not in nodes.resolve(
                ('localhost', self.first.port)):
            self.skipTest('localhost does not resolve to 127.0.0.1 here')
        self.assertEqual(len(self.data), self.sd.get_size(
            self.at(self.first, address='localhost')))
        self.assertRaises(exceptions.BadStoreUri, self.sd.get_size,
                          self.at(self.foreign, address='localhost'))
        self.assertEqual([], self.foreign.connections)
        self.assertTrue(nodes.same_node(('localhost', 7000),
                                        ('127.0.0.1', 7000)))
        self.assertFalse(nodes.same_node(('localhost', 7000),
                                         ('127.0.0.1', 7001)))


class LocationNameTest(TrustTestCase):

    def setUp(self):
        super(LocationNameTest, self).setUp()
        self.volume = 'volume-' + OTHER
        self.first.add_image(self.volume, b'a cinder volume')

    def test_a_vdi_not_named_like_an_image_is_refused(self):
        self.conf = self.make_conf()
        sd = self.make_store()
        loc = self.at(self.first, self.volume)
        exc = self.assertRaises(exceptions.BadStoreUri, sd.get_size, loc)
        self.assertIn('sheepdog_store_serve_any_name', str(exc))
        self.assertRaises(exceptions.StoreGetNotSupported, sd.get, loc)
        self.assertRaises(exceptions.StoreDeleteNotSupported, sd.delete,
                          loc)
        self.assertIn((self.volume, 0), self.first.images)
        self.assertNotIn(proto.OP_DEL_VDI,
                         [request[0] for request in self.first.requests])

    def test_the_option_serves_any_name(self):
        self.conf = self.make_conf(sheepdog_store_serve_any_name=True)
        sd = self.make_store()
        loc = self.at(self.first, self.volume)
        self.assertEqual(len(b'a cinder volume'), sd.get_size(loc))
        sd.delete(loc)
        self.assertNotIn((self.volume, 0), self.first.images)

    def test_the_image_id_glance_passes_must_be_the_name(self):
        self.conf = self.make_conf()
        sd = self.make_store()
        loc = self.at(self.first)
        loc.image_id = OTHER
        self.assertRaises(exceptions.BadStoreUri, sd.get_size, loc)
        loc.image_id = IMAGE
        self.assertEqual(len(self.data), sd.get_size(loc))


class MembershipTest(TrustTestCase):

    def test_a_locations_sheep_cannot_change_the_members(self):
        # The peer, a member, names the foreign sheep first: a sheep
        # that is no entry point is never asked, so uploads that fail
        # over never go there.
        self.peer.node_list = [('127.0.0.1', self.foreign.port),
                               ('127.0.0.1', self.peer.port)]
        self.conf = self.make_conf()
        sd = self.make_store()
        self.assertEqual(len(self.data), sd.get_size(self.at(self.peer)))
        # The entry point does the upload's first object and resets the
        # connection before answering: the upload fails over.
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 1, 'reset')
        data = native_base.payload(2 * OBJECT + 9, seed=7)
        uri = test_store.add(sd, OTHER, data)[0]
        self.assertEqual(data, self.first.image_bytes(uri.rsplit(':', 1)[1]))
        self.assertEqual([], self.foreign.connections)
        known = membership.MEMBERSHIPS[(('127.0.0.1', self.first.port),)]
        self.assertNotIn(('127.0.0.1', self.foreign.port), known.members)

    def test_a_newer_epoch_asks_the_entry_points_not_its_teller(self):
        # A member's reply carries a newer epoch: the members are asked
        # for again, from the entry point, never from that member,
        # whatever its own node list says.
        self.peer.node_list = [('127.0.0.1', self.foreign.port)]
        self.conf = self.make_conf()
        sd = self.make_store()
        self.assertEqual(len(self.data), sd.get_size(self.at(self.peer)))
        self.assertEqual([], self.node_lists(self.peer))
        asked = len(self.node_lists(self.first))
        self.first.epoch += 1
        self.assertEqual(len(self.data), sd.get_size(self.at(self.peer)))
        self.assertEqual(asked + 1, len(self.node_lists(self.first)))
        self.assertEqual([], self.node_lists(self.peer))
        known = membership.MEMBERSHIPS[(('127.0.0.1', self.first.port),)]
        self.assertEqual(self.first.epoch, known.epoch)
        self.assertNotIn(('127.0.0.1', self.foreign.port), known.members)
        self.assertEqual([], self.foreign.connections)

    def test_a_member_that_left_is_still_served(self):
        # Locations name where the cluster was: a member the entry
        # points named once stays a sheep this store may connect to
        # after a newer list leaves it out (killed, replaced).
        self.conf = self.make_conf()
        sd = self.make_store()
        self.assertEqual(len(self.data), sd.get_size(self.at(self.first)))
        self.first.node_list = [('127.0.0.1', self.first.port)]
        self.first.epoch += 1
        self.assertEqual(len(self.data), sd.get_size(self.at(self.first)))
        known = membership.MEMBERSHIPS[(('127.0.0.1', self.first.port),)]
        self.assertNotIn(('127.0.0.1', self.peer.port), known.members)
        self.assertEqual(len(self.data), sd.get_size(self.at(self.peer)))
        self.assertRaises(exceptions.BadStoreUri, sd.get_size,
                          self.at(self.foreign))

    @staticmethod
    def node_lists(sheep):
        return [request for request in sheep.requests
                if request[0] == proto.OP_GET_NODE_LIST]


class StartUpTest(TrustTestCase):

    def test_a_cluster_down_at_start_up_is_a_warning(self):
        # A port bound and not listening refuses connections until the
        # sheep comes.
        reserved = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        reserved.bind(('127.0.0.1', 0))
        port = reserved.getsockname()[1]
        self.addCleanup(reserved.close)
        self.conf = self.make_conf(sheepdog_store_port=port)
        sd = self.make_store()
        self.assertIn('does not serve yet', self.log.output)
        self.assertIn('127.0.0.1:%d' % port, self.log.output)
        self.assertTrue(sd.is_capable(capabilities.BitMasks.WRITE_ACCESS))
        loc = self.location('sheepdog://127.0.0.1:%d:%s' % (port, IMAGE))
        exc = self.assertRaises(exceptions.BackendException, sd.get_size,
                                loc)
        self.assertIn('cannot connect to sheep at 127.0.0.1:%d' % port,
                      str(exc))
        self.assertRaises(exceptions.BackendException, test_store.add, sd,
                          OTHER, b'data')
        # The sheep comes: the same store serves.
        reserved.close()
        back = fake_sheep.FakeSheep(port=port)
        self.addCleanup(back.close)
        back.add_image(IMAGE, self.data)
        self.assertEqual(len(self.data), sd.get_size(loc))
        uri = test_store.add(sd, OTHER, b'data')[0]
        self.assertEqual(b'data', back.image_bytes(uri.rsplit(':', 1)[1]))

    def test_the_check_tries_every_entry_point(self):
        self.conf = self.make_conf(
            sheepdog_store_port=self.port,
            sheepdog_store_addresses=['127.0.0.1:%d' % self.first.port])
        self.make_store()
        self.assertNotIn('does not serve yet', self.log.output)
        self.assertIn('Sheepdog cluster at 127.0.0.1:%d is running'
                      % self.first.port, self.log.output)


class EscapedUriTest(base.StoreTestCase):

    def test_bad_store_uri_repeats_no_raw_line_break(self):
        for uri in ('sheepdog://127.0.0.1:7000:img\nFORGED LOG LINE',
                    u'sheepdog://127.0.0.1:7000\u2028FORGED:img',
                    'sheepdog://127.0.0.1:x\r:img',
                    'rbd://a\n/b'):
            exc = self.assertRaises(exceptions.BadStoreUri,
                                    self.location, uri)
            text = exc.msg
            for raw in (u'\n', u'\r', u'\u2028'):
                self.assertNotIn(raw, text)
            self.assertIn('127.0.0.1' if '127' in uri else 'rbd', text)

    def test_escaped_is_bounded(self):
        self.assertEqual('a\\x0ab\\u2028c\\\\', store_location.escaped(
            u'a\nb\u2028c\\'))
        self.assertEqual(store_location.URI_SHOWN + 3,
                         len(store_location.escaped('x' * 1000)))
