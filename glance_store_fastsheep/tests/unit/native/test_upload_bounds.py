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
"""What a late request, a final error or a huge image does to an upload.

A late request is one the fake sheep does after a delay or once the
test releases it (``FakeSheep.late``), even after the client closed
the connection it came on, as sheep does with every request that fully
arrived: its twin may have been resent elsewhere meanwhile.
"""

import hashlib
import io
import os
import threading
import time

import fixtures
from glance_store import exceptions
from oslo_utils import units

from glance_store_fastsheep import budget
from glance_store_fastsheep import client
from glance_store_fastsheep import image_data
from glance_store_fastsheep.native import client as native_client
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import write as native_write
from glance_store_fastsheep.tests import green_child
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base

OBJECT = native_base.OBJECT
EIO = 0x03


class LateSizeTest(native_base.FailoverTestCase):

    def test_late_size_write_cannot_truncate_an_unknown_size_image(self):
        # The first vdi_size write is held on the first sheep: the
        # client fails over and resends it to the second; the held copy
        # lands once the upload has returned.
        release = threading.Event()
        held = []

        def late(opcode, oid, offset, length):
            if (opcode == proto.OP_WRITE_OBJ and not held and
                    offset == inode_layout.VDI_SIZE_OFFSET):
                held.append(oid)
                return release
            return None

        self.first.late = late
        data = os.urandom(9 * OBJECT + 3)
        hashes = native_base.digest()
        store = client.get_client(native_base.FailoverSettings(
            self.first.port))
        self.assertEqual(len(data), store.write(
            'img', io.BytesIO(data), hashes, 0))
        self.assertEqual(hashlib.md5(data).hexdigest(),
                         hashes.hashers[0].hexdigest())
        self.assertFailedOver(self.first, self.second)
        release.set()
        self.first.wait_late()
        self.assertEqual(1, len(held))
        self.assertEqual(len(data), self.first.images['img', 0].size)
        self.assertTrue(data == self.first.image_bytes('img'))
        self.assertNothingLeft()


def _late_first_three(opcode, oid, offset, length):
    """Objects 0-2's CREATEs land (and are answered) 0.3 s late."""
    if opcode == proto.OP_CREATE_AND_WRITE_OBJ and (oid & 0xffffffff) < 3:
        return 0.3
    return None


def green_final_error():
    """FinalErrorTest's drain, in a monkey-patched child (green_child)."""
    sheep = fake_sheep.FakeSheep()
    settings = native_base.Settings()
    settings.port = sheep.port
    vid = sheep.next_vid = 0x40
    sheep.write_results[proto.data_oid(vid, 3)] = EIO
    sheep.late = _late_first_three
    ticker = green_child.Ticker()
    data = native_base.payload(8 * OBJECT, seed=26)
    try:
        native_client.NativeClient(settings).write(
            'img', io.BytesIO(data), native_base.digest(),
            len(data))
        raised = ''
    except exceptions.BackendException as exc:
        raised = str(exc)
    ticks = ticker.stop()
    sheep.wait_late()
    left = sorted(oid & 0xffffffff for oid in sheep.objects
                  if oid >> 32 == vid)
    images = len(sheep.images)
    sheep.close()
    return {'eio': 'SD_RES_EIO' in raised, 'left': left, 'images': images,
            'ticks': ticks}


class FinalErrorTest(native_base.ClientTestCase):

    def test_final_error_drains_under_eventlet(self):
        report = green_child.run(self, __name__, 'green_final_error')
        self.assertEqual({'eio': True, 'left': [], 'images': 0},
                         {'eio': report['eio'], 'left': report['left'],
                          'images': report['images']})
        self.assertGreater(report['ticks'], 0)

    def test_final_error_drains_the_writes_in_flight_before_cleanup(self):
        # EIO (a BackendException) for object 3 while objects 0-2 are
        # still in flight: they land after it was answered.
        vid = self.sheep.next_vid = 0x40
        self.sheep.write_results[proto.data_oid(vid, 3)] = EIO
        self.sheep.late = _late_first_three
        data = native_base.payload(8 * OBJECT, seed=21)
        exc = self.assertRaises(exceptions.BackendException,
                                self.client.write, 'img', io.BytesIO(data),
                                native_base.digest(), len(data))
        self.assertIn('SD_RES_EIO', str(exc))
        self.sheep.wait_late()
        self.assertEqual([], list(self.sheep.images))
        self.assertEqual(
            [], sorted(oid & 0xffffffff for oid in self.sheep.objects
                       if oid >> 32 == vid))
        self.assertEqual(0, budget.WRITERS.held)
        self.assertFdsClosed()

    def test_drain_of_a_frozen_sheep_is_bounded_and_says_what_may_land(self):
        # Objects 0-2 are never answered while the upload runs: the
        # drain gives up within its bound, the gateway is parked, and
        # clean_up waits for it within the transfer timeout, then names
        # the VDI and the objects the frozen sheep may still write.
        self.settings.stall_timeout = 0.3
        self.settings.transfer_timeout = 1.0
        vid = self.sheep.next_vid = 0x40
        self.sheep.write_results[proto.data_oid(vid, 3)] = EIO
        release = threading.Event()
        self.addCleanup(release.set)
        log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))

        def late(opcode, oid, offset, length):
            if opcode == proto.OP_CREATE_AND_WRITE_OBJ and (
                    oid & 0xffffffff) < 3:
                return release
            return None

        self.sheep.late = late
        data = native_base.payload(8 * OBJECT, seed=24)
        started = time.time()
        self.assertRaises(exceptions.BackendException, self.client.write,
                          'img', io.BytesIO(data),
                          native_base.digest(), len(data))
        # Two stall timeouts at most, no failover, and the transfer
        # timeout (1 s) since the gateway was parked.
        self.assertLess(time.time() - started, 2.5)
        self.assertEqual([], list(self.sheep.images))
        self.assertIn('not all answered before its cleanup', log.output)
        self.assertIn('Sheepdog image img (vdi 40): 3 request(s) left '
                      'unanswered', log.output)
        self.assertIn('may still be carried out by that sheep', log.output)
        for index in range(3):
            self.assertIn('of object %016x' % proto.data_oid(vid, index),
                          log.output)
        self.assertNotIn('Failing over', log.output)
        self.assertEqual(0, budget.WRITERS.held)


class ClusterDefaultTest(native_base.ClientTestCase):

    def test_sheep_0_9_has_4_mib_objects(self):
        # 0.9 answers INVALID_PARMS to an opcode it does not know.
        self.sheep.results[proto.OP_GET_CLUSTER_DEFAULT] = (
            proto.INVALID_PARMS)
        self.sheep.default_shift = 22
        data = native_base.payload(3 * OBJECT + 5, seed=25)
        self.write('img', data, size=0,
                   source=native_base.Chunks(data))
        self.assertEqual(4 * units.Mi << 20,
                         self.sheep.new_vdi_fields.vdi_size)
        self.assertTrue(self.sheep.image_bytes('img') == data)
        self.assertEqual(len(data), self.sheep.images['img', 0].size)

    def test_other_failure_fails_before_new_vdi(self):
        self.sheep.results[proto.OP_GET_CLUSTER_DEFAULT] = 0x06
        exc = self.assertRaises(exceptions.BackendException,
                                self.client.write, 'img',
                                io.BytesIO(b'x'), native_base.digest(),
                                0)
        self.assertIn('SD_RES_SYSTEM_ERROR', str(exc))
        self.assertEqual([], self.ops(proto.OP_NEW_VDI))
        self.assertFdsClosed()

    def test_object_size_out_of_range_fails_before_new_vdi(self):
        for shift in (0, 8, 32, 255):
            self.sheep.default_shift = shift
            exc = self.assertRaises(exceptions.BackendException,
                                    self.client.write, 'img',
                                    io.BytesIO(b'x'),
                                    native_base.digest(), 0)
            self.assertIn('block_size_shift %d' % shift, str(exc))
        self.assertEqual([], self.ops(proto.OP_NEW_VDI))
        self.assertFdsClosed()


class FlatLimitTest(native_base.ClientTestCase):

    def test_known_size_past_a_flat_inode_is_refused_before_any_write(self):
        size = OBJECT * (1 << 20) + 1
        exc = self.assertRaises(exceptions.Invalid, self.client.write,
                                'big', io.BytesIO(b'x' * OBJECT),
                                native_base.digest(), size)
        self.assertIn('%d bytes' % size, str(exc))
        self.assertIn('2^20', str(exc))
        self.assertEqual([], self.ops(proto.OP_NEW_VDI))
        self.assertEqual([], list(self.sheep.images))
        self.assertFdsClosed()

    def test_unknown_size_stops_before_the_last_object_plus_one(self):
        self.useFixture(fixtures.MockPatchObject(
            native_write, 'MAX_OBJECTS', 6, create=True))
        fits = native_base.payload(6 * OBJECT, seed=22)
        self.write('fits', fits, size=0,
                   source=native_base.Chunks(fits))
        self.assertTrue(self.sheep.image_bytes('fits') == fits)
        self.assertEqual(len(fits), self.sheep.images['fits', 0].size)
        vid = self.sheep.next_vid
        data = native_base.payload(6 * OBJECT + 1, seed=23)
        exc = self.assertRaises(exceptions.Invalid, self.client.write,
                                'big', image_data.Source(
                                    native_base.Chunks(data)),
                                native_base.digest(), 0)
        self.assertIn('2^20', str(exc))
        self.assertNotIn(('big', 0), self.sheep.images)
        self.assertEqual([], [oid for oid in self.sheep.objects
                              if oid >> 32 == vid])
        self.assertEqual([], [r for r in self.ops(
            proto.OP_CREATE_AND_WRITE_OBJ)
            if r[1] >> 32 == vid and r[1] & 0xffffffff >= 6])
        self.assertEqual(0, budget.WRITERS.held)
        self.assertFdsClosed()
