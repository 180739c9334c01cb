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
"""A sheep dies mid-transfer on a real 3-node cluster keeping 2 copies.

Sheep node 0 is the gateway the store talks to; nodes 1 and 2 hold
replicas. Whatever dies, a transfer either completes byte-exact or
raises a glance_store error: it is never short, never garbled, and
leaves no child process, no fd and (for uploads) no VDI behind.
"""

import hashlib

import fixtures
from glance_store import exceptions
from oslo_utils import timeutils

from glance_store_fastsheep.tests.functional import base
from glance_store_fastsheep.tests.real import base as real_base

MIB = base.MIB
SIZE = 192 * MIB + 5
TIMEOUT = 20
# What glance-api turns into an error response: glance_store's own
# errors, of which BackendException is not a GlanceStoreException.
STORE_ERRORS = (exceptions.GlanceStoreException,
                exceptions.BackendException)


def chain(first, rest):
    yield first
    for piece in rest:
        yield piece


def consume(stream):
    """(md5, length) of a stream, or the store error it raised."""
    digest = hashlib.md5()
    read = 0
    try:
        for piece in stream:
            digest.update(piece)
            read += len(piece)
    except STORE_ERRORS as exc:
        return exc
    return digest.hexdigest(), read


class KillingSource(real_base.PatternFile):
    """An upload source that runs action once after `after` bytes."""

    def __init__(self, size, after, action):
        super(KillingSource, self).__init__(size)
        self.after = after
        self.action = action

    def read(self, length=-1):
        if self.action is not None and self.position >= self.after:
            action, self.action = self.action, None
            action()
        return super(KillingSource, self).read(length)


class BrokenSource(real_base.PatternFile):
    """A request body whose client goes away after `after` bytes."""

    def __init__(self, size, after, before_error=None):
        super(BrokenSource, self).__init__(size)
        self.after = after
        self.before_error = before_error

    def read(self, length=-1):
        if self.position >= self.after:
            if self.before_error is not None:
                self.before_error()
            raise IOError('client went away')
        return super(BrokenSource, self).read(length)


class FaultTest(real_base.RealCluster, base.FunctionalTestCase):

    NODES = 3
    COPIES = 2
    READ_SIZE = MIB
    CHUNK_MIB = 16

    def setUp(self):
        super(FaultTest, self).setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))
        self.conf = self.make_conf(sheepdog_store_transfer_timeout=TIMEOUT,
                                   sheepdog_store_read_window=16)
        self.sd = self.make_store(self.conf)

    def upload(self, name='img'):
        source = real_base.PatternFile(SIZE)
        base.add(self.sd, name, source, SIZE)
        return source.md5.hexdigest()

    def get_and_kill(self, node, concurrency):
        """Read, kill `node` after the first piece, read on: the outcome.

        The outcome is (md5, length) of the whole image, or the error
        the rest of the read raised, and how long the rest took.
        """
        md5 = self.upload()
        sd = self.make_store(self.make_conf(
            sheepdog_store_transfer_timeout=TIMEOUT,
            sheepdog_store_read_window=16,
            sheepdog_store_read_concurrency=concurrency))
        stream, length = sd.get(self.location('img'))
        self.assertEqual(SIZE, length)
        iterator = iter(stream)
        first = next(iterator)
        self.sheep.kill_node(node)
        started = timeutils.now()
        outcome = consume(chain(first, iterator))
        elapsed = timeutils.now() - started
        if isinstance(outcome, tuple):
            # Completed: then whole and byte-exact, never short.
            self.assertEqual((md5, SIZE), outcome)
        self.assertNothingLeft(['img'])
        return outcome, elapsed

    def test_replica_killed_mid_download(self):
        outcome, _elapsed = self.get_and_kill(2, 1)
        # With a copy left on the other nodes the gateway serves every
        # object: the read completes.
        self.assertIsInstance(outcome, tuple, outcome)

    def test_replica_killed_mid_read_ahead(self):
        outcome, _elapsed = self.get_and_kill(2, 4)
        self.assertIsInstance(outcome, tuple, outcome)

    def test_gateway_killed_mid_download(self):
        outcome, elapsed = self.get_and_kill(0, 1)
        self.assertIsInstance(outcome, exceptions.BackendException)
        self.assertLess(elapsed, TIMEOUT)

    def test_replica_killed_mid_upload(self):
        source = KillingSource(SIZE, 40 * MIB,
                               lambda: self.sheep.kill_node(2))
        try:
            result = base.add(self.sd, 'img', source, SIZE)
        except STORE_ERRORS:
            self.assertNothingLeft()
            return
        self.assertEqual((SIZE, source.md5.hexdigest()), result[1:3])
        self.assertEqual((source.md5.hexdigest(), SIZE),
                         self.sheep.vdi_digest('img'))
        self.assertNothingLeft(['img'])

    def test_failed_upload_leaves_no_vdi(self):
        for size in (SIZE, 0):
            self.assertRaises(IOError, base.add, self.sd, 'img',
                              BrokenSource(SIZE, 40 * MIB), size)
            self.assertNothingLeft()

    def test_unreachable_cluster_names_the_vdi_left(self):
        self.assertRaises(IOError, base.add, self.sd, 'img-left',
                          BrokenSource(SIZE, 40 * MIB, self.sheep.stop),
                          SIZE)
        self.assertIn('img-left', self.log.output)
        self.assertIn('Could not delete the partial sheepdog image',
                      self.log.output)

    def test_cluster_stopped(self):
        self.upload()
        self.sheep.stop()
        where = '127.0.0.1:%d' % self.sheep.port
        for call in (lambda: self.sd.get(self.location('img')),
                     lambda: self.sd.delete(self.location('img')),
                     lambda: base.add(self.sd, 'new', b'x' * 512)):
            exc = self.assertRaises(exceptions.BackendException, call)
            self.assertIn(where, str(exc))
