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
"""Failover of the native client between the sheep of a fake cluster.

Two or three fake sheep share one set of images (``FakeSheep(peer)``),
as the members of a cluster serve the same VDIs; one of them is made to
fail: reset, cut mid-response, frozen, or gone before the operation.
Every transfer must come out byte-exact (or with the stated error),
with a warning naming both nodes, and with no socket left open.
"""

import io
import os
import time

import fixtures
from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep import client
from glance_store_fastsheep.native import membership
from glance_store_fastsheep.native import node_list
from glance_store_fastsheep.native import placement
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import read as native_read
from glance_store_fastsheep import stream
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base
from glance_store_fastsheep.tests.unit import sheep_wire

OBJECT = native_base.OBJECT
Settings = native_base.FailoverSettings


class ReadFailoverTest(native_base.FailoverTestCase):

    SIZE = 12 * OBJECT + 77

    def setUp(self):
        super(ReadFailoverTest, self).setUp()
        self.data = native_base.payload(self.SIZE, seed=5)
        self.first.add_image('img', self.data)

    def read(self, settings, sheep=None):
        sheep = sheep or self.first
        return b''.join(native_read.read_range(
            settings, '127.0.0.1', sheep.port, 'img', 0, self.SIZE))

    def test_reset_mid_download_resumes_on_a_learned_member(self):
        # Only the location is known: the second sheep is learned from
        # the first one's GET_NODE_LIST.
        self.first.fault = (6, 'reset', None)
        settings = Settings(self.first.port)
        self.assertEqual(self.data, self.read(settings))
        self.assertFailedOver(self.first, self.second)
        self.assertIn(('127.0.0.1', self.second.port),
                      membership.of(settings).members)
        self.assertNothingLeft()

    def test_the_download_line_counts_the_failover(self):
        self.first.fault = (6, 'reset', None)
        log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep.stream'))
        data = b''.join(client.get_client(Settings(self.first.port)).read(
            '127.0.0.1', self.first.port, 'img', 0, self.SIZE))
        self.assertEqual(self.data, data)
        self.assertIn('Sent sheepdog image img from 127.0.0.1:%d (native '
                      'client): %d of %d bytes' % (self.first.port,
                                                   self.SIZE, self.SIZE),
                      log.output)
        self.assertIn('1 failover(s)', log.output)
        self.assertNothingLeft()

    def test_a_newer_epoch_has_the_members_asked_for_again(self):
        # The members another operation learned go stale as nodes join;
        # sheep's replies carry its epoch, and a download that sees a
        # newer one asks the entry points for the members again.
        # (Until 14671fe every download asked, the epoch unused.)
        settings = Settings(self.first.port)
        self.assertEqual(self.data, self.read(settings))
        second = ('127.0.0.1', self.second.port)
        known = membership.of(settings)
        known.members = tuple(node for node in known.members
                              if node != second)
        self.assertEqual(self.data, self.read(settings))
        self.assertNotIn(second, known.members)
        self.first.epoch += 1
        self.assertEqual(self.data, self.read(settings))
        self.assertIn(second, known.members)
        self.assertEqual(self.first.epoch, known.epoch)
        self.assertNothingLeft()

    def test_response_cut_mid_data_is_read_again_elsewhere(self):
        self.first.fault = (3, 'truncate', 1000)
        self.assertEqual(self.data, self.read(Settings(self.first.port)))
        self.assertFailedOver(self.first, self.second)
        self.assertNothingLeft()

    def test_frozen_sheep_is_left_after_the_stall_timeout(self):
        self.first.fault = (4, 'stall', None)
        settings = Settings(self.first.port)
        started = time.time()
        self.assertEqual(self.data, self.read(settings))
        self.assertLess(time.time() - started, settings.stall_timeout + 3)
        self.assertIn('unanswered', self.log.output)
        self.assertFailedOver(self.first, self.second)
        self.assertNothingLeft()

    def test_location_gone_for_good_reads_through_an_entry_point(self):
        settings = Settings(self.second.port)
        self.first.close()
        self.recount_fds()
        self.assertEqual(self.data, self.read(settings, self.first))
        # No failover: the gone location was never connected to.
        self.assertTrue(self.second.connections)
        self.assertNotIn('Failing over', self.log.output)
        self.assertNothingLeft()

    def test_no_member_left_is_the_first_error(self):
        # The peer shuts too: nothing to fail over to.
        settings = Settings(self.first.port)
        self.first.fault = (3, 'reset', None)
        self.second.close()
        self.recount_fds()
        exc = self.assertRaises(exceptions.BackendException, self.read,
                                settings)
        self.assertIn('connection', str(exc))
        self.assertNothingLeft()

    def test_failover_attempts_zero_turns_it_off(self):
        settings = Settings(self.first.port, [self.second.port])
        settings.failover_attempts = 0
        self.first.fault = (3, 'reset', None)
        self.assertRaises(exceptions.BackendException, self.read, settings)
        self.assertNotIn('Failing over', self.log.output)
        self.assertNothingLeft()

    def test_sheep_results_are_not_a_reason_to_fail_over(self):
        self.first.fault = (3, 'result', 0x03)  # SD_RES_EIO
        exc = self.assertRaises(exceptions.BackendException, self.read,
                                Settings(self.first.port))
        self.assertIn('SD_RES_EIO', str(exc))
        self.assertNotIn('Failing over', self.log.output)
        self.assertNothingLeft()


class WriteFailoverTest(native_base.FailoverClientTestCase):

    def test_sheep_killed_after_a_write_before_its_reply(self):
        data = os.urandom(20 * OBJECT + 5)
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 5, 'reset')
        self.write(data)
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertEqual([], self.first.dangling)
        self.assertFailedOver(self.first, self.second)
        self.assertNothingLeft()

    def test_a_vdi_whose_inode_read_failed_is_removed(self):
        # NEW_VDI answered: the VDI exists, whatever the next request
        # (its inode's read, the upload's first READ_OBJ) answers.
        self.first.reply_fault = (proto.OP_READ_OBJ, 1, 'halt')
        self.assertRaises(exceptions.BackendException, self.write,
                          os.urandom(OBJECT))
        self.assertEqual([], [name for name, _snap in self.first.images])
        self.assertIn('img', self.first.deleted)
        self.assertNothingLeft()

    def test_a_vdi_an_unanswered_new_vdi_made_is_removed(self):
        # The first copy creates the VDI and its answer is lost; the
        # resend meets a halted sheep and the upload fails with no VDI
        # id: clean_up finds the attempt's VDI by its name.
        self.settings.transfer_timeout = 2.0
        self.first.reply_fault = (proto.OP_NEW_VDI, 1, 'reset')
        self.second.reply_fault = (proto.OP_NEW_VDI, 1, 'halt')
        log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))
        self.assertRaises(exceptions.BackendException, self.write,
                          os.urandom(OBJECT))
        self.assertEqual([], [name for name, _snap in self.first.images])
        self.assertIn('img', self.first.deleted + self.second.deleted)
        self.assertIn('NEW_VDI of sheepdog image img was carried out but '
                      'its answer was lost: removing vdi', log.output)
        self.assertNothingLeft()

    def test_the_upload_line_counts_the_failover(self):
        data = os.urandom(6 * OBJECT)
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 3, 'reset')
        transfer = stream.Transfer('native', '127.0.0.1', self.first.port,
                                   'img', len(data))
        self.assertEqual(len(data), self.client.write(
            'img', io.BytesIO(data), native_base.digest(), len(data),
            transfer))
        self.assertEqual(1, transfer.failovers)
        self.assertNothingLeft()

    def test_inode_update_lost_is_written_again(self):
        data = os.urandom(10 * OBJECT)
        self.first.reply_fault = (proto.OP_WRITE_OBJ, 2, 'reset')
        self.write(data)
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertFailedOver(self.first, self.second)
        self.assertNothingLeft()

    def test_unknown_size_upload_fails_over(self):
        data = os.urandom(9 * OBJECT + 3)
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 3, 'stall')
        self.write(data, size=0)
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertFailedOver(self.first, self.second)
        self.assertNothingLeft()

    def test_new_vdi_reply_lost_adopts_the_vdi(self):
        # The name is the attempt's own (store.vdi_name): the VDI the
        # lost reply was about, empty and unmarked, can only be the one
        # this request created. It is adopted and written (until
        # per-attempt names the upload failed with Duplicate and left
        # it behind).
        data = os.urandom(3 * OBJECT)
        vid = self.first.next_vid
        self.first.reply_fault = (proto.OP_NEW_VDI, 1, 'reset')
        self.write(data)
        self.assertIn('adopting vdi %x' % vid, self.log.output)
        self.assertEqual(vid, self.first.images['img', 0].vid)
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertFailedOver(self.first, self.second)
        self.assertNothingLeft()

    def test_new_vdi_of_a_name_taken_before_stays_duplicate(self):
        self.first.add_image('img', b'x' * OBJECT)
        self.first.reply_fault = (proto.OP_NEW_VDI, 1, 'reset')
        self.assertRaises(exceptions.Duplicate, self.write,
                          os.urandom(3 * OBJECT))
        self.assertEqual(b'x' * OBJECT, self.first.image_bytes('img'))
        self.assertNothingLeft()

    def test_failed_upload_is_removed_through_a_live_member(self):
        # A final result fails the upload after the first sheep died:
        # the clean-up must go to the second one.
        data = os.urandom(12 * OBJECT)
        vid = self.first.next_vid
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 2, 'reset')
        self.second.write_results[proto.data_oid(vid, 8)] = 0x03
        self.assertRaises(exceptions.BackendException, self.write, data)
        self.assertNotIn(('img', 0), self.first.images)
        self.assertIn('img', self.second.deleted)
        self.assertEqual(
            [], [oid for oid in self.first.objects if oid >> 32 == vid])
        self.assertNothingLeft()

    def test_delete_fails_over(self):
        # The entries' zeroing is resent elsewhere (same bytes at the
        # same offset of the same inode); DEL_VDI then goes to a live
        # member.
        self.first.add_image('img', os.urandom(4 * OBJECT))
        self.first.reply_fault = (proto.OP_WRITE_OBJ, 1, 'reset')
        self.client.delete('127.0.0.1', self.first.port, 'img')
        self.assertNotIn(('img', 0), self.first.images)
        self.assertFailedOver(self.first, self.second)
        self.assertNothingLeft()

    def test_del_vdi_reply_lost_is_looked_up_not_resent(self):
        self.first.add_image('img', os.urandom(4 * OBJECT))
        self.first.reply_fault = (proto.OP_DEL_VDI, 1, 'reset')
        self.client.delete('127.0.0.1', self.first.port, 'img')
        self.assertNotIn(('img', 0), self.first.images)
        self.assertIn('not resent to another sheep', self.log.output)
        self.assertEqual(1, sum(1 for request in self.first.requests +
                                self.second.requests
                                if request[0] == proto.OP_DEL_VDI))
        self.assertNothingLeft()


class EntryPointTest(base.BaseTestCase):

    def test_first_then_entry_points_without_repeats(self):
        settings = Settings(7000, [7001])
        self.assertEqual(
            [('10.0.0.9', 7000), ('127.0.0.1', 7000), ('127.0.0.1', 7001)],
            membership.entry_points(settings, ('10.0.0.9', 7000)))
        self.assertEqual([('127.0.0.1', 7001), ('127.0.0.1', 7000)],
                         membership.entry_points(settings,
                                                 ('127.0.0.1', 7001)))

    def test_each_newer_epoch_asks_once(self):
        known = membership.Membership([('127.0.0.1', 7000)])
        # Never learned: the first operation asks, not a reply.
        self.assertFalse(known.stale(5))
        known.epoch = 3
        self.assertFalse(known.stale(3))
        self.assertFalse(known.stale(2))
        self.assertTrue(known.stale(5))
        self.assertFalse(known.stale(5))
        # A sheep reporting an epoch far ahead costs one refresh, and
        # the next real epoch still asks.
        self.assertTrue(known.stale(1000))
        self.assertFalse(known.stale(1000))
        known.epoch = 5
        self.assertTrue(known.stale(6))

    def test_node_list_of_both_entry_sizes(self):
        for size in proto.NODE_SIZES:
            body = (sheep_wire.node_entry('10.1.2.3', 7000, size) +
                    sheep_wire.node_entry('10.1.2.4', 7001, size))
            self.assertEqual([('10.1.2.3', 7000), ('10.1.2.4', 7001)],
                             node_list.unpack(body, 2))

    def test_node_list_of_another_size_is_refused(self):
        self.assertRaises(proto.ProtocolError, node_list.unpack,
                          b'\0' * 100, 1)

    def test_ipv6_node_address(self):
        addr = bytes(bytearray([0xfd] + [0] * 14 + [1]))
        self.assertEqual('fd00:0:0:0:0:0:0:1', node_list.address_text(addr))


class PlacementTest(base.BaseTestCase):
    """placement.Ring places objects where sheep 1.0.1 stores them."""

    # GET_NODE_LIST of a real 3-node 1.0.1 cluster (the harness's: one
    # zone a node, 128 vnodes each), and for objects of VDI 0xd27584
    # (copies 2) the zones of the sheep whose store held the object's
    # file (obj/<oid>); test_failover's real test checks the same.
    NODES = (('127.0.0.1', 52435, 2), ('127.0.0.1', 52649, 0),
             ('127.0.0.1', 57721, 1))
    STORED = {
        0x80d2758400000000: [0, 2],
        0x00d2758400000000: [0, 2],
        0x00d2758400000001: [1, 2],
        0x00d2758400000002: [0, 1],
        0x00d2758400000003: [0, 1],
        0x00d2758400000004: [0, 1],
        0x00d2758400000005: [0, 2],
        0x00d2758400000006: [0, 1],
        0x00d2758400000007: [0, 2],
        0x00d2758400000008: [0, 2],
        0x00d2758400000009: [1, 2],
    }

    def nodes(self, vnodes=128, size=proto.NODE_SIZES[0]):
        body = b''.join(
            sheep_wire.node_entry(address, port, size, vnodes, zone)
            for address, port, zone in self.NODES)
        return node_list.unpack(body, len(self.NODES))

    def test_fnv_1a_64(self):
        # The FNV reference vectors (isthe.com/chongo/tech/comp/fnv).
        self.assertEqual(0xcbf29ce484222325, placement.fnv_64a(b''))
        self.assertEqual(0xaf63dc4c8601ec8c, placement.fnv_64a(b'a'))
        self.assertEqual(0x85944171f73967e8, placement.fnv_64a(b'foobar'))
        value = 0x0123456789abcdef
        self.assertEqual(
            placement.fnv_64a(bytes(bytearray((value >> s) & 0xff
                                              for s in range(0, 64, 8)))),
            placement.fnv_64a_64(value, placement.FNV1A_64_INIT))

    def test_node_list_keeps_what_placement_needs(self):
        node = self.nodes()[0]
        self.assertEqual(('127.0.0.1', 52435), node)
        self.assertEqual((128, 2, False), (node.nr_vnodes, node.zone,
                                           node.disks))
        self.assertEqual(node_list.ID_SIZE, len(node.node_id))

    def test_holders_of_a_real_cluster(self):
        ring = placement.Ring.of(self.nodes())
        zone = dict((port, zone) for _address, port, zone in self.NODES)
        computed = dict(
            (oid, sorted(zone[node[1]] for node in ring.holders(oid, 2)))
            for oid in self.STORED)
        self.assertEqual(self.STORED, computed)

    def test_copies_are_in_distinct_zones_and_capped_by_them(self):
        ring = placement.Ring.of(self.nodes())
        for oid in self.STORED:
            holders = ring.holders(oid, 5)
            self.assertEqual(3, len(holders))
            self.assertEqual(3, len(set(node.zone for node in holders)))
            # The first copies are the same whatever the count.
            self.assertEqual(holders[:2], ring.holders(oid, 2))

    def test_unknown_placement(self):
        # No vnodes (a fake sheep), a disk-vnodes build, no members.
        self.assertIsNone(placement.Ring.of(self.nodes(vnodes=0)))
        self.assertIsNone(placement.Ring.of(
            self.nodes(size=proto.NODE_SIZES[1])))
        self.assertIsNone(placement.Ring.of([]))
        self.assertIsNone(placement.Ring.of([('127.0.0.1', 7000)]))


class RoutingTest(native_base.FailoverTestCase):
    """Object reads go to a live node holding a copy.

    Three fake sheep place objects as sheep does (16 vnodes each, one
    zone each); a frozen one answers nothing, and a live one asked for
    an object it holds no copy of waits on the frozen holder, as a real
    gateway does (``FakeSheep.freeze``).
    """

    SIZE = 24 * OBJECT + 77

    def setUp(self):
        super(RoutingTest, self).setUp()
        self.third = fake_sheep.FakeSheep(self.first)
        self.addCleanup(self.third.close)
        self.sheep = (self.first, self.second, self.third)
        for zone, one in enumerate(self.sheep):
            one.place(16, zone)
        self.data = native_base.payload(self.SIZE, seed=7)
        self.image = self.first.add_image('img', self.data)
        self.image.nr_copies = 2
        self.recount_fds()

    def read(self, settings):
        return b''.join(native_read.read_range(
            settings, '127.0.0.1', self.first.port, 'img', 0, self.SIZE))

    def data_reads(self, one):
        return set(oid for opcode, oid, _offset, _length in one.requests
                   if opcode == proto.OP_READ_OBJ and
                   not oid & proto.VDI_BIT)

    def test_each_read_goes_to_a_holder(self):
        self.assertEqual(self.data, self.read(Settings(self.first.port)))
        for one in self.sheep:
            for oid in self.data_reads(one):
                self.assertIn(one.port, self.first.holders(oid))
        # The gateway reads what it holds; the rest went elsewhere.
        self.assertTrue(self.data_reads(self.second) |
                        self.data_reads(self.third))
        self.assertNotIn('Failing over', self.log.output)

    def routed_holder(self):
        """A sheep reads go to: holding an object the gateway does not."""
        by_port = dict((one.port, one) for one in self.sheep)
        for index in range(25):
            holders = self.first.holders(proto.data_oid(self.image.vid,
                                                        index))
            if self.first.port not in holders:
                return by_port[holders[0]]
        self.fail('the gateway holds every object')

    def test_frozen_holder_costs_one_stall(self):
        frozen = self.routed_holder()
        frozen.freeze()
        settings = Settings(self.first.port)
        started = time.time()
        self.assertEqual(self.data, self.read(settings))
        # One stall timeout of the frozen holder, and slack for a
        # loaded machine; a read through a gateway that waits on the
        # frozen holder would stall again on every such object.
        self.assertLess(time.time() - started,
                        settings.stall_timeout + 2.0)
        self.assertEqual(1, self.log.output.count('Failing over'))
        self.assertIn('from 127.0.0.1:%d to' % frozen.port,
                      self.log.output)
        self.assertIn('unanswered', self.log.output)

    def test_frozen_gateway_moves_and_reads_go_on_to_holders(self):
        self.first.freeze()
        settings = Settings(self.first.port,
                            [self.second.port, self.third.port])
        started = time.time()
        self.assertEqual(self.data, self.read(settings))
        self.assertLess(time.time() - started,
                        2 * settings.stall_timeout + 2.0)
        self.assertFailedOver(self.first, self.second)
        for one in (self.second, self.third):
            for oid in self.data_reads(one):
                self.assertIn(one.port, self.first.holders(oid))

    def test_without_placement_every_read_goes_to_the_gateway(self):
        # Members without vnodes (as a sheep built otherwise may name).
        for one in self.sheep:
            one.place(0, 0)
        self.assertEqual(self.data, self.read(Settings(self.first.port)))
        self.assertEqual(set(), self.data_reads(self.second))
        self.assertEqual(set(), self.data_reads(self.third))
        self.assertEqual(25, len(self.data_reads(self.first)))

    def test_frozen_holders_of_an_object_is_an_error_in_bounds(self):
        # Both copies of some object frozen: an error, not a hang.
        self.second.freeze()
        self.third.freeze()
        settings = Settings(self.first.port)
        started = time.time()
        self.assertRaises(exceptions.BackendException, self.read, settings)
        self.assertLess(time.time() - started,
                        (settings.failover_attempts + 1) *
                        settings.stall_timeout + 2.0)
