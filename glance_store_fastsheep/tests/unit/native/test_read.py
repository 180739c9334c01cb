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
"""The native reader against a fake sheep: bytes, ranges, faults, fds."""

import gc
import os
import time

import fixtures
from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep.native import connection
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import read as native_read
from glance_store_fastsheep.native import vdi
from glance_store_fastsheep.tests import green_child
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base
from glance_store_fastsheep.tests.unit import sheep_wire

OBJECT = native_base.OBJECT
Settings = native_base.Settings
payload = native_base.payload
open_fds = native_base.open_fds


class NativeReadTestCase(native_base.FdsClosedMixin, base.BaseTestCase):

    def setUp(self):
        super(NativeReadTestCase, self).setUp()
        self.sheep = fake_sheep.FakeSheep()
        self.addCleanup(self.sheep.close)
        self.settings = Settings(self.sheep.port)
        self.count_fds()

    def read(self, name, offset, length, **kwargs):
        return list(native_read.read_range(
            self.settings, '127.0.0.1', self.sheep.port, name, offset,
            length, **kwargs))


class ReadTest(NativeReadTestCase):

    def test_whole_image_byte_exact_in_read_size_pieces(self):
        data = payload(10 * OBJECT + 1234)
        self.sheep.add_image('img', data)
        pieces = self.read('img', 0, len(data))
        self.assertEqual(data, b''.join(pieces))
        self.assertTrue(all(len(p) <= Settings.read_size for p in pieces))
        # Several requests were in flight together, answered out of order,
        # and no more than the reader's bound.
        self.assertGreater(self.sheep.max_batch, 1)
        self.assertLessEqual(self.sheep.max_batch,
                             native_read.IN_FLIGHT_BYTES // OBJECT)
        self.assertFdsClosed()

    def test_buffers_are_bounded_and_reused(self):
        self.useFixture(fixtures.MockPatchObject(
            native_read, 'IN_FLIGHT_BYTES', 4 * OBJECT))
        sizes = []

        def counting_bytearray(size):
            sizes.append(size)
            return bytearray(size)

        for module in (native_read, vdi, connection):
            self.useFixture(fixtures.MockPatchObject(
                module, 'bytearray', counting_bytearray, create=True))
        data = payload(40 * OBJECT, seed=13)
        self.sheep.add_image('img', data)
        self.assertEqual(data, b''.join(self.read('img', 0, len(data))))
        # Four request buffers for forty objects, one response header,
        # the inode's fields and the table entries of the range: nothing
        # sized by the image or by sheep.
        self.assertEqual(sorted([OBJECT] * 4 + [proto.HEADER_SIZE,
                                                inode_layout.FIELDS_SIZE,
                                                4 * 40]),
                         sorted(sizes))

    def test_ranges(self):
        data = payload(6 * OBJECT + 999, seed=2)
        self.sheep.add_image('img', data)
        for offset, length in ((0, 1), (1, OBJECT), (OBJECT - 3, 7),
                               (2 * OBJECT, OBJECT), (5 * OBJECT + 17,
                                                      OBJECT + 982),
                               (len(data) - 1, 1), (123, 4 * OBJECT)):
            got = b''.join(self.read('img', offset, length))
            self.assertEqual(data[offset:offset + length], got,
                             'offset %d length %d' % (offset, length))
        self.assertEqual([], self.read('img', 10, 0))
        self.assertFdsClosed()

    def test_range_past_the_end_is_an_error(self):
        self.sheep.add_image('img', payload(OBJECT))
        self.assertRaises(exceptions.BackendException, self.read, 'img',
                          OBJECT - 1, 2)
        self.assertFdsClosed()

    def test_holes_read_as_zeros_without_a_request(self):
        data = (payload(OBJECT) + b'\0' * (3 * OBJECT) + payload(OBJECT, 3)
                + b'\0' * 100)
        image = self.sheep.add_image('sparse', data)
        self.assertEqual(data, b''.join(self.read('sparse', 0, len(data))))
        data_reads = [r for r in self.sheep.requests
                      if r[0] == proto.OP_READ_OBJ
                      and not r[1] & proto.VDI_BIT]
        self.assertEqual(set([proto.data_oid(image.vid, 0),
                              proto.data_oid(image.vid, 4)]),
                         set(r[1] for r in data_reads))

    def test_unowned_objects(self):
        data = (payload(OBJECT) + b'\0' * (2 * OBJECT) + payload(OBJECT, 3)
                + b'\0' * 100)
        self.sheep.add_image('sparse', data)
        self.assertEqual([1, 2, 4], vdi.unowned_objects(
            self.settings, '127.0.0.1', self.sheep.port, 'sparse',
            len(data)))
        # Only the table entries of the length asked for are looked at.
        self.assertEqual([1], vdi.unowned_objects(
            self.settings, '127.0.0.1', self.sheep.port, 'sparse',
            2 * OBJECT))
        # A clone's objects still owned by its parent are not its own.
        parent = self.sheep.add_image('base', payload(3 * OBJECT, seed=4))
        self.sheep.add_clone('clone', parent, {1: payload(OBJECT, seed=5)})
        self.assertEqual([0, 2], vdi.unowned_objects(
            self.settings, '127.0.0.1', self.sheep.port, 'clone',
            3 * OBJECT))
        self.assertFdsClosed()

    def test_unowned_of_the_indexes_asked_reads_up_to_the_last(self):
        data = (payload(OBJECT) + b'\0' * (2 * OBJECT) + payload(OBJECT, 3)
                + b'\0' * 100)
        image = self.sheep.add_image('sparse', data)
        session = connection.Connection('127.0.0.1', self.sheep.port, 'sparse',
                                        5, 5)
        self.addCleanup(session.close)
        self.assertEqual([4], list(vdi.unowned(session, image.vid,
                                               [0, 3, 4])))
        self.assertEqual([1], list(vdi.unowned(session, image.vid,
                                               [1, 3])))
        self.assertEqual([], list(vdi.unowned(session, image.vid, [])))
        # One table read each, of the entries from the first index asked
        # to the last.
        table_reads = [r for r in self.sheep.requests
                       if r[0] == proto.OP_READ_OBJ and r[1] & proto.VDI_BIT]
        self.assertEqual([(inode_layout.DATA_INDEX_OFFSET, 4 * 5),
                          (inode_layout.DATA_INDEX_OFFSET + 4, 4 * 3)],
                         [r[2:] for r in table_reads])

    def test_clone_reads_the_parent_objects_it_did_not_write(self):
        base_data = payload(5 * OBJECT, seed=4)
        parent = self.sheep.add_image('base', base_data)
        own = payload(OBJECT, seed=5)
        clone = self.sheep.add_clone('clone', parent, {1: own, 3: own})
        expected = (base_data[:OBJECT] + own + base_data[2 * OBJECT:
                                                         3 * OBJECT]
                    + own + base_data[4 * OBJECT:])
        self.assertEqual(expected, b''.join(self.read('clone', 0,
                                                      len(expected))))
        owners = set(r[1] >> 32 for r in self.sheep.requests
                     if r[0] == proto.OP_READ_OBJ
                     and not r[1] & proto.VDI_BIT)
        self.assertEqual(set([parent.vid, clone.vid]), owners)
        # The parent is unchanged by the clone's writes.
        self.assertEqual(base_data, b''.join(self.read('base', 0,
                                                       len(base_data))))

    def test_snapshot_by_id(self):
        old = payload(2 * OBJECT, seed=6)
        new = payload(2 * OBJECT, seed=7)
        self.sheep.add_image('img', old, snapid=1)
        self.sheep.add_image('img', new)
        self.assertEqual(old, b''.join(self.read('img', 0, len(old),
                                                 snapid=1)))
        self.assertEqual(new, b''.join(self.read('img', 0, len(new))))

    def test_reads_only_the_table_entries_of_the_range(self):
        data = payload(40 * OBJECT, seed=8)
        image = self.sheep.add_image('img', data)
        offset, length = 10 * OBJECT + 5, 3 * OBJECT
        self.assertEqual(data[offset:offset + length],
                         b''.join(self.read('img', offset, length)))
        inode_reads = [r for r in self.sheep.requests
                       if r[0] == proto.OP_READ_OBJ and r[1] & proto.VDI_BIT]
        self.assertEqual([(proto.OP_READ_OBJ, proto.vdi_oid(image.vid), 0,
                           inode_layout.FIELDS_SIZE),
                          (proto.OP_READ_OBJ, proto.vdi_oid(image.vid),
                           inode_layout.DATA_INDEX_OFFSET + 4 * 10, 4 * 4)],
                         inode_reads)

    def test_btree_inode_is_unsupported(self):
        image = self.sheep.add_image('huge', payload(OBJECT))
        image.store_policy = 1
        exc = self.assertRaises(errors.Unsupported, self.read, 'huge',
                                0, OBJECT)
        self.assertIn('B-tree', str(exc))
        self.assertFdsClosed()

    def test_missing_image_is_not_found(self):
        self.assertRaises(exceptions.NotFound, self.read, 'nothing', 0, 1)
        self.assertFdsClosed()

    def test_connection_refused_is_a_backend_error(self):
        port = self.sheep.port
        self.sheep.close()
        gc.collect()
        self.fds = open_fds()
        self.assertRaises(exceptions.BackendException, list,
                          native_read.read_range(self.settings, '127.0.0.1',
                                                 port, 'img', 0, 1))
        self.assertEqual(self.fds, open_fds())

    def test_generator_closed_mid_stream_closes_its_socket(self):
        data = payload(20 * OBJECT, seed=9)
        self.sheep.add_image('img', data)
        reader = native_read.read_range(self.settings, '127.0.0.1',
                                        self.sheep.port, 'img', 0,
                                        len(data))
        self.assertEqual(data[:Settings.read_size], next(reader))
        self.assertNotEqual(self.fds, open_fds())
        reader.close()
        self.assertFdsClosed()

    def test_dropped_generator_closes_its_socket(self):
        data = payload(20 * OBJECT, seed=10)
        self.sheep.add_image('img', data)
        reader = native_read.read_range(self.settings, '127.0.0.1',
                                        self.sheep.port, 'img', 0,
                                        len(data))
        next(reader)
        del reader
        self.assertFdsClosed()


class FaultTest(NativeReadTestCase):
    """Every fault: a clear error, a correct prefix, no fd left open."""

    SIZE = 12 * OBJECT

    def setUp(self):
        super(FaultTest, self).setUp()
        self.data = payload(self.SIZE, seed=11)
        self.sheep.add_image('img', self.data)
        self.settings.transfer_timeout = 2.0
        # Four requests in flight: the fake answers the first four in
        # reverse order, then one at a time as the reader asks again, so
        # that the n-th read is before or after the first byte.
        self.useFixture(fixtures.MockPatchObject(
            native_read, 'IN_FLIGHT_BYTES', 4 * OBJECT))

    def read_with_fault(self, nth, kind, argument=None,
                        error=exceptions.BackendException):
        self.sheep.fault = (nth, kind, argument)
        got = []
        reader = native_read.read_range(self.settings, '127.0.0.1',
                                        self.sheep.port, 'img', 0,
                                        self.SIZE)
        started = time.time()
        exc = self.assertRaises(error, self._drain, reader, got)
        self.assertLess(time.time() - started,
                        self.settings.transfer_timeout + 3)
        received = b''.join(got)
        self.assertLess(len(received), self.SIZE)
        self.assertEqual(self.data[:len(received)], received)
        self.assertFdsClosed()
        return exc, received

    @staticmethod
    def _drain(reader, got):
        for piece in reader:
            got.append(piece)

    def test_connection_reset(self):
        exc, _ = self.read_with_fault(3, 'reset')
        self.assertIn('connection', str(exc))

    def test_short_header(self):
        exc, _ = self.read_with_fault(3, 'short_header')
        self.assertIn('closed the connection after 20 of 48 bytes of a '
                      'response header', str(exc))

    def test_garbage_header(self):
        # 0xa5 as proto_ver: another version, after the first byte.
        exc, received = self.read_with_fault(6, 'garbage')
        self.assertIn('protocol version 0xa5', str(exc))
        self.assertTrue(received)

    def test_data_cut_mid_response(self):
        exc, _ = self.read_with_fault(4, 'truncate', 1000)
        self.assertIn('closed the connection', str(exc))

    def test_response_longer_than_asked(self):
        exc, _ = self.read_with_fault(2, 'longer', 10)
        self.assertIn('sent %d bytes for READ_OBJ of %d'
                      % (OBJECT + 10, OBJECT), str(exc))

    def test_response_length_no_reader_may_allocate(self):
        exc, _ = self.read_with_fault(2, 'huge')
        self.assertIn('sent 4294967295 bytes', str(exc))

    def test_response_for_an_id_never_sent(self):
        exc, _ = self.read_with_fault(2, 'wrong_id', 1000)
        self.assertIn('not in flight', str(exc))

    def test_wrong_version_after_the_first_byte(self):
        exc, received = self.read_with_fault(6, 'version', 3)
        self.assertIn('protocol version 0x03', str(exc))
        self.assertTrue(received)

    def test_wrong_version_before_the_first_byte_is_unsupported(self):
        self.read_with_fault(1, 'version', 3, error=errors.Unsupported)

    def test_unknown_result_before_the_first_byte_is_unsupported(self):
        exc, _ = self.read_with_fault(1, 'result', 0x77,
                                      error=errors.Unsupported)
        self.assertIn('unknown result 0x77', str(exc))

    def test_final_result_is_named(self):
        exc, _ = self.read_with_fault(5, 'result', 0x03)
        self.assertIn('SD_RES_EIO (I/O error)', str(exc))

    def test_retryable_result_is_retried(self):
        self.sheep.fault = (4, 'result', 0x86)  # SD_RES_NETWORK_ERROR
        got = self.read('img', 0, self.SIZE)
        self.assertEqual(self.data, b''.join(got))
        self.assertFdsClosed()

    def test_retryable_result_gives_up_at_the_transfer_timeout(self):
        self.settings.transfer_timeout = 1.0
        self.sheep.fault = None
        image = self.sheep.images[('img', 0)]
        real_answer = self.sheep._answer

        def killed(conn, opcode, req_id, length, oid, *rest):
            if oid == proto.data_oid(image.vid, 2):
                conn.sendall(sheep_wire.response(req_id, opcode, 0x8D))
                return True
            return real_answer(conn, opcode, req_id, length, oid, *rest)
        self.sheep._answer = killed
        started = time.time()
        exc = self.assertRaises(exceptions.BackendException, self.read,
                                'img', 0, self.SIZE)
        self.assertIn('kept answering SD_RES_KILLED', str(exc))
        self.assertLess(time.time() - started, 4)
        self.assertFdsClosed()

    def test_stalled_sheep_times_out(self):
        self.settings.transfer_timeout = 1.0
        exc, _ = self.read_with_fault(3, 'stall')
        self.assertIn('sent nothing for 1.0s', str(exc))


def green_read():
    """EventletTest's read, in a monkey-patched child (green_child)."""
    from eventlet.green import socket as green_socket
    data = os.urandom(40 * OBJECT + 77)
    sheep = fake_sheep.FakeSheep()
    sheep.add_image('img', data)
    ticker = green_child.Ticker()
    sockets = []
    real_session = connection.Connection.__init__

    def session(self, *args):
        real_session(self, *args)
        sockets.append(type(self.sock))

    connection.Connection.__init__ = session
    got = b''.join(native_read.read_range(Settings(sheep.port), '127.0.0.1',
                                          sheep.port, 'img', 0, len(data)))
    ticks = ticker.stop()
    sheep.close()
    return {'exact': got == data, 'ticks': ticks,
            'green': [issubclass(s, green_socket.socket) for s in sockets]}


class EventletTest(base.BaseTestCase):

    def test_cooperates_with_the_hub_when_monkey_patched(self):
        """Under monkey-patching the reader's socket is eventlet's.

        The fake sheep's threads are greenthreads of the same OS thread
        here: a reader that blocked the thread would never be answered.
        """
        report = green_child.run(self, __name__, 'green_read')
        self.assertEqual({'exact': True, 'green': [True]},
                         {'exact': report['exact'],
                          'green': report['green']})
        self.assertGreater(report['ticks'], 0)
