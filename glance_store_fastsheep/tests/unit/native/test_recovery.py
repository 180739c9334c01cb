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
"""An upload during which the members changed (native/recovery.py).

The fake cluster models what a real 1.0.1 cluster did in the fault
campaign: when a member changes, recovery reads every inode and, when it
ends, writes that copy back, losing what the upload wrote to its inode
meanwhile. The upload must leave an inode that names every object once
recovery is over, or fail and leave nothing.
"""

import hashlib
import os

from glance_store import exceptions

from glance_store_fastsheep.native import membership
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.tests.unit.native import base as native_base

OBJECT = native_base.OBJECT


def md5(data):
    return hashlib.md5(data).hexdigest()


class RecoveryTest(native_base.FailoverClientTestCase):

    def stat_recoveries(self):
        return [r for r in self.first.requests + self.second.requests
                if r[0] == proto.OP_STAT_RECOVERY]

    def upload_during_recovery(self, size=None):
        data = os.urandom(6 * OBJECT + 5)
        self.first.recover_at = (2, 0.5)
        self.write(data, size)
        # What a reader finds once recovery is over.
        self.assertTrue(self.first.recovered.wait(10))
        # The size first: an unknown size's VDI is created at the flat
        # bound (2^20 objects), too large to read back here.
        self.assertEqual(len(data), self.first.images[('img', 0)].size)
        self.assertEqual(md5(data), md5(self.first.image_bytes('img')))
        self.assertNotEqual([], self.stat_recoveries())
        self.assertIn('rewriting its inode once no member recovers',
                      self.log.output)
        self.assertNothingLeft()

    def test_entries_recovery_overwrote_are_written_again(self):
        self.upload_during_recovery()

    def test_size_recovery_overwrote_is_written_again(self):
        self.upload_during_recovery(size=0)

    def test_no_member_change_asks_nothing(self):
        data = os.urandom(3 * OBJECT + 1)
        self.write(data)
        self.assertEqual(md5(data), md5(self.first.image_bytes('img')))
        self.assertEqual([], self.stat_recoveries())
        self.assertNothingLeft()

    def test_recovery_past_the_transfer_timeout_fails_the_upload(self):
        self.settings.transfer_timeout = 1.0
        self.first.recover_at = (2, 30)
        error = self.assertRaises(exceptions.BackendException, self.write,
                                  os.urandom(4 * OBJECT))
        self.assertIn('still recover objects', str(error))
        self.assertEqual([], [name for name, _snap in self.first.images])
        self.assertEqual({}, self.first.objects)
        self.assertEqual({}, self.first.attrs)
        self.assertNothingLeft()

    def test_a_sheep_version_changed_since_it_was_learned(self):
        # The internal protocol version is learned once per cluster: a
        # cluster upgraded (or rolled back) since still has its
        # recovery state asked in the version it now speaks.
        self.write(os.urandom(OBJECT))
        known = membership.of(self.settings)
        self.assertEqual(self.first.sheep_version, known.sheep_version)
        self.client.delete('127.0.0.1', self.first.port, 'img')
        self.first.sheep_version = self.second.sheep_version = 0x09
        self.upload_during_recovery()
        self.assertEqual(0x09, known.sheep_version)

    def test_a_member_behind_the_epoch_counts_as_recovering(self):
        # The second member answers in the epoch before the change: it
        # has not started the recovery the change brings, so nothing is
        # rewritten while it may still overwrite; past the transfer
        # timeout the upload fails and is removed.
        self.settings.transfer_timeout = 1.0
        self.first.recover_at = (2, 0.1)
        self.second.lagging_epoch = self.first.epoch
        error = self.assertRaises(exceptions.BackendException, self.write,
                                  os.urandom(4 * OBJECT))
        self.assertIn('still recover objects', str(error))
        self.assertIn('127.0.0.1:%d' % self.second.port, str(error))
        self.assertEqual([], [name for name, _snap in self.first.images])
        self.assertNothingLeft()


class DeleteDuringRecoveryTest(native_base.FailoverClientTestCase):
    """A delete during which the members changed.

    Fault campaign seed 2364190377: a sheep killed at the delete's first
    REMOVE_OBJ left objects of the deleted image on a live sheep.
    """

    def test_objects_recovery_copied_back_are_removed_again(self):
        data = os.urandom(4 * OBJECT + 1)
        self.write(data)
        self.assertEqual(5, len(self.first.objects))
        # Recovery copies every object as it was at the first removal
        # and writes back, when it ends, those removed meanwhile.
        self.first.recover_at_remove = (1, 0.5)
        self.client.delete('127.0.0.1', self.first.port, 'img')
        self.assertTrue(self.first.recovered.wait(10))
        self.assertEqual([], [name for name, _snap in self.first.images])
        self.assertEqual({}, self.first.objects)
        self.assertEqual({}, self.first.attrs)
        self.assertIn('removing its objects again once no member '
                      'recovers', self.log.output)
        self.assertNothingLeft()

    def test_recovery_past_the_transfer_timeout_fails_the_delete(self):
        self.write(os.urandom(2 * OBJECT))
        self.settings.transfer_timeout = 1.0
        self.first.recover_at_remove = (1, 30)
        error = self.assertRaises(
            exceptions.BackendException, self.client.delete, '127.0.0.1',
            self.first.port, 'img')
        self.assertIn('still recover objects', str(error))
        # Left marked deleting: its reads fail, a retried delete ends it.
        self.assertEqual(['img'], [name for name, _snap in self.first.images])
        self.assertNothingLeft()
