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
"""Round trips, ranges and errors on a real one-node sheepdog cluster."""

import hashlib
import io
import os

from glance_store import exceptions

from glance_store_fastsheep.tests.functional import base
from glance_store_fastsheep.tests.functional import test_roundtrip
from glance_store_fastsheep.tests.real import base as real_base

MIB = base.MIB


class RoundTripTest(real_base.RealCluster, test_roundtrip.RoundTripTest):
    """The emulator suite's size boundaries, on real sheep.

    4 MiB objects +- 1, the read size +- 1 and several chunks, each with
    its size known and unknown.
    """


class DefaultSizesTest(real_base.RealCluster, base.FunctionalTestCase):
    """The shipped defaults (1 MiB reads, 64 MiB chunks, read-ahead)."""

    READ_SIZE = MIB
    CHUNK_MIB = 64

    def _round_trip(self, size, announce=True):
        data = os.urandom(size)
        name = 'img-%d' % size
        result = base.add(self.sd, name, data, size if announce else 0)
        self.assertEqual((size, hashlib.md5(data).hexdigest()), result[1:3])
        self.assertEqual(data, self.sheep.vdi_bytes(name))
        self.assertEqual(data, self.read_all(name))
        self.sd.delete(self.location(name))
        self.assertNothingLeft()

    def test_chunk_minus_one(self):
        self._round_trip(64 * MIB - 1)

    def test_chunk_plus_one_unknown_size(self):
        self._round_trip(64 * MIB + 1, announce=False)

    def test_one_gib_plus_seven_streamed(self):
        """1 GiB + 7 through add and get without holding it in memory."""
        size = 1024 * MIB + 7
        source = real_base.PatternFile(size)
        result = base.add(self.sd, 'big', source, size)
        self.assertEqual((size, source.md5.hexdigest()), result[1:3])
        # What the cluster holds, through dog itself.
        self.assertEqual((source.md5.hexdigest(), size),
                         self.sheep.vdi_digest('big'))
        stream, length = self.sd.get(self.location('big'))
        got = hashlib.md5()
        read = 0
        for piece in stream:
            got.update(piece)
            read += len(piece)
        self.assertEqual((size, size), (length, read))
        self.assertEqual(source.md5.hexdigest(), got.hexdigest())
        self.sd.delete(self.location('big'))
        self.assertNothingLeft()

    def test_read_ahead_on_and_off(self):
        data = os.urandom(3 * 16 * MIB + 7)
        base.add(self.sd, 'img', data)
        for concurrency in (1, 2, 4):
            sd = self.make_store(self.make_conf(
                sheepdog_store_read_concurrency=concurrency,
                sheepdog_store_read_window=16))
            stream, length = sd.get(self.location('img'))
            self.assertEqual(data, b''.join(stream), concurrency)
            stream, length = sd.get(self.location('img'), offset=5,
                                    chunk_size=2 * 16 * MIB + 3)
            self.assertEqual(data[5:5 + 2 * 16 * MIB + 3],
                             b''.join(stream), concurrency)
        self.assertNothingLeft(['img'])


class RangeAndErrorTest(real_base.RealCluster, base.FunctionalTestCase):

    def test_ranges(self):
        chunk = self.CHUNK_MIB * MIB
        read = self.READ_SIZE
        data = os.urandom(2 * chunk + 11)
        base.add(self.sd, 'img', data)
        for offset, length in ((0, 1), (1, 1), (read - 1, 2),
                               (chunk - 3, 7), (chunk, read + 1),
                               (len(data) - 1, 1), (len(data) - 1, 100),
                               (5, None), (len(data), None)):
            want = data[offset:None if length is None else offset + length]
            self.assertEqual(want, self.read_all('img', offset, length),
                             (offset, length))
        self.assertRaises(exceptions.BackendException, self.sd.get,
                          self.location('img'), offset=len(data) + 1)
        self.assertNothingLeft(['img'])

    def test_duplicate_not_found_and_delete(self):
        base.add(self.sd, 'img', b'x' * 513)
        self.assertRaises(exceptions.Duplicate, base.add, self.sd, 'img',
                          b'y')
        # The duplicate upload did not touch the first image.
        self.assertEqual(b'x' * 513, self.sheep.vdi_bytes('img'))
        for call in (self.sd.get, self.sd.get_size, self.sd.delete):
            self.assertRaises(exceptions.NotFound, call,
                              self.location('missing'))
        self.sd.delete(self.location('img'))
        self.assertRaises(exceptions.NotFound, self.sd.delete,
                          self.location('img'))
        self.assertNothingLeft()

    def test_image_with_a_snapshot_is_left_intact(self):
        data = os.urandom(513)
        base.add(self.sd, 'img', data)
        self.sheep.check_dog('vdi', 'snapshot', 'img')
        exc = self.assertRaises(exceptions.InUseByStore, self.sd.delete,
                                self.location('img'))
        self.assertIn('has 1 snapshot(s)', str(exc))
        self.assertEqual(data, self.read_all('img'))
        # As an operator would: the snapshot first, then the image.
        self.sheep.check_dog('vdi', 'delete', '-s', '1', 'img')
        self.sd.delete(self.location('img'))
        self.assertNothingLeft()

    def test_unknown_size_upload_of_a_stream(self):
        data = os.urandom(2 * self.CHUNK_MIB * MIB + 3)

        class Stream(object):
            """A request body with no length, read in odd pieces."""

            def __init__(self):
                self.source = io.BytesIO(data)

            def read(self, length=-1):
                return self.source.read(min(length, 1000003))

        result = base.add(self.sd, 'img', Stream(), 0)
        self.assertEqual(len(data), result[1])
        self.assertEqual(len(data), self.sheep.vdi_size('img'))
        self.assertEqual(data, self.read_all('img'))
        self.assertNothingLeft(['img'])
