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
"""VDI operations of the native client against a fake sheep.

Lookup, delete and the cluster check (native.vdi, native.deletion):
what each sends, errors mapped to glance_store's exceptions, and no fd
left open.
"""

from glance_store import exceptions

from glance_store_fastsheep import client
from glance_store_fastsheep.native import deletion
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import failover
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import vdi as vdi_ops
from glance_store_fastsheep.tests.unit.native import base as native_base

OBJECT = native_base.OBJECT
Settings = native_base.Settings
payload = native_base.payload


class LookupDeleteTest(native_base.ClientTestCase):

    def test_lookup(self):
        self.sheep.add_image('img', payload(OBJECT + 5))
        found = self.client.lookup('127.0.0.1', self.sheep.port, 'img')
        self.assertEqual(OBJECT + 5, found.size)
        self.assertIsNone(self.client.lookup('127.0.0.1', self.sheep.port,
                                             'nothing'))
        self.assertRaises(exceptions.NotFound, self.client.size,
                          '127.0.0.1', self.sheep.port, 'nothing')
        self.assertFdsClosed()

    def test_delete_zeroes_entries_then_deletes_and_confirms(self):
        data = payload(3 * OBJECT) + b'\0' * OBJECT + payload(OBJECT, 2)
        self.sheep.add_image('img', data)
        self.client.delete('127.0.0.1', self.sheep.port, 'img')
        self.assertEqual(['img'], self.sheep.deleted)
        self.assertEqual({}, self.sheep.objects)
        opcodes = [r[0] for r in self.sheep.requests]
        # DEL_VDI, then its confirmation; after it only the markers'
        # objects are read and removed (markers.remove_markers).
        last = len(opcodes) - 1 - opcodes[::-1].index(proto.OP_DEL_VDI)
        self.assertEqual(proto.OP_GET_VDI_INFO, opcodes[last + 1])
        self.assertEqual(set([proto.OP_READ_OBJ, proto.OP_REMOVE_OBJ]),
                         set(opcodes[last + 2:]))
        self.assertEqual({}, self.sheep.attrs)
        zeroing = [r for r in self.ops(proto.OP_WRITE_OBJ)]
        # Entries 0-2 in one run, 4 in another.
        self.assertEqual([(inode_layout.DATA_INDEX_OFFSET, 12),
                          (inode_layout.DATA_INDEX_OFFSET + 16, 4)],
                         sorted((r[2], r[3]) for r in zeroing))
        self.assertFdsClosed()

    def test_delete_removes_objects_an_inode_copy_does_not_record(self):
        # Sheep removes an object when its entry is zeroed, reading the
        # entry from one copy of the inode; a copy a recovery left short
        # makes it keep the objects of the entries it lacks.
        data = payload(4 * OBJECT)
        self.sheep.add_image('img', data)
        self.sheep.entries_lost_from_a_copy = set([1, 2])
        self.client.delete('127.0.0.1', self.sheep.port, 'img')
        self.assertEqual(['img'], self.sheep.deleted)
        self.assertEqual({}, self.sheep.objects)
        self.assertFdsClosed()

    def test_delete_stopped_before_its_sweep_removes_what_was_sent(self):
        # An upload's leftover: objects 0 and 2 recorded, 1 created and
        # never recorded. A delete that fails before its sweep removes
        # that orphan on its way out, and only it: the VDI, not marked
        # deleting, still reads whole.
        data = payload(OBJECT) + b'\0' * OBJECT + payload(OBJECT, 2)
        image = self.sheep.add_image('img', data)
        orphan = proto.data_oid(image.vid, 1)
        self.sheep.objects[orphan] = payload(OBJECT, 3)
        self.sheep.results[proto.OP_GET_VDI_ATTR] = proto.READONLY
        session = failover.FailoverSession(
            self.settings, 'img', ('127.0.0.1', self.sheep.port))
        try:
            self.assertRaises(exceptions.Forbidden, deletion.delete,
                              session, 'img', sent=[0, 1, 2])
        finally:
            session.close()
        self.assertEqual([orphan],
                         [r[1] for r in self.ops(proto.OP_REMOVE_OBJ)])
        self.assertNotIn(orphan, self.sheep.objects)
        self.assertTrue(self.sheep.image_bytes('img') == data)
        self.assertFdsClosed()

    def test_sweep_adds_what_was_sent_at_the_flat_bound(self):
        class Inode(object):
            object_size = OBJECT
            vdi_size = OBJECT << 20
        flat = vdi_ops.Vdi(7, Inode())
        self.assertEqual([0, 1, 5, 9], list(deletion.sweep(
            flat, [0, 5], [1, 5, 9])))
        self.assertEqual([0, 5], list(deletion.sweep(flat, [0, 5])))
        # A leftover whose sends are not known: the whole flat table.
        self.assertEqual(1 << 20, len(list(deletion.sweep(
            flat, [0, 5], range(1 << 20)))))
        # Below it, every index the size covers, each once.
        Inode.vdi_size = 3 * OBJECT + 1
        self.assertEqual([0, 1, 2, 3], list(deletion.sweep(
            flat, [1], [0, 3])))

    def test_delete_answered_success_but_vdi_left_is_an_error(self):
        self.sheep.add_image('img', payload(OBJECT))
        # A sheep whose inode update is refused silently: DEL_VDI then
        # finds entries and keeps the VDI, answering success.
        self.sheep.results[proto.OP_WRITE_OBJ] = proto.SUCCESS
        exc = self.assertRaises(exceptions.BackendException,
                                self.client.delete, '127.0.0.1',
                                self.sheep.port, 'img')
        self.assertIn('answered success to DEL_VDI of img but still has '
                      'it', str(exc))
        self.assertFdsClosed()

    def test_delete_missing_is_not_found(self):
        self.assertRaises(exceptions.NotFound, self.client.delete,
                          '127.0.0.1', self.sheep.port, 'nothing')
        self.assertFdsClosed()

    def test_delete_with_snapshots_is_in_use_and_left_intact(self):
        old = payload(2 * OBJECT, seed=3)
        snap = self.sheep.add_image('img', old, snapid=1)
        current = self.sheep.add_clone('img', snap, {})
        current.parent = snap.vid
        exc = self.assertRaises(exceptions.InUseByStore,
                                self.client.delete, '127.0.0.1',
                                self.sheep.port, 'img')
        self.assertIn('has snapshots', str(exc))
        self.assertEqual([], self.ops(proto.OP_DEL_VDI))
        self.assertEqual([], self.ops(proto.OP_WRITE_OBJ))
        self.assertTrue(self.sheep.image_bytes('img') == old)

    def test_delete_with_an_older_snapshot_left_is_in_use(self):
        older = self.sheep.add_image('img', payload(OBJECT, seed=6),
                                     snapid=1)
        deleted = self.sheep.add_image('', payload(OBJECT, seed=7),
                                       snapid=2)
        deleted.parent = older.vid
        current = self.sheep.add_image('img', payload(OBJECT, seed=8))
        current.parent = deleted.vid
        self.assertRaises(exceptions.InUseByStore, self.client.delete,
                          '127.0.0.1', self.sheep.port, 'img')
        self.assertEqual([], self.ops(proto.OP_DEL_VDI))

    def test_delete_a_clone_of_another_image(self):
        base_data = payload(3 * OBJECT, seed=4)
        parent = self.sheep.add_image('base', base_data, snapid=1)
        clone = self.sheep.add_clone('clone', parent,
                                     {1: payload(OBJECT, seed=5)})
        clone.parent = parent.vid
        self.client.delete('127.0.0.1', self.sheep.port, 'clone')
        self.assertEqual(['clone'], self.sheep.deleted)
        # The base's objects stay; the clone's own one is gone.
        self.assertEqual(set(proto.data_oid(parent.vid, i)
                             for i in range(3)), set(self.sheep.objects))

    def test_unreachable(self):
        port = self.sheep.port
        self.sheep.close()
        self.assertRaises(errors.Unreachable, self.client.lookup,
                          '127.0.0.1', port, 'img')


class CheckTest(native_base.ClientTestCase):

    def test_running_1_0_cluster(self):
        self.assertEqual('sheepdog 1.0 or later', self.client.check())
        self.assertFdsClosed()

    def test_running_0_9_cluster(self):
        self.sheep.sheep_version = 0x09
        self.assertEqual('sheepdog 0.9', self.client.check())

    def test_unknown_internal_version_names_the_dog_client(self):
        self.sheep.sheep_version = 0x0b
        exc = self.assertRaises(client.ClientError, self.client.check)
        self.assertIn('sheepdog_store_client = dog', str(exc))
        self.assertIn('0x09, 0x0a', str(exc))

    def test_not_formatted(self):
        self.sheep.cluster_result = proto.WAIT_FOR_FORMAT
        exc = self.assertRaises(client.ClientError, self.client.check)
        self.assertIn('not formatted', str(exc))

    def test_shutting_down(self):
        self.sheep.cluster_result = 0x11
        exc = self.assertRaises(client.ClientError, self.client.check)
        self.assertIn('SD_RES_SHUTDOWN', str(exc))

    def test_unreachable(self):
        self.sheep.close()
        exc = self.assertRaises(client.ClientError, self.client.check)
        self.assertIn('cannot connect', str(exc))

    def test_public_protocol_mismatch_names_the_dog_client(self):
        self.sheep.results[proto.OP_GET_VDI_INFO] = proto.VER_MISMATCH
        exc = self.assertRaises(errors.Unsupported, self.client.lookup,
                                '127.0.0.1', self.sheep.port, 'img')
        self.assertIn('sheepdog_store_client = dog', str(exc))
