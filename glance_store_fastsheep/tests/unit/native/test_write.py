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
"""Uploads of the native client against a fake sheep (native.write).

Byte-exact round trips through the fake's own store, the requests sent
(thin images, inode updates in runs, orphans removed), errors mapped to
glance_store's exceptions, and no fd left open.
"""

import collections
import hashlib
import io
import os
import threading

from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep import budget
from glance_store_fastsheep import image_data
from glance_store_fastsheep.native import client as native_client
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import vdi
from glance_store_fastsheep.tests import green_child
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base
from glance_store_fastsheep.tests.unit import sheep_wire

OBJECT = native_base.OBJECT
Settings = native_base.Settings
payload = native_base.payload
digest = native_base.digest
Chunks = native_base.Chunks
CountingSource = native_base.CountingSource


class WriteTest(native_base.ClientTestCase):

    def test_get_client_builds_the_native_client(self):
        self.assertIsInstance(self.client, native_client.NativeClient)

    def test_sizes_round_trip_byte_exact(self):
        for number, size in enumerate((1, 511, OBJECT - 1, OBJECT,
                                       OBJECT + 1, 9 * OBJECT + 1234)):
            name = 'img%d' % number
            data = payload(size, seed=number)
            self.write(name, data)
            self.assertTrue(self.sheep.image_bytes(name) == data,
                            'size %d differs' % size)
            self.assertEqual(size, self.client.size('127.0.0.1',
                                                    self.sheep.port, name))
            got = b''.join(self.client.read('127.0.0.1', self.sheep.port,
                                            name, 0, size))
            self.assertTrue(got == data)
            self.assertEqual([], self.sheep.dangling)
            # Every object written is recorded as the image's own.
            self.assertEqual([], vdi.unowned_objects(
                self.settings, '127.0.0.1', self.sheep.port, name, size))
        self.assertFdsClosed()

    def test_new_vdi_asks_for_the_cluster_defaults(self):
        self.write('img', payload(OBJECT))
        fields = self.sheep.new_vdi_fields
        self.assertEqual((0, 0, OBJECT), (fields.vdi_copies,
                                          fields.block_size_shift,
                                          fields.vdi_size))

    def test_several_writes_in_flight_bounded_by_concurrency(self):
        data = payload(12 * OBJECT, seed=3)
        self.write('img', data)
        self.assertGreater(self.sheep.max_batch, 1)
        creates = self.ops(proto.OP_CREATE_AND_WRITE_OBJ)
        self.assertEqual(12, len(creates))
        self.assertLessEqual(self.sheep.max_create_batch,
                             Settings.write_concurrency)
        self.assertGreater(self.sheep.max_create_batch, 1)

    def test_budget_bounds_the_extra_writes(self):
        self.settings.write_budget = 0
        self.write('img', payload(8 * OBJECT, seed=4))
        # Only the upload's own first write: one in flight at a time.
        self.assertEqual(1, self.sheep.max_create_batch)
        self.assertEqual(0, budget.WRITERS.held)

    def test_upload_holds_at_most_write_concurrency_objects(self):
        # The object being read takes its place in the window: with 4
        # writes in flight at most, 4 objects of image data, not 5.
        data = payload(12 * OBJECT, seed=5)
        source = CountingSource(data)
        self.write('img', data, source=source)
        self.assertTrue(self.sheep.image_bytes('img') == data)
        per_object = OBJECT // self.settings.read_size
        self.assertEqual(Settings.write_concurrency * per_object,
                         source.peak)
        self.assertEqual(0, source.live)
        self.assertEqual(0, budget.WRITERS.held)

    def test_no_budget_is_one_object_in_memory(self):
        self.settings.write_budget = 0
        data = payload(6 * OBJECT, seed=6)
        source = CountingSource(data)
        self.write('img', data, source=source)
        self.assertEqual(OBJECT // self.settings.read_size, source.peak)
        self.assertEqual(0, budget.WRITERS.held)

    def test_thin_image_writes_no_zero_object(self):
        data = (payload(OBJECT) + b'\0' * (3 * OBJECT) +
                payload(100, seed=2) + b'\0' * (OBJECT - 100) +
                b'\0' * 777)
        self.write('sparse', data)
        image = self.sheep.images[('sparse', 0)]
        written = sorted(r[1] & 0xffffffff for r in self.ops(
            proto.OP_CREATE_AND_WRITE_OBJ))
        self.assertEqual([0, 4], written)
        self.assertEqual({0: image.vid, 4: image.vid}, image.table)
        self.assertTrue(self.sheep.image_bytes('sparse') == data)

    def test_inode_entries_are_written_in_runs(self):
        self.settings.write_concurrency = 8
        self.write('img', payload(8 * OBJECT, seed=5))
        records = [r for r in self.ops(proto.OP_WRITE_OBJ)
                   if r[2] >= inode_layout.DATA_INDEX_OFFSET]
        # Fewer requests than objects, covering each index once.
        self.assertLess(len(records), 8)
        covered = []
        for _op, _oid, offset, length in records:
            first = (offset - inode_layout.DATA_INDEX_OFFSET) // 4
            covered.extend(range(first, first + length // 4))
        self.assertEqual(list(range(8)), sorted(covered))
        # Each entry was written only after its object was.
        self.assertEqual([], self.sheep.dangling)

    def test_inode_update_flags_are_write_and_direct(self):
        self.write('img', payload(2 * OBJECT))
        flags = set(f.flags for f in self.sheep.fields
                    if f.opcode == proto.OP_WRITE_OBJ)
        self.assertEqual(set([proto.FLAG_CMD_WRITE |
                              proto.FLAG_CMD_DIRECT]), flags)

    def test_unknown_size_writes_the_size_once_after_the_last_entry(self):
        data = payload(5 * OBJECT + 300, seed=6)
        self.write('chunked', data, size=0, source=Chunks(data))
        self.assertTrue(self.sheep.image_bytes('chunked') == data)
        self.assertEqual(len(data),
                         self.sheep.images[('chunked', 0)].size)
        # Created at the flat bound, the size written once at the end.
        self.assertEqual(OBJECT << 20, self.sheep.new_vdi_fields.vdi_size)
        writes = [r for r in self.sheep.requests
                  if r[0] in (proto.OP_WRITE_OBJ,
                              proto.OP_CREATE_AND_WRITE_OBJ)]
        sizes = [r for r in writes if r[2] == inode_layout.VDI_SIZE_OFFSET]
        self.assertEqual(1, len(sizes))
        self.assertEqual(sizes[0], writes[-1])
        self.assertFdsClosed()

    def test_zero_byte_image(self):
        self.write('empty', b'', size=0)
        self.assertEqual(0, self.sheep.images[('empty', 0)].size)
        self.assertEqual([], self.ops(proto.OP_CREATE_AND_WRITE_OBJ))
        self.assertEqual(b'', b''.join(self.client.read(
            '127.0.0.1', self.sheep.port, 'empty', 0, 0)))

    def test_existing_name_is_duplicate_and_left_alone(self):
        old = payload(2 * OBJECT, seed=7)
        self.sheep.add_image('img', old)
        self.assertRaises(exceptions.Duplicate, self.write, 'img',
                          payload(OBJECT))
        self.assertTrue(self.sheep.image_bytes('img') == old)
        self.assertEqual([], self.ops(proto.OP_DEL_VDI))
        self.assertFdsClosed()

    def test_short_data_is_invalid_and_removed(self):
        data = payload(3 * OBJECT, seed=8)
        self.assertRaises(exceptions.Invalid, self.client.write, 'img',
                          io.BytesIO(data), digest(), len(data) + 10)
        self.assertEqual([], list(self.sheep.images))
        self.assertEqual({}, self.sheep.objects)
        self.assertFdsClosed()

    def test_long_data_is_invalid_and_removed(self):
        data = payload(3 * OBJECT, seed=9)
        self.assertRaises(exceptions.Invalid, self.client.write, 'img',
                          io.BytesIO(data), digest(), len(data) - 1)
        self.assertEqual([], list(self.sheep.images))
        self.assertEqual({}, self.sheep.objects)
        self.assertEqual(0, budget.WRITERS.held)

    def test_no_space_is_storage_full_and_orphans_are_removed(self):
        self.sheep.next_vid = 0x40
        oid = proto.data_oid(0x40, 3)
        self.sheep.write_results[oid] = proto.NO_SPACE
        data = payload(6 * OBJECT, seed=10)
        self.assertRaises(exceptions.StorageFull, self.client.write, 'img',
                          io.BytesIO(data), digest(), len(data))
        self.assertEqual([], list(self.sheep.images))
        # Nothing left: recorded objects went with their entries, the
        # ones never recorded by REMOVE_OBJ.
        self.assertEqual({}, self.sheep.objects)
        self.assertEqual(0, budget.WRITERS.held)
        self.assertFdsClosed()

    def removals(self, vid):
        """How many REMOVE_OBJ named each data object index of vid."""
        return collections.Counter(
            r[1] & 0xffffffff for r in self.ops(proto.OP_REMOVE_OBJ)
            if r[1] >> 32 == vid)

    def created(self, vid):
        return set(r[1] & 0xffffffff
                   for r in self.ops(proto.OP_CREATE_AND_WRITE_OBJ)
                   if r[1] >> 32 == vid)

    def fail_first_record(self, data, size):
        """An upload whose first inode update is refused; its vid.

        The objects of that run were acknowledged and are never
        recorded: orphans only their indexes reach.
        """
        self.settings.write_concurrency = 4
        self.sheep.next_vid = 0x40
        self.sheep.reply_fault = (proto.OP_WRITE_OBJ, 1, 'halt')
        self.assertRaises(exceptions.BackendException, self.client.write,
                          'img', image_data.Source(Chunks(data)),
                          digest(), size)
        self.assertEqual([], list(self.sheep.images))
        return 0x40

    def test_failed_upload_removes_each_object_once(self):
        data = payload(8 * OBJECT, seed=15)
        vid = self.fail_first_record(data, len(data))
        removed = self.removals(vid)
        self.assertTrue(self.created(vid))
        # Once each: the delete's sweep covers the orphans too.
        self.assertEqual({}, dict((index, count) for index, count in
                                  removed.items() if count > 1))
        self.assertEqual(set(range(8)), set(removed))
        self.assertEqual({}, self.sheep.objects)
        self.assertFdsClosed()

    def test_failed_upload_of_unknown_size_removes_its_orphans(self):
        # Created at the flat bound: the delete sweeps what the table
        # showed and what the upload sent, not all 2^20 indexes.
        data = payload(8 * OBJECT, seed=16)
        vid = self.fail_first_record(data, 0)
        self.assertEqual(OBJECT << 20, self.sheep.new_vdi_fields.vdi_size)
        removed = self.removals(vid)
        created = self.created(vid)
        self.assertTrue(created)
        self.assertEqual(set(), created - set(removed))
        self.assertEqual({}, dict((index, count) for index, count in
                                  removed.items() if count > 1))
        self.assertEqual({}, self.sheep.objects)
        self.assertFdsClosed()

    def test_other_result_names_code_and_node(self):
        self.sheep.next_vid = 0x40
        self.sheep.write_results[proto.data_oid(0x40, 1)] = 0x03
        data = payload(3 * OBJECT, seed=11)
        exc = self.assertRaises(exceptions.BackendException,
                                self.client.write, 'img', io.BytesIO(data),
                                digest(), len(data))
        self.assertIn('SD_RES_EIO (I/O error)', str(exc))
        self.assertIn('sheep at 127.0.0.1:%d' % self.sheep.port, str(exc))
        self.assertEqual([], list(self.sheep.images))

    def test_read_only_object_is_forbidden(self):
        # What a snapshot's objects answer to a write.
        self.sheep.next_vid = 0x40
        self.sheep.write_results[proto.data_oid(0x40, 0)] = proto.READONLY
        data = payload(OBJECT, seed=12)
        exc = self.assertRaises(exceptions.Forbidden, self.client.write,
                                'img', io.BytesIO(data), digest(), len(data))
        self.assertIn('SD_RES_READONLY', str(exc))
        self.assertEqual([], list(self.sheep.images))

    def test_result_map(self):
        """Each final code as glance expects it; the rest name the code."""
        for result, wanted in (
                (proto.VDI_EXIST, exceptions.Duplicate),
                (proto.NO_VDI, exceptions.NotFound),
                (proto.NO_TAG, exceptions.NotFound),
                (proto.NO_SPACE, exceptions.StorageFull),
                (proto.FULL_VDI, exceptions.StorageFull),
                (proto.VDI_LOCKED, exceptions.InUseByStore),
                (proto.READONLY, exceptions.Forbidden),
                (0x05, exceptions.BackendException)):
            exc = errors.error_for(result, 'sheep at 127.0.0.1:1',
                                   'DEL_VDI img', 'img')
            self.assertIs(wanted, type(exc), hex(result))
            self.assertIn(proto.RESULTS[result][0], str(exc))

    def test_retryable_result_is_retried(self):
        self.sheep.next_vid = 0x40
        oid = proto.data_oid(0x40, 1)
        answers = []
        real = fake_sheep.FakeSheep._write_obj

        def network_error_once(sheep, req_id, opcode, length, req_oid,
                               *args):
            if req_oid == oid and not answers:
                answers.append(req_id)
                return sheep_wire.response(req_id, opcode, 0x86)
            return real(sheep, req_id, opcode, length, req_oid, *args)
        self.sheep._HANDLERS = dict(self.sheep._HANDLERS)
        self.sheep._HANDLERS[proto.OP_CREATE_AND_WRITE_OBJ] = (
            network_error_once)
        data = payload(3 * OBJECT, seed=12)
        self.write('img', data)
        self.assertEqual(1, len(answers))
        self.assertTrue(self.sheep.image_bytes('img') == data)

    def test_each_hash_on_a_thread_of_its_own(self):
        data = payload(3 * OBJECT, seed=13)
        hashers = [Recording(hashlib.md5()), Recording(hashlib.sha512())]
        verifier = Recording(hashlib.sha256())
        self.client.write('img', io.BytesIO(data),
                          image_data.Digest(hashers, verifier), len(data))
        for sink, algo in zip(hashers + [verifier],
                              ('md5', 'sha512', 'sha256')):
            self.assertEqual(hashlib.new(algo, data).hexdigest(),
                             sink.hasher.hexdigest())
            self.assertEqual(1, len(set(sink.threads)))
            self.assertNotIn(threading.current_thread().name, sink.threads)
        self.assertEqual(3, len(set(sink.threads[0] for sink in
                                    hashers + [verifier])))

    def test_hash_error_fails_the_upload_and_removes_it(self):
        class Broken(object):
            def update(self, piece):
                raise ValueError('verifier refused the data')
        data = payload(2 * OBJECT, seed=14)
        exc = self.assertRaises(ValueError, self.client.write, 'img',
                                io.BytesIO(data),
                                image_data.Digest([hashlib.md5()], Broken()),
                                len(data))
        self.assertIn('verifier refused', str(exc))
        self.assertEqual([], list(self.sheep.images))
        self.assertEqual({}, self.sheep.objects)


class Recording(object):
    """A hasher that notes the thread of each update."""

    def __init__(self, hasher):
        self.hasher = hasher
        self.threads = []

    def update(self, piece):
        self.threads.append(threading.current_thread().name)
        self.hasher.update(piece)


def green_write():
    """EventletWriteTest's write, in a monkey-patched child (green_child)."""
    data = os.urandom(20 * OBJECT + 77)
    sheep = fake_sheep.FakeSheep()
    settings = Settings()
    settings.port = sheep.port
    ticker = green_child.Ticker()
    md5 = hashlib.md5()
    sha512 = hashlib.sha512()
    written = native_client.NativeClient(settings).write(
        'img', io.BytesIO(data), image_data.Digest([md5, sha512], None),
        len(data))
    ticks = ticker.stop()
    exact = sheep.image_bytes('img') == data
    sheep.close()
    return {'exact': exact, 'written': written == len(data),
            'md5': md5.hexdigest() == hashlib.md5(data).hexdigest(),
            'sha512': (sha512.hexdigest() ==
                       hashlib.sha512(data).hexdigest()),
            'ticks': ticks}


class EventletWriteTest(base.BaseTestCase):

    def test_write_cooperates_with_the_hub_when_monkey_patched(self):
        """The fake sheep's threads are greenthreads of the same thread.

        A writer that blocked the OS thread would never be answered.
        """
        report = green_child.run(self, __name__, 'green_write')
        self.assertEqual({'exact': True, 'written': True, 'md5': True,
                          'sha512': True},
                         {'exact': report['exact'],
                          'written': report['written'],
                          'md5': report['md5'], 'sha512': report['sha512']})
        self.assertGreater(report['ticks'], 0)


class WriterUnitTest(base.BaseTestCase):

    def test_runs(self):
        self.assertEqual([(0, 3), (5, 1), (7, 2)],
                         list(vdi.runs([8, 0, 1, 2, 5, 7])))
        self.assertEqual([], list(vdi.runs([])))
