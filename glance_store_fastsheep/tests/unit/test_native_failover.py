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

import gc
import hashlib
import io
import os
import sys
import time

import fixtures
from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep import client
from glance_store_fastsheep.native import cluster
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import read as native_read
from glance_store_fastsheep.tests import native_settings
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit import test_native_client
from glance_store_fastsheep.tests.unit import test_native_read

OBJECT = 1 << 16  # the fake images' object size (block_size_shift 16)


class Settings(native_settings.Settings):
    transfer_timeout = 10.0
    stall_timeout = 0.5

    def __init__(self, port, others=()):
        self.port = port
        self.addresses = [('127.0.0.1', port)] + [
            ('127.0.0.1', other) for other in others]
        self.members = []


class FailoverTestCase(base.BaseTestCase):

    def setUp(self):
        super(FailoverTestCase, self).setUp()
        self.first = fake_sheep.FakeSheep()
        self.addCleanup(self.first.close)
        self.second = fake_sheep.FakeSheep(self.first)
        self.addCleanup(self.second.close)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))
        # Four requests in flight, as in test_native_read's faults.
        self.useFixture(fixtures.MockPatchObject(
            native_read, 'IN_FLIGHT_BYTES', 4 * OBJECT))
        self.recount_fds()

    def recount_fds(self):
        """The fds open now: after a test closed a sheep of its own."""
        gc.collect()
        self.fds = test_native_read.open_fds()

    def assertNothingLeft(self):
        """Every connection of either sheep closed, no fd left here."""
        gc.collect()
        deadline = time.time() + 5
        sheep = (self.first, self.second)
        while time.time() < deadline and any(
                one.closed_connections < len(one.connections)
                for one in sheep):
            time.sleep(0.01)
        for one in sheep:
            self.assertEqual(len(one.connections), one.closed_connections)
        if hasattr(sys, 'exc_clear'):
            sys.exc_clear()
        while self.fds != test_native_read.open_fds() and (
                time.time() < deadline):
            gc.collect()
            time.sleep(0.01)
        self.assertEqual(self.fds, test_native_read.open_fds())

    def assertFailedOver(self, old, new):
        self.assertIn('Failing over sheepdog image', self.log.output)
        self.assertIn('from 127.0.0.1:%d to 127.0.0.1:%d'
                      % (old.port, new.port), self.log.output)


class ReadFailoverTest(FailoverTestCase):

    SIZE = 12 * OBJECT + 77

    def setUp(self):
        super(ReadFailoverTest, self).setUp()
        self.data = test_native_read.payload(self.SIZE, seed=5)
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
        self.assertIn(('127.0.0.1', self.second.port), settings.members)
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


class WriteFailoverTest(FailoverTestCase):

    def setUp(self):
        super(WriteFailoverTest, self).setUp()
        self.settings = Settings(self.first.port)
        self.client = client.get_client(self.settings)

    def write(self, data, size=None):
        hashes = test_native_client.digest()
        written = self.client.write('img', io.BytesIO(data), hashes,
                                    len(data) if size is None else size)
        self.assertEqual(len(data), written)
        self.assertEqual(hashlib.md5(data).hexdigest(),
                         hashes.hashers[0].hexdigest())
        return written

    def test_sheep_killed_after_a_write_before_its_reply(self):
        data = os.urandom(20 * OBJECT + 5)
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 5, 'reset')
        self.write(data)
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertEqual([], self.first.dangling)
        self.assertFailedOver(self.first, self.second)
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

    def test_new_vdi_reply_lost_finds_the_vdi_it_created(self):
        data = os.urandom(3 * OBJECT)
        self.first.reply_fault = (proto.OP_NEW_VDI, 1, 'reset')
        self.write(data)
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
        self.first.add_image('img', os.urandom(4 * OBJECT))
        self.first.reply_fault = (proto.OP_DEL_VDI, 1, 'reset')
        self.client.delete('127.0.0.1', self.first.port, 'img')
        self.assertNotIn(('img', 0), self.first.images)
        self.assertFailedOver(self.first, self.second)
        self.assertNothingLeft()


class EntryPointTest(base.BaseTestCase):

    def test_first_then_entry_points_without_repeats(self):
        settings = Settings(7000, [7001])
        self.assertEqual(
            [('10.0.0.9', 7000), ('127.0.0.1', 7000), ('127.0.0.1', 7001)],
            cluster.entry_points(settings, ('10.0.0.9', 7000)))
        self.assertEqual([('127.0.0.1', 7001), ('127.0.0.1', 7000)],
                         cluster.entry_points(settings,
                                              ('127.0.0.1', 7001)))

    def test_node_list_of_both_entry_sizes(self):
        for size in proto.NODE_SIZES:
            body = (proto.pack_node('10.1.2.3', 7000, size) +
                    proto.pack_node('10.1.2.4', 7001, size))
            self.assertEqual([('10.1.2.3', 7000), ('10.1.2.4', 7001)],
                             proto.unpack_node_list(body, 2))

    def test_node_list_of_another_size_is_refused(self):
        self.assertRaises(proto.ProtocolError, proto.unpack_node_list,
                          b'\0' * 100, 1)

    def test_ipv6_node_address(self):
        addr = bytes(bytearray([0xfd] + [0] * 14 + [1]))
        self.assertEqual('fd00:0:0:0:0:0:0:1', proto.address_text(addr))
