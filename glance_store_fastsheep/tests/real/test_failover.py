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
"""The native client fails over on a real 3-node cluster keeping 2 copies.

Node 0 is the sheep the store is configured with and every location
names; nodes 1 and 2 are the other members, which the client learns from
the cluster (GET_NODE_LIST). Node 0 is killed (SIGKILL) or frozen
(SIGSTOP, resumed before teardown) mid-transfer: the transfer completes
byte-exact, or, where the issue allows it, fails with a glance_store
error within its bounds; nothing is left behind either way (no VDI of a
failed upload, no child process, no fd).
"""

import hashlib
import os
import signal

from glance_store import exceptions
from oslo_utils import timeutils
from testtools import content

from glance_store_fastsheep.native import failover
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import membership
from glance_store_fastsheep.native import placement
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import vdi as vdi_ops
from glance_store_fastsheep import opts
from glance_store_fastsheep.tests.functional import base
from glance_store_fastsheep.tests.real import base as real_base
from glance_store_fastsheep.tests.real import test_faults

MIB = base.MIB
SIZE = 64 * MIB + 5
TIMEOUT = 30
STALL = 2.0
# Slack for a loaded 2-core machine on top of the stall timeout.
MARGIN = 10
STORE_ERRORS = test_faults.STORE_ERRORS


class FailoverTest(real_base.NativeThreeNodes, base.FunctionalTestCase):

    STORE_OPTIONS = {'sheepdog_store_transfer_timeout': TIMEOUT,
                     'sheepdog_store_stall_timeout': STALL,
                     'sheepdog_store_failover_attempts': 6}

    def upload(self, name='img', size=SIZE):
        source = real_base.PatternFile(size)
        base.add(self.sd, name, source, size)
        return source.md5.hexdigest()

    def consume(self, stream):
        return test_faults.consume(stream)

    def freeze(self, index):
        node = self.sheep.nodes[index]
        node.kill(signal.SIGSTOP, wait=False)
        # Resumed before the cluster's own clean-up kills it.
        self.addCleanup(node.kill, signal.SIGCONT, False)

    def get_with(self, action, sd=None):
        """Read img, run action after the first piece: (outcome, secs)."""
        stream, length = (sd or self.sd).get(self.location('img'))
        self.assertEqual(SIZE, length)
        iterator = iter(stream)
        first = next(iterator)
        action()
        started = timeutils.now()
        outcome = self.consume(test_faults.chain(first, iterator))
        return outcome, timeutils.now() - started

    def assertFailedOver(self):
        self.assertIn('Failing over sheepdog image', self.log.output)
        self.assertIn('from 127.0.0.1:%d' % self.sheep.port,
                      self.log.output)

    def test_serving_sheep_killed_mid_download(self):
        md5 = self.upload()
        outcome, elapsed = self.get_with(lambda: self.sheep.kill_node(0))
        self.assertEqual((md5, SIZE), outcome)
        self.assertLess(elapsed, TIMEOUT)
        self.assertFailedOver()
        self.assertNothingLeft(['img'])

    def test_serving_sheep_killed_mid_upload(self):
        source = test_faults.KillingSource(
            SIZE, 16 * MIB, lambda: self.sheep.kill_node(0))
        result = base.add(self.sd, 'img', source, SIZE)
        self.assertEqual(SIZE, result[1])
        self.assertFailedOver()
        # Read back through the location (node 0, dead) and with dog.
        stream, _length = self.sd.get(self.location('img'))
        self.assertEqual((source.md5.hexdigest(), SIZE),
                         self.consume(stream))
        self.assertEqual(source.md5.hexdigest(), hashlib.md5(
            self.sheep.vdi_bytes('img')).hexdigest())
        self.assertNothingLeft(['img'])

    def thaw(self, index):
        self.sheep.nodes[index].kill(signal.SIGCONT, False)

    def test_placement_is_where_sheep_stores_objects(self):
        # The holders the client computes (placement.Ring over the members
        # GET_NODE_LIST names) are the sheep whose store holds the
        # object's file, for the inode and every data object.
        self.upload(size=9 * 4 * MIB + 5)
        settings = self.sd.settings
        session = failover.FailoverSession(settings, 'img')
        self.addCleanup(session.close)
        vdi = vdi_ops.look_up(session, 'img')
        members = membership.of(settings).members
        ring = placement.Ring.of(members)
        self.assertIsNotNone(ring, members)
        index = dict((node.port, node.index) for node in self.sheep.nodes)
        oids = [proto.vdi_oid(vdi.vid)] + [
            proto.data_oid(vdi.vid, number) for number in range(10)]
        computed = {}
        stored = {}
        for oid in oids:
            computed['%016x' % oid] = sorted(
                index[node[1]] for node in ring.holders(
                    oid, vdi.inode.nr_copies))
            stored['%016x' % oid] = sorted(
                node.index for node in self.sheep.nodes
                if os.path.exists(os.path.join(node.directory, 'obj',
                                               '%016x' % oid)))
        self.assertEqual(stored, computed)
        self.assertEqual(set([self.COPIES]),
                         set(len(nodes) for nodes in computed.values()))

    def test_serving_sheep_frozen_mid_download(self):
        # Default options. Each object read goes to a node holding a
        # copy: once the frozen gateway's stall timeout has passed, its
        # reads go to the other holders, whose gateways read their
        # local copies and never wait on the frozen node.
        sd = self.make_store(self.make_conf())
        md5 = self.upload()
        outcome, elapsed = self.get_with(lambda: self.freeze(0), sd)
        self.addDetail('outcome', content.text_content(
            '%.1fs after SIGSTOP: %r' % (elapsed, outcome)))
        self.assertEqual((md5, SIZE), outcome)
        self.assertLess(elapsed, opts.DEFAULT_STALL_TIMEOUT + MARGIN)
        self.assertIn('unanswered', self.log.output)
        self.assertFailedOver()
        self.thaw(0)
        self.assertNothingLeft(['img'])

    def test_serving_sheep_frozen_mid_upload(self):
        # A clear error within the overall deadline. Every gateway
        # writes the frozen node's copies too, so each one the upload
        # moves to stalls in turn, and the clean-up, which has no live
        # sheep left to ask, cannot remove the partial VDI: it stays,
        # reported in the log and marked as partial, so that glance's
        # retry of the same id replaces it.
        source = test_faults.KillingSource(SIZE, 16 * MIB,
                                           lambda: self.freeze(0))
        started = timeutils.now()
        error = None
        try:
            base.add(self.sd, 'img', source, SIZE)
        except STORE_ERRORS as exc:
            error = exc
        elapsed = timeutils.now() - started
        self.thaw(0)
        left = self.sheep.list_vdis()
        self.addDetail('outcome', content.text_content(
            '%.1fs: %r; VDIs left: %s' % (elapsed, error, left)))
        self.assertIsInstance(error, exceptions.BackendException)
        self.assertLess(elapsed, TIMEOUT + MARGIN)
        self.assertFailedOver()
        self.assertIn('Could not remove the partial sheepdog image img',
                      self.log.output)
        self.assertEqual(['img'], left)
        code, out, _err = self.sheep.dog('vdi', 'getattr', 'img',
                                         markers.PARTIAL_KEY)
        self.assertEqual(0, code)
        self.assertTrue(out.startswith(b'vdi='), out)
        self.sheep.wait_until_running()
        retry = real_base.PatternFile(SIZE)
        base.add(self.make_store(self.conf), 'img', retry, SIZE)
        self.assertEqual((retry.md5.hexdigest(), SIZE),
                         self.sheep.vdi_digest('img'))
        self.assertNothingLeft(['img'])

    def test_location_gone_for_good(self):
        # The store is configured with node 1; the location names node 0,
        # which is gone: read, size and delete go through the others.
        # Node 0 left before this store learned the members: the store
        # serves its locations only as an entry point (security.rst,
        # "Migrated clouds").
        md5 = self.upload()
        self.sheep.kill_node(0)
        conf = self.make_conf(
            sheepdog_store_port=self.sheep.nodes[1].port,
            sheepdog_store_addresses=['127.0.0.1:%d'
                                      % self.sheep.nodes[0].port],
            sheepdog_store_stall_timeout=STALL)
        sd = self.make_store(conf)
        loc = self.location('img', conf)
        self.assertEqual(SIZE, sd.get_size(loc))
        stream, _length = sd.get(loc)
        self.assertEqual((md5, SIZE), self.consume(stream))
        sd.delete(loc)
        self.assertNothingLeft()

    def test_failed_upload_leaves_no_vdi_and_a_retry_succeeds(self):
        self.assertRaises(IOError, base.add, self.sd, 'img',
                          test_faults.BrokenSource(
                              SIZE, 16 * MIB,
                              lambda: self.sheep.kill_node(0)), SIZE)
        self.assertNothingLeft()
        md5 = self.upload()
        stream, _length = self.sd.get(self.location('img'))
        self.assertEqual((md5, SIZE), self.consume(stream))
        self.assertNothingLeft(['img'])

    def test_two_nodes_lost_is_byte_exact_or_a_clear_error(self):
        # With 2 copies, two sheep lost can take both copies of an
        # object: then an error within the bounds, not a hang; whatever
        # the last sheep still serves must be the image's bytes.
        md5 = self.upload()

        def kill_two():
            self.sheep.kill_node(1)
            self.sheep.kill_node(0)
        outcome, elapsed = self.get_with(kill_two)
        self.addDetail('outcome', content.text_content(
            '%.1fs: %r' % (elapsed, outcome)))
        self.assertLess(elapsed, TIMEOUT + MARGIN)
        if isinstance(outcome, tuple):
            self.assertEqual((md5, SIZE), outcome)
        else:
            self.assertIsInstance(outcome, exceptions.BackendException)
