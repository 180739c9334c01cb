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
"""A partial upload's VDI on a real 3-node cluster (2 copies).

The whole cluster is made unreachable mid-upload by freezing every sheep
(SIGSTOP: connections are still accepted by the kernel, no request is
answered), so the writer's cleanup has no member to go to. Once the
sheep are resumed, the VDI is there with the ``glance_store_fastsheep
.partial`` attribute ``dog vdi getattr`` shows, and a retry of the same
image id replaces it byte-exact. Complete images, and images ``dog``
wrote (no attribute), still give Duplicate; so do Pike-written ones
(test_pike_interop_native, on `tox -e py27`).
"""

import hashlib
import io
import os
import signal
import time

from glance_store import exceptions

from glance_store_fastsheep.native import markers
from glance_store_fastsheep.tests.functional import base
from glance_store_fastsheep.tests.real import base as real_base
from glance_store_fastsheep.tests.real import test_faults


MIB = base.MIB
SIZE = 24 * MIB + 5
KEY = markers.PARTIAL_KEY


class PartialTest(real_base.NativeThreeNodes, base.FunctionalTestCase):

    STORE_OPTIONS = {'sheepdog_store_transfer_timeout': 20,
                     'sheepdog_store_stall_timeout': 1.0}

    def marker(self):
        """(exit code, value) of ``dog vdi getattr img KEY``."""
        code, out, _err = self.sheep.dog('vdi', 'getattr', 'img', KEY)
        return code, out.decode('ascii', 'replace')

    def vid(self):
        out = self.sheep.check_dog('vdi', 'list', '-r', 'img')
        return int(out.decode('utf-8').split(' ')[7], 16)

    def freeze_all(self):
        for node in self.sheep.nodes:
            node.kill(signal.SIGSTOP, wait=False)
            self.addCleanup(node.kill, signal.SIGCONT, False)

    def thaw_all(self):
        for node in self.sheep.nodes:
            node.kill(signal.SIGCONT, False)
        self.sheep.wait_until_running()

    def test_unreachable_cluster_leaves_a_marked_vdi_a_retry_replaces(self):
        source = test_faults.KillingSource(SIZE, 8 * MIB, self.freeze_all)
        self.assertRaises(exceptions.BackendException, base.add, self.sd,
                          'img', source, SIZE)
        self.thaw_all()
        self.assertIn('Could not remove the partial sheepdog image img',
                      self.log.output)
        self.assertEqual(['img'], self.sheep.list_vdis())
        old = self.vid()
        self.assertEqual((0, 'vdi=%x' % old), self.marker())
        # Glance retries in another request: a new store.
        retry = real_base.PatternFile(SIZE)
        base.add(self.make_store(self.conf), 'img', retry, SIZE)
        self.assertIn('Replacing sheepdog image img (vdi %x)' % old,
                      self.log.output)
        self.assertNotEqual(old, self.vid())
        self.assertEqual((retry.md5.hexdigest(), SIZE),
                         self.sheep.vdi_digest('img'))
        self.assertNotEqual(0, self.marker()[0])
        self.assertNothingLeft(['img'])

    def test_complete_image_stays_duplicate(self):
        source = real_base.PatternFile(2 * MIB)
        base.add(self.sd, 'img', source, 2 * MIB)
        self.assertNotEqual(0, self.marker()[0])
        self.assertRaises(exceptions.Duplicate, base.add, self.sd, 'img',
                          io.BytesIO(b'x' * MIB), MIB)
        self.assertEqual((source.md5.hexdigest(), 2 * MIB),
                         self.sheep.vdi_digest('img'))
        self.assertNothingLeft(['img'])

    def test_dog_written_image_is_never_replaced(self):
        data = os.urandom(MIB + 3)
        self.sheep.create_vdi('img', data)
        self.assertRaises(exceptions.Duplicate, base.add, self.sd, 'img',
                          io.BytesIO(b'x' * MIB), MIB)
        self.assertEqual(hashlib.md5(data).hexdigest(),
                         self.sheep.vdi_digest('img')[0])
        self.assertNothingLeft(['img'])

    def test_marker_of_a_vdi_deleted_by_hand_does_not_count(self):
        source = test_faults.KillingSource(SIZE, 8 * MIB, self.freeze_all)
        self.assertRaises(exceptions.BackendException, base.add, self.sd,
                          'img', source, SIZE)
        self.thaw_all()
        # Give the resumed sheep time to finish what the lost
        # connections had sent before the VDI is deleted.
        time.sleep(1)
        self.sheep.delete_vdi('img')
        data = os.urandom(MIB)
        self.sheep.create_vdi('img', data)
        self.assertRaises(exceptions.Duplicate, base.add, self.sd, 'img',
                          io.BytesIO(b'x' * MIB), MIB)
        self.assertEqual(hashlib.md5(data).hexdigest(),
                         self.sheep.vdi_digest('img')[0])
