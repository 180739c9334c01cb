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
"""Pike's in-tree driver and the native client, each reading the other's.

Needs glance_store 0.22.0's in-tree sheepdog driver, which ``tox -e
py27`` installs; elsewhere the test skips and says so.
"""

import hashlib
import io
import os

from glance_store import location

from glance_store_fastsheep import image_data
from glance_store_fastsheep.native import client as native_client
from glance_store_fastsheep.native import read as native_read
from glance_store_fastsheep import store
from glance_store_fastsheep.tests.real import test_native_client
from glance_store_fastsheep.tests.real import test_native_read

try:
    from glance_store._drivers import sheepdog as pike_sheepdog
except ImportError:
    pike_sheepdog = None

OBJECT = test_native_read.OBJECT


class PikeWrittenTest(test_native_read.NativeTestCase):

    def setUp(self):
        if pike_sheepdog is None:
            self.skipTest('needs the in-tree Pike sheepdog driver '
                          '(glance_store 0.22.0): runs on `tox -e py27`')
        super(PikeWrittenTest, self).setUp()

    def test_written_by_pike_in_tree_driver(self):
        # The cluster put its `collie` and `dog` first on PATH, where
        # Pike's driver looks for a bare `collie`.
        pike = pike_sheepdog.Store(self.store_conf())
        pike.configure(re_raise_bsc=True)
        for name, size in (('pike-small', 3 * 512),
                           ('pike-objects', 2 * OBJECT + 3 * 512)):
            data = os.urandom(size)
            pike.add(name, io.BytesIO(data), len(data))
            native = b''.join(native_read.read_range(
                test_native_read.Settings(self.cluster.port),
                self.cluster.address,
                self.cluster.port, name, 0, size))
            self.assertTrue(data == native, 'native bytes differ')
            self.assertTrue(self.cluster.check_dog('vdi', 'read', name)
                            == native, 'dog and native bytes differ')

    def test_written_natively_read_by_pike_in_tree_driver(self):
        conf = self.store_conf()
        pike = pike_sheepdog.Store(conf)
        pike.configure(re_raise_bsc=True)
        settings = test_native_client.Settings()
        settings.port = self.cluster.port
        writer = native_client.NativeClient(settings)
        for name, size in (('native-small', 3 * 512),
                           ('native-objects', 2 * OBJECT + 3 * 512)):
            data = os.urandom(size)
            writer.write(name, io.BytesIO(data),
                         image_data.Digest([hashlib.md5()], None), size)
            uri = 'sheepdog://%s:%d:%s' % (self.cluster.address,
                                           self.cluster.port, name)
            loc = location.Location('sheepdog', pike_sheepdog.StoreLocation,
                                    conf, uri=uri)
            self.assertEqual(size, pike.get_size(loc))
            stream, length = pike.get(loc)
            self.assertEqual(size, length)
            self.assertTrue(b''.join(stream) == data,
                            'Pike driver bytes differ')
            # And Pike deletes what the native client wrote.
            pike.delete(loc)
            self.assertNotIn(name, self.cluster.list_vdis())

    def test_pike_written_image_is_never_replaced(self):
        # The store names each upload's VDI for the attempt
        # (store.vdi_name): an add of the image id Pike stored under
        # writes a VDI of its own beside it, and Pike's stays as Pike
        # wrote it. (Before per-attempt names it was a Duplicate.)
        conf = self.store_conf()
        pike = pike_sheepdog.Store(conf)
        pike.configure(re_raise_bsc=True)
        data = os.urandom(OBJECT + 3)
        pike.add('img', io.BytesIO(data), len(data))
        fast = store.Store(conf)
        fast.configure(re_raise_bsc=True)
        uri = fast.add('img', io.BytesIO(b'x' * OBJECT), OBJECT)[0]
        name = uri.rsplit(':', 1)[1]
        self.assertTrue(name.startswith('img.'), uri)
        self.assertEqual(b'x' * OBJECT,
                         self.cluster.check_dog('vdi', 'read', name))
        self.assertTrue(self.cluster.check_dog('vdi', 'read', 'img') == data,
                        'bytes of the Pike-written image changed')
