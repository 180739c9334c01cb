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
"""Nothing of a VDI is removed while a request sent for it may still land.

The fake sheep's ``late`` does a chosen request later on the connection
it arrived on, as sheep carries out a request that fully arrived even
once the client gave up on it: the first copy of a write a failover
resent, or a DEL_VDI unanswered past the stall timeout. The client
parks such connections (``parking.Parking``) and settles them before
anything removes the VDI's objects (doc/source/contributor/
replay-model.rst).
"""

import os
import threading
import time

from glance_store import exceptions
import six

from glance_store_fastsheep import client
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import membership
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.tests.unit.native import base as native_base

OBJECT = native_base.OBJECT


def late_once(opcode, when):
    """A ``late`` hook doing the first request of opcode after when."""
    seen = []

    def late(op, oid, offset, length):
        if op != opcode or seen:
            return None
        seen.append(oid)
        return when
    return late


class SettleTest(native_base.FailoverClientTestCase):

    def with_transfer_timeout(self, seconds):
        """A client whose transfer timeout is seconds."""
        settings = native_base.FailoverSettings(self.first.port)
        settings.transfer_timeout = seconds
        self.client = client.get_client(settings)
        return settings

    def parking(self):
        return membership.of(self.settings).parking

    def objects_of(self, vid):
        return [oid for oid in self.first.objects
                if proto.oid_vid(oid) == vid]

    def land_later(self, event, seconds):
        timer = threading.Timer(seconds, event.set)
        timer.start()
        self.addCleanup(timer.cancel)

    def test_late_first_copy_lands_before_the_delete_removes_anything(self):
        # Window (a): the first object write is answered only once the
        # client failed over and resent it; the upload succeeds and the
        # image is deleted right away. The first copy lands 1 s later:
        # without settling it, it would leave an object of a deleted VDI.
        data = os.urandom(6 * OBJECT)
        vid = self.first.next_vid
        landed = threading.Event()
        self.first.late = late_once(proto.OP_CREATE_AND_WRITE_OBJ, landed)
        self.write(data)
        self.assertFailedOver(self.first, self.second)
        # The upload did not wait for it: still held.
        self.assertEqual(1, self.first.late_pending)
        self.land_later(landed, 1.0)
        self.client.delete('127.0.0.1', self.first.port, 'img')
        self.first.wait_late()
        self.assertEqual([], self.objects_of(vid))
        self.assertNotIn(('img', 0), self.first.images)
        self.assertEqual({}, self.first.attrs)
        self.assertEqual(0, len(self.parking()))
        self.assertNothingLeft()

    def test_write_cut_off_after_it_went_out_is_waited_for_its_bound(self):
        # The connection is reset under a whole object write that the
        # sheep keeps and carries out 1 s later (a network that drops
        # the connection, not the request). Nothing more can be read,
        # so no answer says when it landed: the delete waits its bound
        # (the transfer timeout) before removing anything.
        self.with_transfer_timeout(2.5)
        vid = self.first.next_vid
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 2, 'hold')
        self.write(os.urandom(4 * OBJECT))
        self.assertFailedOver(self.first, self.second)
        timer = threading.Timer(1.0, self.first.land_held)
        timer.start()
        self.addCleanup(timer.cancel)
        self.client.delete('127.0.0.1', self.first.port, 'img')
        timer.join()
        self.assertEqual([], self.objects_of(vid))
        self.assertNotIn(('img', 0), self.first.images)
        self.assertNothingLeft()

    def test_settled_connection_is_closed_by_a_later_operation(self):
        # The first copy was answered after the upload returned: the
        # next operation of the cluster closes its connection.
        landed = threading.Event()
        self.first.late = late_once(proto.OP_CREATE_AND_WRITE_OBJ, landed)
        self.write(os.urandom(4 * OBJECT))
        self.assertEqual(1, len(self.parking()))
        landed.set()
        self.first.wait_late()
        deadline = time.time() + 5
        while len(self.parking()) and time.time() < deadline:
            self.client.size('127.0.0.1', self.first.port, 'img')
        self.assertEqual(0, len(self.parking()))
        self.assertNothingLeft()

    def test_sheep_that_never_answers_is_given_up_after_its_bound(self):
        # A frozen sheep holds the first copy for good: the delete waits
        # for it the transfer timeout at most, then warns naming the VDI
        # and the object that may still land.
        self.with_transfer_timeout(1.5)
        vid = self.first.next_vid
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 2, 'stall')
        self.write(os.urandom(4 * OBJECT))
        started = time.time()
        self.client.delete('127.0.0.1', self.first.port, 'img')
        self.assertLess(time.time() - started, 1.5 + 1.0)
        self.assertIn('Sheepdog image img (vdi %x): 1 request(s) left '
                      'unanswered' % vid, self.log.output)
        six.assertRegex(self, self.log.output,
                        'CREATE_AND_WRITE_OBJ of %d bytes at 0 of object '
                        '%08x[0-9a-f]{8}' % (OBJECT, vid))
        self.assertEqual(0, len(self.parking()))
        self.assertNothingLeft()

    def test_del_vdi_answered_after_the_stall_timeout_is_waited_for(self):
        # Window (b): DEL_VDI is never resent, so there is no other
        # sheep to try: its answer, 1 s late (the stall timeout is
        # 0.5 s), is waited for and the delete completes, markers too.
        self.write(os.urandom(2 * OBJECT))
        self.first.late = late_once(proto.OP_DEL_VDI, 1.0)
        self.client.delete('127.0.0.1', self.first.port, 'img')
        self.first.wait_late()
        self.assertNotIn(('img', 0), self.first.images)
        self.assertEqual({}, self.first.attrs)
        self.assertNothingLeft()

    def test_del_vdi_past_the_transfer_timeout_is_settled_by_a_retry(self):
        # DEL_VDI unanswered for the whole transfer timeout: the delete
        # fails (the VDI stays marked), its connection parked. It lands;
        # glance's retried delete finds the name gone and removes the
        # markers' objects before saying NotFound.
        self.with_transfer_timeout(1.0)
        self.write(os.urandom(2 * OBJECT))
        vid = self.first.images['img', 0].vid
        landed = threading.Event()
        self.first.late = late_once(proto.OP_DEL_VDI, landed)
        exc = self.assertRaises(exceptions.BackendException,
                                self.client.delete, '127.0.0.1',
                                self.first.port, 'img')
        self.assertIn('DEL_VDI was not answered', str(exc))
        self.assertIn(markers.DELETING_KEY, str(exc))
        landed.set()
        self.first.wait_late()
        self.assertNotIn(('img', 0), self.first.images)
        self.assertRaises(exceptions.NotFound, self.client.delete,
                          '127.0.0.1', self.first.port, 'img')
        self.assertEqual({}, self.first.attrs)
        self.assertEqual([], self.objects_of(vid))
        self.assertEqual(0, len(self.parking()))
        self.assertNothingLeft()
