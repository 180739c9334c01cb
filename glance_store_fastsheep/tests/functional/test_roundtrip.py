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

import hashlib
import os
import uuid

from glance_store_fastsheep import store
from glance_store_fastsheep.tests.functional import base

READ = base.FunctionalTestCase.READ_SIZE
CHUNK = base.FunctionalTestCase.CHUNK_MIB * base.MIB


class RoundTripTest(base.FunctionalTestCase):
    """Byte-exact add/get/delete at every size boundary."""

    def _round_trip(self, size, announce):
        data = os.urandom(size)
        name = 'img-%d-%s' % (size, 'known' if announce else 'unknown')
        result = base.add(self.sd, name, data, size if announce else 0)
        self.assertEqual('sheepdog://127.0.0.1:%d:%s'
                         % (self.sheep.port, name), result[0])
        self.assertEqual(size, result[1])
        self.assertEqual(hashlib.md5(data).hexdigest(), result[2])
        # What the cluster holds, looked at without the CLI.
        self.assertEqual(data, self.sheep.vdi_bytes(name))
        loc = self.location(result[0])
        self.assertEqual(size, self.sd.get_size(loc))
        self.assertEqual(data, self.read_all(name))
        self.sd.delete(loc)
        self.assertNothingLeft()

    def test_empty(self):
        self._round_trip(0, True)
        self._round_trip(0, False)

    def test_one_byte(self):
        self._round_trip(1, True)
        self._round_trip(1, False)

    def test_read_size_minus_one(self):
        self._round_trip(READ - 1, True)
        self._round_trip(READ - 1, False)

    def test_read_size(self):
        self._round_trip(READ, True)
        self._round_trip(READ, False)

    def test_read_size_plus_one(self):
        self._round_trip(READ + 1, True)
        self._round_trip(READ + 1, False)

    def test_chunk_minus_one(self):
        self._round_trip(CHUNK - 1, True)
        self._round_trip(CHUNK - 1, False)

    def test_chunk_plus_one(self):
        self._round_trip(CHUNK + 1, True)
        self._round_trip(CHUNK + 1, False)

    def test_multi_chunk(self):
        self._round_trip(3 * CHUNK + READ + 7, True)
        self._round_trip(3 * CHUNK + READ + 7, False)

    def test_multihash_and_verifier(self):
        data = os.urandom(CHUNK + 3)
        seen = []

        class Verifier(object):
            def update(self, piece):
                seen.append(bytes(piece))

        result = base.add(self.sd, 'img', data, algo='sha512',
                          verifier=Verifier())
        self.assertEqual(data, b''.join(seen))
        self.assertLessEqual(max(len(p) for p in seen), READ)
        if store.MULTIHASH:
            self.assertEqual(hashlib.sha512(data).hexdigest(), result[3])
        else:
            self.assertEqual(4, len(result))

    def test_hashing_runs_off_the_hub(self):
        """Under eventlet every hash update leaves the hub's OS thread.

        md5 of one read-size piece holds a CPU for a millisecond or more;
        on the hub that is a millisecond no other request runs. Under
        native threads the request's own thread hashes, in order.
        """
        data = os.urandom(2 * CHUNK + 5)
        threads = []
        pieces = []

        class Verifier(object):
            def update(self, piece):
                threads.append(base.os_thread_id())
                pieces.append(bytes(piece))

        for name, size in (('known', len(data)), ('unknown', 0)):
            del threads[:], pieces[:]
            base.add(self.sd, name, data, size=size, verifier=Verifier())
            self.assertEqual(data, b''.join(pieces))
            here = base.os_thread_id()
            if base.expected_mode() == 'eventlet':
                self.assertNotIn(here, threads)
            else:
                self.assertEqual({here}, set(threads))


class RangeTest(base.FunctionalTestCase):

    def test_ranges(self):
        data = os.urandom(2 * CHUNK + 11)
        base.add(self.sd, 'img', data)
        for offset, length in ((0, 1), (1, 1), (READ - 1, 2),
                               (CHUNK - 3, 7), (CHUNK, READ + 1),
                               (len(data) - 1, 1), (len(data) - 1, 100),
                               (5, None), (len(data), None)):
            want = data[offset:None if length is None else offset + length]
            self.assertEqual(want, self.read_all('img', offset, length),
                             (offset, length))
        # One process per range, each asked for exactly its bytes.
        reads = self.sheep.calls('read')
        self.assertEqual(['0', '1'], reads[0][-2:])
        self.assertEqual([str(CHUNK - 3), '7'], reads[3][-2:])
        self.assertNothingLeft(['img'])


class ConcurrencyTest(base.FunctionalTestCase):

    def test_serial_and_parallel_writes_store_the_same_bytes(self):
        data = os.urandom(5 * CHUNK + 1)
        for width in (1, 3, 16):
            sd = self.make_store(self.make_conf(
                sheepdog_store_write_concurrency=width))
            name = 'img-%d' % width
            base.add(sd, name, data)
            self.assertEqual(data, self.sheep.vdi_bytes(name))
        # Every write was object aligned, with an explicit length.
        for call in self.sheep.calls('write'):
            offset, length = int(call[-2]), int(call[-1])
            self.assertEqual(0, offset % (4 * base.MIB))
            self.assertTrue(length == CHUNK or offset + length == len(data))
        self.assertNothingLeft(['img-1', 'img-16', 'img-3'])


class DefaultSizesTest(base.FunctionalTestCase):
    """The shipped defaults: 1 MiB reads, 64 MiB chunks."""

    READ_SIZE = 1024 * 1024
    CHUNK_MIB = 64

    def test_round_trip_past_one_default_chunk(self):
        data = os.urandom(64 * base.MIB + base.MIB + 1)
        base.add(self.sd, 'big', data)
        stream, length = self.sd.get(self.location('big'))
        pieces = list(stream)
        self.assertEqual(len(data), length)
        self.assertEqual(data, b''.join(pieces))
        self.assertEqual(base.MIB, max(len(p) for p in pieces))
        self.assertEqual(1, len(self.sheep.calls('read')))
        self.sd.delete(self.location('big'))
        self.assertNothingLeft()


class TwoStoresOneClusterTest(base.FunctionalTestCase):
    """Two stores on one cluster hold the same image (issue 37).

    glance's copy-image and an import to several stores write the same
    image id to two backends; on one cluster each upload is a VDI of
    its own (store.vdi_name), through the dog client here.
    """

    def test_same_image_in_two_stores(self):
        self.use_attempt_names()
        other_conf = self.make_conf()
        other = self.make_store(other_conf)
        image_id = str(uuid.uuid4())
        data = os.urandom(CHUNK + 5)
        copy = os.urandom(2 * CHUNK + 1)
        uri = base.add(self.sd, image_id, data)[0]
        other_uri = base.add(other, image_id, copy, 0)[0]
        self.assertNotEqual(uri, other_uri)
        names = [one.rsplit(':', 1)[1] for one in (uri, other_uri)]
        self.assertEqual(sorted(names), self.sheep.list_vdis())
        self.assertEqual(data, self.sheep.vdi_bytes(names[0]))
        self.assertEqual(copy, self.sheep.vdi_bytes(names[1]))
        # Deleting the image from one store leaves the other's copy.
        self.sd.delete(self.location(uri))
        self.assertEqual([names[1]], self.sheep.list_vdis())
        stream, length = other.get(self.location(other_uri, other_conf))
        self.assertEqual(copy, b''.join(stream))
        other.delete(self.location(other_uri, other_conf))
        self.assertNothingLeft()
