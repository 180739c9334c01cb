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
"""``fastsheep-orphans`` on a generated config, through glance_store.

The VDIs are the fake ``dog``'s (one file per VDI); the native client's
listing is checked against a real ``dog vdi list`` in the real-cluster
tests (tests/real/test_listing.py).
"""

import os

import fixtures
from oslotest import base as oslo_base
import six

from glance_store_fastsheep.cmd import orphans
from glance_store_fastsheep.native import listing
from glance_store_fastsheep.tests.unit import base


class OrphansTest(oslo_base.BaseTestCase):

    def setUp(self):
        super(OrphansTest, self).setUp()
        self.dog = self.useFixture(base.FakeDog())
        self.tmp = self.useFixture(fixtures.TempDir()).path
        for name, size in (('kept', 5), ('also-kept', 7), ('lost', 11),
                           ('premitaka', 3), ('lost-too', 13)):
            with open(os.path.join(self.dog.vdi_dir, name), 'wb') as vdi:
                vdi.write(b'x' * size)
        self.conf = os.path.join(self.tmp, 'glance-api.conf')
        with open(self.conf, 'w') as conf:
            # A default store glance-api of every release starts with.
            conf.write('[glance_store]\n'
                       'stores = file,fastsheep\n'
                       'default_store = file\n'
                       'filesystem_store_datadir = %s\n'
                       'sheepdog_store_client = dog\n'
                       'sheepdog_store_address = 127.0.0.11\n'
                       % os.path.join(self.tmp, 'images'))

    def run_orphans(self, text, *args):
        out, err = six.StringIO(), six.StringIO()
        status = orphans.main(['--config-file', self.conf] + list(args),
                              stdin=six.StringIO(text), out=out, err=err)
        return status, out.getvalue(), err.getvalue()

    def test_lists_what_no_location_names(self):
        # Any address and either form counts: the names are what matter.
        status, out, err = self.run_orphans(
            'sheepdog://127.0.0.11:7000:kept\n'
            'sheepdog://127.0.0.99:7000:also-kept\n'
            'sheepdog://premitaka\n'
            'http://images.example.com/cirros.img\n')
        self.assertEqual(orphans.SOME_ORPHANS, status, err)
        self.assertEqual([
            'orphan    fastsheep lost 11',
            'orphan    fastsheep lost-too 13',
            'backend fastsheep: 5 VDI(s), 2 named by no location (24 '
            'bytes)'], out.splitlines())
        # It lists and never deletes.
        self.assertEqual(['also-kept', 'kept', 'lost', 'lost-too',
                          'premitaka'], sorted(os.listdir(self.dog.vdi_dir)))
        self.assertEqual([], [call for call in self.dog.calls()
                              if call[1:2] == ['delete']])

    def test_no_orphan(self):
        status, out, _err = self.run_orphans(
            '\n'.join('sheepdog://127.0.0.11:7000:%s' % name for name in
                      os.listdir(self.dog.vdi_dir)))
        self.assertEqual(orphans.NO_ORPHAN, status)
        self.assertEqual(['backend fastsheep: 5 VDI(s), 0 named by no '
                          'location (0 bytes)'], out.splitlines())

    def test_a_cluster_that_cannot_be_listed_is_an_error(self):
        # The store starts with a warning; the listing fails.
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_DOWN', '1'))
        status, _out, err = self.run_orphans(
            'sheepdog://127.0.0.11:7000:x\n')
        self.assertEqual(orphans.ERROR, status)
        self.assertIn('could not list the VDIs of backend fastsheep', err)

    def test_bad_input_is_an_error(self):
        status, _out, err = self.run_orphans('not a uri\n')
        self.assertEqual(orphans.ERROR, status)
        self.assertIn('bad input', err)


class VidsInUseTest(oslo_base.BaseTestCase):

    def test_bits_low_first_within_each_byte(self):
        bitmap = bytearray(listing.BITMAP_SIZE)
        for vid in (1, 7, 8, 0x7c2b25, listing.BITMAP_SIZE * 8 - 1):
            bitmap[vid // 8] |= 1 << (vid % 8)
        # VDI id 0 is never a VDI, even with its bit set.
        bitmap[0] |= 1
        self.assertEqual([1, 7, 8, 0x7c2b25, (1 << 24) - 1],
                         list(listing.vids_in_use(bitmap)))
