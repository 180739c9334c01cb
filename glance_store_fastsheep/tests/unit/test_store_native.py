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
"""The store with the native client, against a fake sheep.

These drive ``store.py`` through ``client.get_client``; the native
client's own operations are tested in native/test_write,
native/test_vdi and native/test_read.
"""

import fixtures
from glance_store import exceptions

from glance_store_fastsheep import store
from glance_store_fastsheep.tests.functional import base as functional_base
from glance_store_fastsheep.tests.unit import base as unit_base
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base

OBJECT = native_base.OBJECT
SUFFIX = '.0123456789abcdef'
NAME = 'img' + SUFFIX
payload = native_base.payload


class StoreNativeTest(native_base.FdsClosedMixin,
                      unit_base.StoreTestCase):
    """``sheepdog_store_client = native`` through Store.get."""

    def setUp(self):
        super(StoreNativeTest, self).setUp()
        self.sheep = fake_sheep.FakeSheep()
        self.addCleanup(self.sheep.close)
        self.data = payload(5 * OBJECT + 512, seed=12)
        self.sheep.add_image('img', self.data)
        self.conf = self.make_conf(sheepdog_store_client='native',
                                   sheepdog_store_port=self.sheep.port)
        self.store = self.make_store()
        self.loc = self.location('sheepdog://127.0.0.1:%d:img'
                                 % self.sheep.port)

    def test_get_reads_natively(self):
        stream, length = self.store.get(self.loc)
        self.assertEqual(len(self.data), length)
        self.assertEqual(self.data, b''.join(stream))
        # The size lookup too: no dog call at all.
        self.assertEqual([], self.dog.calls())
        self.assertTrue(self.sheep.requests)

    def test_get_size_natively(self):
        self.assertEqual(len(self.data), self.store.get_size(self.loc))
        self.assertEqual([], self.dog.calls())

    def test_get_range(self):
        stream, length = self.store.get(self.loc, offset=OBJECT + 1,
                                        chunk_size=2 * OBJECT)
        self.assertEqual(self.data[OBJECT + 1:3 * OBJECT + 1],
                         b''.join(stream))

    def test_closed_stream_closes_its_socket(self):
        self.count_fds()
        stream, _length = self.store.get(self.loc)
        iterator = iter(stream)
        next(iterator)
        stream.close()
        self.assertFdsClosed()


class UploadCheckTest(unit_base.StoreTestCase):
    """An upload whose objects sheep did not all record is not stored.

    The fake dog stores the bytes; the fake sheep, on the same port,
    answers the object-table check (Store._check_object_table).
    """

    def setUp(self):
        super(UploadCheckTest, self).setUp()
        self.sheep = fake_sheep.FakeSheep()
        self.addCleanup(self.sheep.close)
        self.data = payload(3 * OBJECT + 512, seed=13)
        self.conf = self.make_conf(sheepdog_store_port=self.sheep.port)
        self.store = self.make_store()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))
        # The attempt's name known in advance, for the fake sheep's table.
        self.useFixture(fixtures.MockPatchObject(
            store, 'vdi_name', lambda image_id: image_id + SUFFIX))

    def test_every_object_recorded(self):
        self.sheep.add_image(NAME, self.data)
        self.assertEqual(len(self.data),
                         functional_base.add(self.store, 'img', self.data)[1])
        self.assertEqual([NAME], self.dog.vdis())

    def test_lost_record_fails_the_upload_and_deletes_it(self):
        # Object 2 as sheep's table has it after a lost inode update.
        lost = self.data[:2 * OBJECT] + b'\0' * OBJECT + self.data[3 * OBJECT:]
        self.sheep.add_image(NAME, lost)
        exc = self.assertRaises(exceptions.BackendException,
                                functional_base.add, self.store, 'img',
                                self.data)
        self.assertIn('lost the record of 1 object(s) of image %s '
                      '(indexes 2)' % NAME, str(exc))
        self.assertEqual([], self.dog.vdis())
        self.assertIn('Deleted the partial sheepdog image %s' % NAME,
                      self.log.output)

    def test_unreachable_sheep_is_logged(self):
        self.sheep.close()
        self.assertEqual(len(self.data),
                         functional_base.add(self.store, 'img', self.data)[1])
        self.assertIn('Stored image %s without checking its object table'
                      % NAME, self.log.output)
