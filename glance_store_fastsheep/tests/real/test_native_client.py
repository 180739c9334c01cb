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
"""The native client against sheepdog 0.9.5, 1.0.1 and master.

The same conformance round trips run once per release, each on one
1-node cluster shared by the release's tests (a VDI name per test):
native writes read back byte-exact through ``dog vdi read``, ``dog vdi
write`` images read back natively, thin images stay thin (``dog vdi
object map``), unknown sizes and empty images, the flat bound (object
size x 2^20) and a failed upload of unknown size leaving no object,
delete leaves no VDI in ``dog vdi list``, an image with snapshots is
refused and left intact, a clone is deleted and its base is not
touched. Faults (a sheep killed under a write) run on 1.0.1 only.
"""

import hashlib
import io
import os
import time

from glance_store import exceptions
from oslo_utils import units
from oslotest import base

from fastpath_integration.harness import sheepdog
from glance_store_fastsheep import image_data
from glance_store_fastsheep.native import client as native_client
from glance_store_fastsheep.native import vdi
from glance_store_fastsheep.tests import native_settings
from glance_store_fastsheep.tests.real import base as real_base

OBJECT = 4 * units.Mi


Settings = native_settings.RealClusterSettings


class Chunks(object):
    """An iterable source (a chunked upload): uneven pieces."""

    def __init__(self, data, size=300 * 1024 + 7):
        self.data = data
        self.size = size

    def __iter__(self):
        for start in range(0, len(self.data), self.size):
            yield self.data[start:start + self.size]


class ReleaseCluster(object):
    """Mixin: one 1-node cluster of RELEASE for the whole class."""

    RELEASE = None

    @classmethod
    def setUpClass(cls):
        super(ReleaseCluster, cls).setUpClass()
        cls.cluster = None
        cls.unavailable = None
        try:
            install = sheepdog.release_prefix(cls.RELEASE)
        except sheepdog.Unavailable as exc:
            cls.unavailable = str(exc)
            return
        cls.cluster = sheepdog.SheepdogCluster(1, 1, install_prefix=install)
        cls.cluster.setUp()

    @classmethod
    def tearDownClass(cls):
        if cls.cluster is not None:
            cls.cluster.cleanUp()
            cls.cluster = None
        super(ReleaseCluster, cls).tearDownClass()

    def setUp(self):
        super(ReleaseCluster, self).setUp()
        if self.cluster is None:
            if os.environ.get(real_base.REQUIRE_VARIABLE):
                self.fail('%s is set but %s' % (real_base.REQUIRE_VARIABLE,
                                                self.unavailable))
            self.skipTest(self.unavailable)
        self.settings = Settings()
        self.settings.port = self.cluster.port
        self.client = native_client.NativeClient(self.settings)
        self.name = self.id().rsplit('.', 1)[-1][:60]

    def assertSameBytes(self, expected, actual):
        # No multi-megabyte diff in a failure message.
        self.assertEqual(len(expected), len(actual))
        self.assertTrue(expected == actual, 'bytes differ')

    def put(self, name, data, size=None, source=None):
        md5 = hashlib.md5()
        if source is None:
            source = io.BytesIO(data)
        written = self.client.write(name, image_data.Source(source),
                                    image_data.Digest([md5], None),
                                    len(data) if size is None else size)
        self.assertEqual(len(data), written)
        self.assertEqual(hashlib.md5(data).hexdigest(), md5.hexdigest())

    def native(self, name, offset=0, length=None):
        if length is None:
            length = self.client.size(self.cluster.address,
                                      self.cluster.port, name) - offset
        return b''.join(self.client.read(self.cluster.address,
                                         self.cluster.port, name, offset,
                                         length))

    def object_map(self, name):
        """The object indexes ``dog vdi object map`` lists for name."""
        out = self.cluster.check_dog('vdi', 'object', 'map', name)
        return [int(line.split()[0]) for line in
                out.decode('utf-8').splitlines()[1:] if line.strip()]


class Conformance(ReleaseCluster):
    """The round trips, run once per release by the classes below."""

    def test_check(self):
        line = self.client.check()
        self.assertEqual('sheepdog 0.9' if self.RELEASE == '0.9.5'
                         else 'sheepdog 1.0 or later', line)

    def test_native_write_reads_back_through_dog(self):
        for suffix, size in (('a', 2 * OBJECT + 7 * 512), ('b', OBJECT),
                             ('c', 1)):
            name = self.name + suffix
            data = os.urandom(size)
            self.put(name, data)
            self.assertEqual(size, self.cluster.vdi_size(name))
            self.assertSameBytes(data, self.cluster.vdi_bytes(name))
            self.assertSameBytes(data, self.native(name))
            # Every object is recorded as the image's own but an all-zero
            # one, which stays a hole (os.urandom(1) is b'\0' at times).
            holes = [index for index in range(-(-size // OBJECT))
                     if not data[index * OBJECT:(index + 1) * OBJECT].strip(
                         b'\0')]
            self.assertEqual(holes, vdi.unowned_objects(
                self.settings, self.cluster.address, self.cluster.port,
                name, size))

    def test_unknown_size_and_empty(self):
        data = os.urandom(3 * OBJECT + 12345)
        self.put(self.name, data, size=0, source=Chunks(data))
        self.assertEqual(len(data), self.cluster.vdi_size(self.name))
        self.assertSameBytes(data, self.cluster.vdi_bytes(self.name))
        self.put(self.name + 'e', b'', size=0)
        self.assertEqual(0, self.cluster.vdi_size(self.name + 'e'))
        self.assertEqual(b'', self.native(self.name + 'e'))

    def data_object_files(self):
        """The data object files in the cluster's stores.

        Not inodes, nor VDI attributes (the partial marker's object stays
        when the VDI is deleted, as sheep keeps attributes by name).
        """
        found = []
        for node in self.cluster.nodes:
            store = os.path.join(node.directory, 'obj')
            found.extend(name for name in os.listdir(store)
                         if len(name) == 16 and not int(name, 16) >> 61)
        return sorted(found)

    def test_flat_bound_and_a_failed_unknown_size_upload(self):
        # Past object size x 2^20: refused before NEW_VDI.
        exc = self.assertRaises(exceptions.Invalid, self.put, self.name,
                                b'x', size=OBJECT * (1 << 20) + 1)
        self.assertIn('2^20', str(exc))
        self.assertNotIn(self.name, self.cluster.list_vdis())
        # Unknown size, failing after 3 objects: created at the flat
        # bound (its size is written only at the end), then removed with
        # every object it wrote.
        before = self.data_object_files()
        sizes = []

        def failing():
            for _count in range(3):
                yield os.urandom(OBJECT)
                sizes.append(self.cluster.vdi_size(self.name + 'f'))
            raise IOError('the client went away')

        self.assertRaises(IOError, self.put, self.name + 'f', b'', size=0,
                          source=failing())
        self.assertEqual([OBJECT << 20] * 3, sizes)
        self.assertNotIn(self.name + 'f', self.cluster.list_vdis())
        self.assertEqual(before, self.data_object_files())

    def test_thin_image_stays_thin(self):
        data = (os.urandom(OBJECT) + b'\0' * (3 * OBJECT) +
                os.urandom(1000) + b'\0' * (OBJECT - 1000) + b'\0' * 513)
        self.put(self.name, data)
        self.assertEqual([0, 4], self.object_map(self.name))
        self.assertSameBytes(data, self.cluster.vdi_bytes(self.name))

    def test_dog_written_reads_natively(self):
        data = os.urandom(2 * OBJECT + 3 * 512)
        self.cluster.create_vdi(self.name, data)
        self.assertEqual(len(data), self.client.size(
            self.cluster.address, self.cluster.port, self.name))
        self.assertSameBytes(data, self.native(self.name))
        self.assertSameBytes(data[OBJECT - 9:2 * OBJECT + 9],
                             self.native(self.name, OBJECT - 9,
                                         OBJECT + 18))

    def test_duplicate_leaves_the_image(self):
        data = os.urandom(OBJECT + 1)
        self.put(self.name, data)
        self.assertRaises(exceptions.Duplicate, self.put, self.name,
                          os.urandom(10))
        self.assertSameBytes(data, self.cluster.vdi_bytes(self.name))

    def test_delete_leaves_no_vdi(self):
        self.put(self.name, os.urandom(3 * OBJECT + 5))
        self.cluster.create_vdi(self.name + 'd', os.urandom(OBJECT + 1))
        for name in (self.name, self.name + 'd'):
            self.client.delete(self.cluster.address, self.cluster.port,
                               name)
            self.assertNotIn(name, self.cluster.list_vdis())
            self.assertFalse(self.cluster.vdi_exists(name))
            self.assertIsNone(self.client.lookup(
                self.cluster.address, self.cluster.port, name))
        self.assertRaises(exceptions.NotFound, self.client.delete,
                          self.cluster.address, self.cluster.port,
                          self.name)

    def test_snapshot_refuses_delete_and_stays_intact(self):
        data = os.urandom(2 * OBJECT)
        self.put(self.name, data)
        self.cluster.check_dog('vdi', 'snapshot', '-s', 'snap', self.name)
        self.assertRaises(exceptions.InUseByStore, self.client.delete,
                          self.cluster.address, self.cluster.port,
                          self.name)
        self.assertSameBytes(data, self.cluster.vdi_bytes(self.name))
        self.assertSameBytes(data, self.cluster.check_dog(
            'vdi', 'read', '-s', 'snap', self.name))
        # A newer snapshot deleted: the older one still counts.
        self.cluster.check_dog('vdi', 'snapshot', '-s', 'newer', self.name)
        self.cluster.check_dog('vdi', 'delete', '-s', 'newer', self.name)
        self.assertRaises(exceptions.InUseByStore, self.client.delete,
                          self.cluster.address, self.cluster.port,
                          self.name)
        # Once the snapshots are gone the image deletes as any other.
        self.cluster.check_dog('vdi', 'delete', '-s', 'snap', self.name)
        self.client.delete(self.cluster.address, self.cluster.port,
                           self.name)
        self.assertFalse(self.cluster.vdi_exists(self.name))
        self.assertNotIn(self.name, self.cluster.list_vdis())

    def test_clone_deleted_base_untouched(self):
        base_data = os.urandom(3 * OBJECT)
        base_name = self.name + 'base'
        self.put(base_name, base_data)
        self.cluster.check_dog('vdi', 'snapshot', '-s', 'snap', base_name)
        self.cluster.check_dog('vdi', 'clone', '-s', 'snap', base_name,
                               self.name)
        self.cluster.check_dog('vdi', 'write', self.name, str(OBJECT),
                               str(OBJECT), stdin=os.urandom(OBJECT))
        self.client.delete(self.cluster.address, self.cluster.port,
                           self.name)
        self.assertFalse(self.cluster.vdi_exists(self.name))
        self.assertSameBytes(base_data, self.cluster.vdi_bytes(base_name))
        self.assertSameBytes(base_data, self.cluster.check_dog(
            'vdi', 'read', '-s', 'snap', base_name))


class Conformance095Test(Conformance, base.BaseTestCase):
    RELEASE = '0.9.5'


class Conformance101Test(Conformance, base.BaseTestCase):
    RELEASE = '1.0.1'


class ConformanceMasterTest(Conformance, base.BaseTestCase):
    RELEASE = 'master'


class WriteFaultTest(real_base.RealCluster, base.BaseTestCase):
    """1.0.1, 3 nodes, 2 copies: sheep killed under a native write."""

    NODES = 3
    COPIES = 2
    SIZE = 48 * OBJECT

    def setUp(self):
        super(WriteFaultTest, self).setUp()
        self.cluster = self.make_cluster()
        self.settings = Settings()
        self.settings.port = self.cluster.port
        self.client = native_client.NativeClient(self.settings)

    def write_killing(self, node):
        """Write SIZE bytes, killing node after the first 8 MiB."""
        cluster = self.cluster
        data = os.urandom(self.SIZE)

        class Source(object):
            position = 0

            def read(self, size):
                if self.position >= 2 * OBJECT and cluster.nodes[
                        node].running:
                    cluster.kill_node(node)
                piece = data[self.position:self.position + size]
                self.position += len(piece)
                return piece

        started = time.time()
        error = None
        try:
            self.client.write('victim', Source(),
                              image_data.Digest([hashlib.md5()], None),
                              self.SIZE)
        except exceptions.BackendException as exc:
            error = exc
        return data, error, time.time() - started

    def test_non_gateway_killed_mid_write(self):
        data, error, seconds = self.write_killing(2)
        if error is None:
            # The surviving copy took every write: the image is whole.
            self.assertTrue(data == self.cluster.vdi_bytes('victim'),
                            'bytes differ')
        else:
            self.assertIn('sheep at', str(error))
            self.assertNotIn('victim', self.cluster.list_vdis())

    def test_gateway_killed_mid_write(self):
        # The writer fails over to a member the gateway named when the
        # upload began, resends what was not acknowledged: whole image.
        data, error, seconds = self.write_killing(0)
        self.assertIsNone(error)
        self.assertLess(seconds, 3 * Settings.transfer_timeout)
        self.assertTrue(data == self.cluster.vdi_bytes('victim'),
                        'bytes differ')
