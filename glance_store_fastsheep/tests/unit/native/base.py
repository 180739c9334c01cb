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
"""Fixtures the native client's unit tests share.

One place for them, so that no test module imports another's: the fake
images' object size and payloads, the fd check, the clients of one fake
sheep (``ClientTestCase``) and of a cluster of two
(``FailoverClientTestCase``).
"""

import gc
import hashlib
import io
import os
import random
import sys
import threading
import time

import fixtures
from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep import client
from glance_store_fastsheep import image_data
from glance_store_fastsheep.native import membership
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import read as native_read
from glance_store_fastsheep.tests import native_settings
from glance_store_fastsheep.tests.unit import fake_sheep

OBJECT = 1 << 16  # the fake images' object size (block_size_shift 16)


Settings = native_settings.Settings


def payload(size, seed=1):
    rng = random.Random(seed)
    return bytes(bytearray(rng.getrandbits(8) for _ in range(size)))


def open_fds():
    return set(os.listdir('/proc/self/fd'))


class FdsClosedMixin(object):
    """assertFdsClosed for tests that read from ``self.sheep``."""

    def count_fds(self):
        # Sockets of earlier tests that only the collector frees (Python
        # 2.7) must not close between this count and the test's own, nor
        # the fake's side of connections the set-up made (the store's
        # start-up check): the fake closes those once it reads their EOF.
        gc.collect()
        sheep = getattr(self, 'sheep', None)
        deadline = time.time() + 5
        while sheep is not None and time.time() < deadline and (
                sheep.closed_connections < len(sheep.connections)):
            time.sleep(0.01)
        self.fds = open_fds()

    def assertFdsClosed(self):
        """The reader's socket is closed: the fake saw EOF, no fd is left.

        The fake sheep runs in this process: its side of a connection is
        closed once it reads the reader's close, so wait for that first.
        """
        gc.collect()
        deadline = time.time() + 5
        while (self.sheep.closed_connections < len(self.sheep.connections)
               and time.time() < deadline):
            time.sleep(0.01)
        self.assertEqual(len(self.sheep.connections),
                         self.sheep.closed_connections)
        # Python 2.7 keeps the last exception's frames (sys.exc_info)
        # until the function that caught it returns; what they hold is
        # freed then, so give the fd set a moment to settle.
        if hasattr(sys, 'exc_clear'):
            sys.exc_clear()
        while self.fds != open_fds() and time.time() < deadline:
            gc.collect()
            time.sleep(0.01)
        self.assertEqual(self.fds, open_fds())


class Chunks(object):
    """An iterator source of pieces of uneven sizes, as glance may pass."""

    def __init__(self, data, size=7000):
        self.pieces = [data[i:i + size] for i in range(0, len(data), size)]

    def __iter__(self):
        return iter(self.pieces)


def digest():
    return image_data.Digest([hashlib.md5(), hashlib.sha512()], None)


class _Piece(bytes):
    """A piece of image data that tells its source when it is freed."""

    def __new__(cls, data, source):
        piece = bytes.__new__(cls, data)
        piece.source = source
        return piece

    def __del__(self):
        self.source.freed()


class CountingSource(object):
    """A file whose pieces count themselves while the writer holds them.

    ``peak`` is the most pieces alive at once: the image data the upload
    held in memory, whoever held it (requests in flight, hashes).
    """

    def __init__(self, data):
        self.data = io.BytesIO(data)
        self.live = self.peak = 0
        self.lock = threading.Lock()

    def read(self, size):
        chunk = self.data.read(size)
        if not chunk:
            return chunk
        with self.lock:
            self.live += 1
            self.peak = max(self.peak, self.live)
        return _Piece(chunk, self)

    def freed(self):
        with self.lock:
            self.live -= 1


class ClientTestCase(FdsClosedMixin, base.BaseTestCase):
    """A native client of one fake sheep, writes checked byte-exact."""

    def setUp(self):
        super(ClientTestCase, self).setUp()
        self.sheep = fake_sheep.FakeSheep()
        self.addCleanup(self.sheep.close)
        self.settings = Settings()
        self.settings.port = self.sheep.port
        self.client = client.get_client(self.settings)
        self.count_fds()

    def ops(self, opcode):
        return [r for r in self.sheep.requests if r[0] == opcode]

    def write(self, name, data, size=None, source=None):
        hashes = digest()
        if source is None:
            source = io.BytesIO(data)
        # As the store hands it over.
        written = self.client.write(name, image_data.Source(source),
                                    hashes,
                                    len(data) if size is None else size)
        self.assertEqual(len(data), written)
        self.assertEqual(hashlib.md5(data).hexdigest(),
                         hashes.hashers[0].hexdigest())
        self.assertEqual(hashlib.sha512(data).hexdigest(),
                         hashes.hashers[1].hexdigest())
        return written


class FailoverSettings(native_settings.Settings):
    """Settings of a cluster of fake sheep, with short timeouts."""

    transfer_timeout = 4.0
    stall_timeout = 0.5

    def __init__(self, port, others=()):
        self.port = port
        self.addresses = [('127.0.0.1', port)] + [
            ('127.0.0.1', other) for other in others]


class FailoverTestCase(base.BaseTestCase):

    def setUp(self):
        super(FailoverTestCase, self).setUp()
        self.first = fake_sheep.FakeSheep()
        self.addCleanup(self.first.close)
        self.second = fake_sheep.FakeSheep(self.first)
        self.addCleanup(self.second.close)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))
        # Four requests in flight, as in test_read's faults.
        self.useFixture(fixtures.MockPatchObject(
            native_read, 'IN_FLIGHT_BYTES', 4 * OBJECT))
        self.recount_fds()

    def recount_fds(self):
        """The fds open now: after a test closed a sheep of its own."""
        gc.collect()
        self.fds = open_fds()

    def assertNothingLeft(self):
        """Every connection of either sheep closed, no fd left here.

        Connections parked with requests a fake sheep never answers (a
        'stall' fault) would stay open for the transfer timeout: closed
        first, as their bound would.
        """
        for known in list(membership.MEMBERSHIPS.values()):
            known.parking.clear()
        gc.collect()
        # The store may have probed a sheep (Parked.sheep_gone): that
        # connection may still be in the fake's listen queue, and a fake
        # counts it only once accepted and closed.
        deadline = time.time() + 30
        sheep = (self.first, self.second)
        for one in sheep:
            self.assertTrue(one.accepted_all(30))
        while time.time() < deadline and any(
                one.closed_connections < len(one.connections)
                for one in sheep):
            time.sleep(0.01)
        for one in sheep:
            self.assertEqual(len(one.connections), one.closed_connections)
        if hasattr(sys, 'exc_clear'):
            sys.exc_clear()
        while self.fds != open_fds() and (
                time.time() < deadline):
            gc.collect()
            time.sleep(0.01)
        self.assertEqual(self.fds, open_fds())

    def assertFailedOver(self, old, new):
        self.assertIn('Failing over sheepdog image', self.log.output)
        self.assertIn('from 127.0.0.1:%d to 127.0.0.1:%d'
                      % (old.port, new.port), self.log.output)


class FailoverClientTestCase(FailoverTestCase):
    """A native client of the first sheep, and an upload that must work."""

    def setUp(self):
        super(FailoverClientTestCase, self).setUp()
        self.settings = FailoverSettings(self.first.port)
        self.client = client.get_client(self.settings)

    def write(self, data, size=None):
        hashes = digest()
        written = self.client.write('img', io.BytesIO(data), hashes,
                                    len(data) if size is None else size)
        self.assertEqual(len(data), written)
        self.assertEqual(hashlib.md5(data).hexdigest(),
                         hashes.hashers[0].hexdigest())
        return written

    def cut_off_upload(self, data):
        """An upload whose sheep stalls with no member left; its vid."""
        self.second.close()
        self.recount_fds()
        vid = self.first.next_vid
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 4, 'stall')
        self.assertRaises(exceptions.BackendException, self.write, data)
        self.first.reply_fault = None
        return vid
