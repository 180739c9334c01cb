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
"""A hostile fake sheep: numbers beyond sheepdog's own limits.

Each test has the fake answer one value no sheep of 0.9.5, 1.0.1 or
master can send (forged response fields, a forged inode or object
table), and checks that the client refuses it before sizing anything
by it, with an error naming the sheep (address:port) and the value; or,
where the value is one sheep can have (2-byte objects, a ring of 400
million vnodes), that the client's own work stays bounded.
"""

import hashlib
import io
import logging

import fixtures
from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep import client
from glance_store_fastsheep import image_data
from glance_store_fastsheep.native import connection
from glance_store_fastsheep.native import node_list
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import read as native_read
from glance_store_fastsheep.tests import native_settings
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base
from glance_store_fastsheep.tests.unit import sheep_wire

OBJECT = native_base.OBJECT
payload = native_base.payload


class HostileSheepTestCase(native_base.FdsClosedMixin,
                           base.BaseTestCase):

    def setUp(self):
        super(HostileSheepTestCase, self).setUp()
        self.sheep = fake_sheep.FakeSheep()
        self.addCleanup(self.sheep.close)
        self.settings = native_settings.Settings()
        self.settings.port = self.sheep.port
        self.client = client.get_client(self.settings)
        self.where = '127.0.0.1:%d' % self.sheep.port
        self.count_fds()

    def read(self, name, length, offset=0):
        return b''.join(native_read.read_range(
            self.settings, '127.0.0.1', self.sheep.port, name, offset,
            length))

    def assertRefused(self, call, *values):
        """call raises BackendException naming the sheep and values."""
        exc = self.assertRaises(exceptions.BackendException, call)
        message = str(exc)
        self.assertIn(self.where, message)
        for value in values:
            self.assertIn(value, message)
        self.assertFdsClosed()
        return message


class ResponseFieldTest(HostileSheepTestCase):
    """Fields of a response header: VDI ids and copies."""

    def test_lookup_vdi_id_beyond_sd_nr_vdis(self):
        image = self.sheep.add_image('img', payload(2 * OBJECT))
        forged = (1 << 24) | image.vid
        self.sheep.forged[proto.OP_GET_VDI_INFO] = {'vdi_id': forged}
        self.assertRefused(lambda: self.read('img', 2 * OBJECT),
                           'VDI id 0x%x' % forged, 'SD_NR_VDIS')

    def test_new_vdi_id_beyond_sd_nr_vdis_writes_nothing(self):
        # Bit 63 of a forged VDI id is the inode bit of an object id: the
        # upload's first object would be written over the victim's inode.
        kept = payload(OBJECT)
        victim = self.sheep.add_image('victim', kept)
        forged = (1 << 31) | victim.vid
        self.sheep.forged[proto.OP_NEW_VDI] = {'vdi_id': forged}
        data = payload(2 * OBJECT)
        hashes = image_data.Digest([hashlib.md5()], None)
        self.assertRefused(
            lambda: self.client.write('img', io.BytesIO(data), hashes,
                                      len(data)),
            'VDI id 0x%x' % forged)
        touched = [oid for opcode, oid, _offset, _length
                   in self.sheep.requests
                   if opcode in (proto.OP_CREATE_AND_WRITE_OBJ,
                                 proto.OP_WRITE_OBJ) and
                   (oid >> 32) & 0xffffff == victim.vid]
        self.assertEqual([], touched)
        self.assertEqual(kept, self.sheep.image_bytes('victim'))

    def test_attribute_vdi_id_beyond_sd_nr_vdis(self):
        # The partial marker's slot is read at (vdi_id, attr_id).
        forged = 1 << 24
        self.sheep.forged[proto.OP_GET_VDI_ATTR] = {'vdi_id': forged}
        data = payload(OBJECT)
        hashes = image_data.Digest([hashlib.md5()], None)
        self.assertRefused(
            lambda: self.client.write('img', io.BytesIO(data), hashes,
                                      len(data)),
            'attribute VDI id 0x%x' % forged)

    def test_copies_beyond_sd_max_copies(self):
        self.sheep.add_image('img', payload(OBJECT))
        self.sheep.forged[proto.OP_GET_VDI_INFO] = {'copies': 200}
        self.assertRefused(lambda: self.read('img', OBJECT),
                           'copies 200', 'SD_MAX_COPIES')


class InodeTest(HostileSheepTestCase):
    """The inode's fields and its data_vdi_id entries."""

    def test_block_size_shift_beyond_31(self):
        image = self.sheep.add_image('img', payload(2 * OBJECT))
        image.block_size_shift = 40
        self.assertRefused(lambda: self.read('img', 2 * OBJECT),
                           'block_size_shift 40')

    def test_flat_vdi_size_beyond_2_20_objects(self):
        # A delete zeroes the entries of every object vdi_size covers.
        image = self.sheep.add_image('img', payload(OBJECT))
        image.size = (1 << 64) - 1
        self.assertRefused(
            lambda: self.client.delete('127.0.0.1', self.sheep.port, 'img'),
            'vdi_size %d' % image.size, 'OLD_MAX_DATA_OBJS')
        self.assertIn(('img', 0), self.sheep.images)

    def test_flat_vdi_size_at_2_20_objects_is_sheeps(self):
        image = self.sheep.add_image('img', payload(OBJECT))
        image.size = OBJECT << 20
        self.assertEqual(image.size, self.client.size(
            '127.0.0.1', self.sheep.port, 'img'))

    def test_data_vdi_id_entry_beyond_sd_nr_vdis(self):
        # Bit 63 again: object 1 of the forged owner is the image's own
        # inode, whose bytes a reader would yield as the image's.
        image = self.sheep.add_image('img', payload(2 * OBJECT))
        forged = (1 << 31) | image.vid
        image.table[1] = forged
        self.assertRefused(lambda: self.read('img', 2 * OBJECT),
                           'data_vdi_id entry 1', 'VDI 0x%x' % forged)

    def test_parent_vdi_id_beyond_sd_nr_vdis(self):
        image = self.sheep.add_image('img', payload(OBJECT))
        image.parent = 1 << 24
        self.assertRefused(lambda: self.read('img', OBJECT),
                           'parent_vdi_id 0x%x' % image.parent)

    def test_inode_of_another_vdi(self):
        image = self.sheep.add_image('img', payload(OBJECT))
        other = self.sheep.add_image('other', payload(OBJECT, seed=2))
        self.sheep.by_vid[image.vid] = other
        self.assertRefused(lambda: self.read('img', OBJECT),
                           'inode of VDI 0x%x for VDI 0x%x' % (other.vid,
                                                               image.vid))

    def test_nr_copies_beyond_sd_max_copies(self):
        image = self.sheep.add_image('img', payload(OBJECT))
        image.nr_copies = 200
        # The lookup's answer says something else: the inode is checked.
        self.sheep.forged[proto.OP_GET_VDI_INFO] = {'copies': 3}
        self.assertRefused(lambda: self.read('img', OBJECT),
                           'nr_copies 200')

    def test_erasure_code_sheep_cannot_make(self):
        image = self.sheep.add_image('img', payload(OBJECT))
        self.sheep.forged[proto.OP_GET_VDI_INFO] = {'copies': 4}
        # 2 data strips (0x1_) and 2 parity: sheep keeps 4 copies.
        image.copy_policy = 0x12
        image.nr_copies = 4
        self.assertEqual(payload(OBJECT), self.read('img', OBJECT))
        image.nr_copies = 40
        self.assertRefused(lambda: self.read('img', OBJECT),
                           'copy_policy 0x12 and nr_copies 40')
        image.copy_policy = 0x32
        image.nr_copies = 8
        self.assertRefused(lambda: self.read('img', OBJECT),
                           'copy_policy 0x32')


class _EveryObject(dict):
    """The fake's objects: every data object exists, 2 bytes of 'ab'."""

    def get(self, oid, default=None):
        return b'ab'


class _EveryEntry(dict):
    """An object table whose every entry names owner."""

    def __init__(self, owner):
        super(_EveryEntry, self).__init__()
        self.owner = owner

    def get(self, index, default=None):
        return self.owner


class SheepLimitTest(HostileSheepTestCase):
    """Values sheep can have, whose cost here is bounded all the same."""

    def test_two_byte_objects_keep_few_reads_in_flight(self):
        # Sheep serves any block_size_shift a NEW_VDI carried; 1 is 2-byte
        # objects, 2^20 of them in a flat VDI of 2 MiB: a read depth of
        # IN_FLIGHT_BYTES / 2 would send them all at once.
        image = self.sheep.add_image('img', b'ab', block_size_shift=1)
        image.size = 2 << 20
        image.table = _EveryEntry(image.vid)
        self.sheep.objects = _EveryObject()
        batches = []
        send = connection.Connection.send

        def counting_send(session, requests):
            batches.append(len(requests))
            return send(session, requests)

        self.useFixture(fixtures.MockPatchObject(connection.Connection, 'send',
                                                 counting_send))
        pieces = native_read.read_range(self.settings, '127.0.0.1',
                                        self.sheep.port, 'img', 0,
                                        image.size)
        self.assertEqual(b'ab', next(pieces))
        pieces.close()
        self.assertLessEqual(max(batches), native_read.MAX_IN_FLIGHT)
        self.assertFdsClosed()

    def test_ring_of_more_vnodes_than_the_bound_is_not_built(self):
        # SD_MAX_NODES members of 65535 vnodes each: 400 million vnodes,
        # each a hash here. The download reads through the gateway.
        # DEBUG: another test of this process may have been warned first.
        log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep.native.placement',
            level=logging.DEBUG))
        data = payload(2 * OBJECT)
        self.sheep.add_image('img', data)
        self.sheep.place(65535, 0)
        for number in range(6143):
            # Members that are never connected to: no request fails.
            port = 1 + number
            self.sheep.members.append(('127.0.0.2', port))
            self.sheep._shared['placement'][port] = (65535, 1 + number)
        self.assertEqual(data, self.read('img', len(data)))
        self.assertIn('name %d vnodes on 6144 nodes' % (6144 * 65535),
                      log.output)
        self.assertFdsClosed()


class ObjectIdTest(base.BaseTestCase):
    """No object id is built from a VDI id or index outside its bits."""

    def test_vdi_id_and_index_must_fit(self):
        self.assertEqual(0x0000001000000005, proto.data_oid(0x10, 5))
        for vid, index in ((1 << 24, 0), (0x10, 1 << 20), (0x10, -1)):
            self.assertRaises(ValueError, proto.data_oid, vid, index)
        self.assertRaises(ValueError, proto.vdi_oid, 1 << 31)
        self.assertRaises(ValueError, proto.attr_oid, 1 << 24, 0)
        self.assertRaises(ValueError, proto.attr_oid, 0x10, 1 << 32)


class NodeListTest(base.BaseTestCase):
    """GET_NODE_LIST's entries."""

    def test_more_nodes_than_sd_max_nodes(self):
        # GET_NODE_LIST's buffer holds SD_MAX_NODES entries, so sheep
        # cannot send more over the wire; unpacked, they are refused.
        for size, most in ((80, 6144), (592, 830)):
            entries = sheep_wire.node_entry('10.0.0.1', 7000, size) * (
                most + 1)
            self.assertRaises(proto.ProtocolError, node_list.unpack,
                              entries, most + 1)
            self.assertEqual(most, len(node_list.unpack(
                entries[:size * most], most)))


class FailureWithDataTest(HostileSheepTestCase):
    """A failed erasure-coded read answers its result with data."""

    def test_retryable_result_with_data_is_retried(self):
        data = payload(3 * OBJECT)
        self.sheep.add_image('img', data)
        self.sheep.fault = (2, 'result_with_data', 0x8F)  # SD_RES_AGAIN
        self.assertEqual(data, self.read('img', len(data)))
        self.assertFdsClosed()

    def test_more_data_than_asked_is_still_refused(self):
        self.sheep.add_image('img', payload(OBJECT))
        self.sheep.fault = (1, 'result_with_data', (0x03, 1))
        self.assertRefused(lambda: self.read('img', OBJECT),
                           'sent %d bytes with SD_RES_EIO' % (OBJECT + 1))

    def test_final_result_with_data_keeps_sheeps_code(self):
        self.sheep.add_image('img', payload(3 * OBJECT))
        self.sheep.fault = (2, 'result_with_data', 0x03)  # SD_RES_EIO
        self.assertRefused(lambda: self.read('img', 3 * OBJECT),
                           'answered SD_RES_EIO (I/O error) to READ_OBJ')
