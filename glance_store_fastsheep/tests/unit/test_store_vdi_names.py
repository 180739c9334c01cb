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
"""Per-attempt VDI names, through the store and the native client.

Each upload names its VDI ``<image id>.<16 hex digits>`` (store.vdi_name):
a VDI found under that name after a lost ``NEW_VDI`` reply is the
attempt's own and is adopted; two stores on one cluster each keep their
own copy of an image; a failed attempt's leftover never blocks a retry.
Against a fake sheep and a peer (a second member to fail over to).
"""

import hashlib
import io
import os
import re

import fixtures
from glance_store import exceptions
from glance_store import location

from glance_store_fastsheep.dog import command as dog_command
from glance_store_fastsheep.native import proto
from glance_store_fastsheep import store
from glance_store_fastsheep.tests.unit import base
from glance_store_fastsheep.tests.unit import fake_sheep
from glance_store_fastsheep.tests.unit.native import base as native_base

OBJECT = native_base.OBJECT
payload = native_base.payload
IMAGE_ID = '0d9f4cbc-2b53-4c1e-9a8e-5f0c6f1b7a21'
NAME = re.compile(r'^%s\.[0-9a-f]{16}$' % IMAGE_ID)


class VdiNamesTest(base.StoreTestCase):

    def setUp(self):
        super(VdiNamesTest, self).setUp()
        self.first = fake_sheep.FakeSheep()
        self.addCleanup(self.first.close)
        self.second = fake_sheep.FakeSheep(self.first)
        self.addCleanup(self.second.close)
        self.conf = self.make_conf(sheepdog_store_client='native',
                                   sheepdog_store_port=self.first.port,
                                   sheepdog_store_serve_any_name=False,
                                   sheepdog_store_stall_timeout=0.5,
                                   # A reset connection whose sheep still
                                   # accepts is waited for this long
                                   # before a removal (parking.Parking).
                                   sheepdog_store_transfer_timeout=2)
        self.store = self.make_store()

    def add(self, sd, data, size=None):
        result = sd.add(IMAGE_ID, io.BytesIO(data),
                        len(data) if size is None else size)
        self.assertEqual(len(data), result[1])
        self.assertEqual(hashlib.md5(data).hexdigest(), result[2])
        return result[0]

    def loc(self, uri, conf=None):
        return location.Location('sheepdog', store.StoreLocation,
                                 conf or self.conf, uri=uri,
                                 image_id=IMAGE_ID)

    def read(self, sd, uri, conf=None):
        return b''.join(sd.get(self.loc(uri, conf))[0])

    def vdi_of(self, uri):
        return uri.rsplit(':', 1)[1]

    def assertNothingOnTheCluster(self):
        self.assertEqual({}, self.first.images)
        self.assertEqual({}, self.first.objects)
        self.assertEqual({}, self.first.attrs)

    def test_upload_names_its_vdi_for_the_attempt(self):
        data = payload(3 * OBJECT + 5, seed=1)
        uri = self.add(self.store, data)
        self.assertEqual('sheepdog://127.0.0.1:%d:' % self.first.port,
                         uri[:uri.rindex(':') + 1])
        self.assertIsNotNone(NAME.match(self.vdi_of(uri)))
        self.assertEqual([(self.vdi_of(uri), 0)], list(self.first.images))
        self.assertEqual(data, self.read(self.store, uri))

    def _lost_new_vdi_reply(self, size):
        # NEW_VDI is carried out and its reply lost with the connection:
        # the resend (on the peer) answers VDI_EXIST. The VDI under the
        # attempt's own name is adopted, not failed on and left behind.
        data = payload(3 * OBJECT + 5, seed=2)
        self.first.reply_fault = (proto.OP_NEW_VDI, 1, 'reset')
        uri = self.add(self.store, data, size=size)
        self.first.reply_fault = None
        self.assertEqual(2, len([r for r in self.first.requests +
                                 self.second.requests
                                 if r[0] == proto.OP_NEW_VDI]))
        self.assertEqual([(self.vdi_of(uri), 0)], list(self.first.images))
        self.assertEqual(data, self.read(self.store, uri))
        self.store.delete(self.loc(uri))
        self.assertNothingOnTheCluster()

    def test_lost_new_vdi_reply_is_adopted(self):
        self._lost_new_vdi_reply(None)

    def test_lost_new_vdi_reply_is_adopted_unknown_size(self):
        self._lost_new_vdi_reply(0)

    def test_new_vdi_carried_out_and_answered_retryable_is_adopted(self):
        # A retryable result for a NEW_VDI sheep carried out (or a
        # forged one): resent on the same connection, it meets
        # VDI_EXIST with no failover. Adopted all the same.
        data = payload(2 * OBJECT + 3, seed=9)
        self.first.reply_fault = (proto.OP_NEW_VDI, 1, 'retryable')
        uri = self.add(self.store, data)
        self.first.reply_fault = None
        self.assertEqual([], [r for r in self.second.requests
                              if r[0] == proto.OP_NEW_VDI])
        self.assertEqual(2, len([r for r in self.first.requests
                                 if r[0] == proto.OP_NEW_VDI]))
        self.assertEqual([(self.vdi_of(uri), 0)], list(self.first.images))
        self.assertEqual(data, self.read(self.store, uri))
        self.store.delete(self.loc(uri))
        self.assertNothingOnTheCluster()

    def test_two_stores_on_one_cluster_hold_the_same_image(self):
        # glance's copy-image and an import to several stores write the
        # same image id to two backends; on one cluster each write is a
        # VDI of its own, and deleting one copy leaves the other.
        other_conf = self.make_conf(sheepdog_store_client='native',
                                    sheepdog_store_port=self.second.port,
                                    sheepdog_store_serve_any_name=False)
        other = self.make_store(other_conf)
        one_data = payload(2 * OBJECT + 7, seed=3)
        two_data = payload(3 * OBJECT + 1, seed=4)
        one = self.add(self.store, one_data)
        two = self.add(other, two_data)
        self.assertNotEqual(self.vdi_of(one), self.vdi_of(two))
        self.assertEqual(one_data, self.read(self.store, one))
        self.assertEqual(two_data, self.read(other, two, other_conf))
        self.store.delete(self.loc(one))
        self.assertEqual(two_data, self.read(other, two, other_conf))
        self.assertRaises(exceptions.NotFound, self.store.get_size,
                          self.loc(one))
        other.delete(self.loc(two, other_conf))
        self.assertNothingOnTheCluster()

    def test_failed_attempt_never_blocks_a_retry(self):
        # An attempt cut off with no member left stays, marked partial;
        # the retry of the image id is stored beside it.
        self.second.close()
        self.first.reply_fault = (proto.OP_CREATE_AND_WRITE_OBJ, 2, 'stall')
        data = payload(4 * OBJECT, seed=5)
        self.assertRaises(exceptions.BackendException, self.add, self.store,
                          data)
        self.first.reply_fault = None
        [left] = list(self.first.images)
        uri = self.add(self.store, data)
        self.assertIsNotNone(NAME.match(left[0]))
        self.assertNotEqual(left[0], self.vdi_of(uri))
        self.assertEqual(data, self.read(self.store, uri))
        self.assertIn(left, self.first.images)

    def test_name_policy_serves_the_suffix_this_driver_writes(self):
        self.first.add_image(IMAGE_ID, b'old' * 100)
        suffixed = IMAGE_ID + '.0123456789abcdef'
        self.first.add_image(suffixed, b'new' * 100)
        prefix = 'sheepdog://127.0.0.1:%d:' % self.first.port
        self.assertEqual(300, self.store.get_size(self.loc(prefix +
                                                           IMAGE_ID)))
        self.assertEqual(300, self.store.get_size(self.loc(prefix +
                                                           suffixed)))
        # Without the image id glance passes, a UUID with the suffix.
        bare = location.Location('sheepdog', store.StoreLocation,
                                 self.conf, uri=prefix + suffixed)
        self.assertEqual(300, self.store.get_size(bare))
        other_id = 'a1b2c3d4-0000-4000-8000-000000000000'
        for name in (IMAGE_ID + '.0123456789ABCDEF',
                     IMAGE_ID + '.0123456789abcde',
                     IMAGE_ID + '.0123456789abcdef0',
                     IMAGE_ID + '.0123456789abcdef.0123456789abcdef',
                     IMAGE_ID + '-0123456789abcdef',
                     IMAGE_ID + '.snapshot',
                     other_id + '.0123456789abcdef',
                     'volume-' + suffixed):
            self.first.add_image(name, b'x')
            self.assertRaises(exceptions.BadStoreUri, self.store.get_size,
                              self.loc(prefix + name))
        for name in ('volume-' + suffixed, IMAGE_ID + '.snapshot',
                     IMAGE_ID + '.0123456789abcdef.0123456789abcdef'):
            bare = location.Location('sheepdog', store.StoreLocation,
                                     self.conf, uri=prefix + name)
            self.assertRaises(exceptions.BadStoreUri, self.store.get_size,
                              bare)

    def test_adoption_wants_what_new_vdi_makes(self):
        # A caller of the client that reuses a name: a VDI with data
        # found after a lost reply is not taken for its own.
        old = payload(3 * OBJECT, seed=6)
        vid = self.first.add_image('img', old).vid
        self.first.reply_fault = (proto.OP_NEW_VDI, 1, 'reset')
        exc = self.assertRaises(
            exceptions.Duplicate, self.store.client.write, 'img',
            io.BytesIO(payload(3 * OBJECT, seed=7)), None, 3 * OBJECT)
        self.assertIn('is not the empty VDI the resent NEW_VDI', str(exc))
        self.assertEqual(vid, self.first.images['img', 0].vid)
        self.assertEqual(old, self.first.image_bytes('img'))
        self.assertEqual({}, self.first.attrs)


class DogVdiNamesTest(base.StoreTestCase):
    """The dog client: one store behaviour, the same names."""

    def setUp(self):
        super(DogVdiNamesTest, self).setUp()
        self.conf = self.make_conf(sheepdog_store_serve_any_name=False)
        self.store = self.make_store()
        real_check = dog_command.DogCommand.check
        self.lost = []
        self.refused = []

        def check(dog, action, *args):
            if action == 'create' and self.refused:
                # Failed, nothing created.
                raise exceptions.BackendException(self.refused.pop())
            out = real_check(dog, action, *args)
            if action == 'create' and self.lost:
                # Done, but dog's reply from sheep was lost.
                raise exceptions.BackendException(self.lost.pop())
            return out

        self.useFixture(fixtures.MockPatchObject(
            dog_command.DogCommand, 'check', check))

    def add(self, data, size=None):
        return self.store.add(IMAGE_ID, io.BytesIO(data),
                              len(data) if size is None else size)[0]

    def test_upload_names_its_vdi_for_the_attempt(self):
        uri = self.add(b'data')
        name = uri.rsplit(':', 1)[1]
        self.assertIsNotNone(NAME.match(name))
        self.assertEqual([name], self.dog.vdis())

    def test_failed_create_that_created_is_adopted(self):
        # `dog vdi create` exits non-zero although sheep created the VDI
        # (its reply lost): the attempt's own name finds it, adopted.
        self.lost.append('sheepdog `vdi create` failed: Failed to read '
                         'from the sheep')
        for size in (None, 0):
            data = payload(100 * 1024 + 11, seed=8)
            uri = self.add(data, size)
            name = uri.rsplit(':', 1)[1]
            loc = location.Location('sheepdog', store.StoreLocation,
                                    self.conf, uri=uri, image_id=IMAGE_ID)
            self.assertEqual(data, b''.join(self.store.get(loc)[0]))
            self.store.delete(loc)
            self.assertNotIn(name, self.dog.vdis())
        self.assertEqual([], self.dog.vdis())
        self.assertEqual([], self.lost)

    def test_failed_create_that_created_nothing_fails(self):
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_DOWN', '1'))
        self.assertRaises(exceptions.BackendException, self.add, b'data')
        self.assertEqual([], self.dog.vdis())

    def test_existing_name_is_neither_adopted_nor_deleted(self):
        # A caller of the client reusing a name: dog sends NEW_VDI once,
        # so VDI_EXIST means the VDI was there before; it stays.
        self.dog.put('img', b'original')
        self.assertRaises(exceptions.Duplicate, self.store.client.write,
                          'img', io.BytesIO(b'other'), None, 5)
        self.refused.append('sheepdog `vdi create` failed: Failed to '
                            'connect')
        self.assertRaises(exceptions.BackendException,
                          self.store.client.write, 'img',
                          io.BytesIO(b'other'), None, 5)
        self.assertEqual(['img'], self.dog.vdis())
        with open(os.path.join(self.dog.vdi_dir, 'img'), 'rb') as vdi:
            self.assertEqual(b'original', vdi.read())
