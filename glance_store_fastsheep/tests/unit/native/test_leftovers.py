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
"""A partial upload's VDI is marked, and a retry of its id replaces it.

The marker is the VDI attribute ``markers.PARTIAL_KEY``, which the fake
sheep keeps as sheep's cluster_get_vdi_attr does: by name, left behind
when the VDI is deleted, with the create_time of the VDI it was set on.
The cluster becomes unreachable by closing the second fake sheep and
freezing the first mid-upload: the cleanup then has no member to go to.
"""

import collections
import os

from glance_store import exceptions

from glance_store_fastsheep import client
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base
from glance_store_fastsheep.tests.unit import sheep_wire

OBJECT = native_base.OBJECT
KEY = markers.PARTIAL_KEY


class PartialTest(native_base.FailoverClientTestCase):

    def marker(self, name='img'):
        """The marker's (name, ctime, key, value), or None if deleted."""
        stored = self.first.attrs.get(self.first.attr_slot(name, KEY))
        if stored is None or not stored[:1].strip(b'\0'):
            return None
        return sheep_wire.read_attr(stored)

    def leave_partial(self, data):
        """An upload cut off with no member left; its vid."""
        vid = self.cut_off_upload(data)
        self.assertEqual(vid, self.first.images['img', 0].vid)
        self.assertIn('Could not remove the partial sheepdog image img '
                      '(vdi %x, marked %s' % (vid, KEY), self.log.output)
        return vid

    def retry(self, data):
        # A new store: glance retries from another request.
        self.client = client.get_client(
            native_base.FailoverSettings(self.first.port))
        return self.write(data)

    def test_marker_set_after_new_vdi_and_deleted_after_the_last_record(self):
        self.write(os.urandom(6 * OBJECT))
        ops = [(opcode, fields.flags) for opcode, fields in zip(
            [request[0] for request in self.first.requests],
            self.first.fields)]
        new_vdi = ops.index((proto.OP_NEW_VDI, proto.FLAG_CMD_WRITE))
        mark = ops.index((proto.OP_GET_VDI_ATTR,
                          proto.FLAG_CMD_WRITE | proto.FLAG_CMD_CREAT))
        first_data = [op[0] for op in ops].index(
            proto.OP_CREATE_AND_WRITE_OBJ)
        clear = ops.index((proto.OP_GET_VDI_ATTR,
                           proto.FLAG_CMD_WRITE | proto.FLAG_CMD_DEL))
        last_record = max(i for i, op in enumerate(ops)
                          if op[0] == proto.OP_WRITE_OBJ)
        self.assertTrue(new_vdi < mark < first_data < last_record < clear,
                        ops)
        self.assertIsNone(self.marker())
        self.assertNothingLeft()

    def test_unreachable_cluster_leaves_a_marked_vdi_a_retry_replaces(self):
        data = os.urandom(12 * OBJECT + 7)
        vid = self.leave_partial(data)
        name, ctime, key, value = self.marker()
        self.assertEqual((b'img', KEY.encode('ascii')), (name, key))
        self.assertEqual(('vdi=%x' % vid).encode('ascii'), value)
        self.assertEqual(self.first.images['img', 0].create_time, ctime)
        self.assertTrue(any(oid >> 32 == vid for oid in self.first.objects))
        self.retry(data)
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertNotEqual(vid, self.first.images['img', 0].vid)
        self.assertIn('Replacing sheepdog image img (vdi %x)' % vid,
                      self.log.output)
        # The old VDI's objects, recorded or not, are gone.
        self.assertEqual(
            [], [oid for oid in self.first.objects if oid >> 32 == vid])
        self.assertIsNone(self.marker())
        self.assertNothingLeft()

    def test_replaced_vdi_has_each_object_removed_once(self):
        data = os.urandom(12 * OBJECT + 7)
        vid = self.leave_partial(data)
        created = set(oid & 0xffffffff for oid in self.first.objects
                      if oid >> 32 == vid)
        self.assertTrue(created)
        self.retry(data)
        removed = collections.Counter(
            r[1] & 0xffffffff for r in self.first.requests
            if r[0] == proto.OP_REMOVE_OBJ and r[1] >> 32 == vid)
        # Once each, recorded or not: the delete's sweep alone.
        self.assertEqual({}, dict((index, count) for index, count in
                                  removed.items() if count > 1))
        self.assertEqual(set(range(13)), set(removed))
        self.assertEqual(
            [], [oid for oid in self.first.objects if oid >> 32 == vid])
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertNothingLeft()

    def test_complete_image_stays_duplicate(self):
        data = os.urandom(3 * OBJECT)
        self.write(data)
        self.assertRaises(exceptions.Duplicate, self.retry,
                          os.urandom(3 * OBJECT))
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertNothingLeft()

    def test_unmarked_image_is_never_replaced(self):
        # What dog, the dog client and the Pike driver write.
        self.first.add_image('img', b'd' * 2 * OBJECT)
        self.assertRaises(exceptions.Duplicate, self.write,
                          os.urandom(2 * OBJECT))
        self.assertEqual(b'd' * 2 * OBJECT, self.first.image_bytes('img'))
        self.assertNothingLeft()

    def test_marker_left_by_a_deleted_vdi_does_not_count(self):
        self.leave_partial(os.urandom(8 * OBJECT))
        # An operator deletes it by hand (dog vdi delete: the attribute
        # stays, as on sheep), then dog writes a complete image of the
        # name.
        del self.first.images['img', 0]
        self.first.add_image('img', b'p' * OBJECT)
        self.assertIsNotNone(self.marker())
        self.assertRaises(exceptions.Duplicate, self.retry,
                          os.urandom(OBJECT))
        self.assertEqual(b'p' * OBJECT, self.first.image_bytes('img'))
        self.assertNothingLeft()

    def test_sheep_0_9_internal_version(self):
        self.first.sheep_version = 0x09
        data = os.urandom(5 * OBJECT)
        self.leave_partial(data)
        self.retry(data)
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertNothingLeft()

    def test_lost_new_vdi_reply_does_not_adopt_a_marked_leftover(self):
        # The resent NEW_VDI finds the name taken: a VDI of the same
        # size, but an earlier upload's (marked), is replaced, not
        # written into.
        data = os.urandom(6 * OBJECT)
        vid = self.leave_partial(data)
        third = fake_sheep.FakeSheep(self.first)
        self.addCleanup(third.close)
        self.first.reply_fault = (proto.OP_NEW_VDI, 1, 'reset')
        self.retry(data)
        self.assertIn('Replacing sheepdog image img (vdi %x)' % vid,
                      self.log.output)
        self.assertNotEqual(vid, self.first.images['img', 0].vid)
        self.assertEqual(data, self.first.image_bytes('img'))
        self.assertIsNone(self.marker())
