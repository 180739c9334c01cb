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
"""The native reader against real sheepdog 1.0.1: conformance and faults.

Conformance: the reader's bytes equal ``dog vdi read``'s for images
written by ``dog vdi write`` and by this driver's upload (and by Pike's
in-tree driver: test_pike_interop_native), sparse images,
a clone with its own writes, a snapshot, and sizes that are not a
multiple of the object size. Faults, on 3 nodes with 2 copies: a
non-gateway sheep killed mid-read, the gateway killed mid-read, the
cluster down.
"""

import io
import os
import time

from glance_store import backend
from glance_store import exceptions
from glance_store import location
from oslo_config import cfg
from oslo_utils import units
from oslotest import base
from testtools import content

from glance_store_fastsheep.native import read as native_read
from glance_store_fastsheep import store
from glance_store_fastsheep.tests import native_settings
from glance_store_fastsheep.tests.real import base as real_base

OBJECT = 4 * units.Mi


Settings = native_settings.RealClusterSettings


class NativeTestCase(real_base.RealCluster, base.BaseTestCase):
    """A 3-node cluster keeping 2 copies, started for each test."""

    NODES = 3
    COPIES = 2

    def setUp(self):
        super(NativeTestCase, self).setUp()
        self.cluster = self.make_cluster()

    def store_conf(self):
        """[glance_store] pointed at the cluster, reading natively."""
        conf = cfg.ConfigOpts()
        conf.register_opts(backend._STORE_OPTS, group='glance_store')
        conf([], project='glance')
        store.Store(conf)
        for name, value in (
                ('sheepdog_store_port', self.cluster.port),
                ('sheepdog_store_command', self.cluster.dog_path),
                ('sheepdog_store_client', 'native'),
                # The VDIs here have short names ('fastsheep-up').
                ('sheepdog_store_serve_any_name', True)):
            conf.set_override(name, value, group='glance_store')
        return conf


class ConformanceTest(NativeTestCase):
    """Native bytes == ``dog vdi read`` bytes."""

    def native(self, name, offset=0, length=None, **kwargs):
        if length is None:
            length = self.cluster.vdi_size(name) - offset
        return b''.join(native_read.read_range(
            Settings(self.cluster.port), self.cluster.address,
            self.cluster.port, name, offset, length, **kwargs))

    def dog_read(self, name, *args):
        return self.cluster.check_dog('vdi', 'read', name, *args)

    def assertSameBytes(self, expected, actual):
        # No multi-megabyte diff in a failure message.
        self.assertEqual(len(expected), len(actual))
        self.assertTrue(expected == actual, 'bytes differ')

    def test_written_by_dog_size_not_a_multiple_of_the_object(self):
        data = os.urandom(2 * OBJECT + 7 * 512)
        self.cluster.create_vdi('dogwritten', data)
        self.assertSameBytes(self.dog_read('dogwritten'),
                             self.native('dogwritten'))
        self.assertSameBytes(data, self.native('dogwritten'))
        for offset, length in ((0, 1), (OBJECT - 5, 10),
                               (OBJECT + 3, OBJECT + 1000),
                               (len(data) - 513, 513)):
            self.assertSameBytes(
                self.dog_read('dogwritten', str(offset), str(length)),
                self.native('dogwritten', offset, length))

    def test_sparse(self):
        name = 'sparse'
        self.cluster.create_vdi(name, size=16 * OBJECT)
        self.cluster.check_dog('vdi', 'write', name, str(3 * OBJECT + 100),
                               '1000', stdin=os.urandom(1000))
        self.cluster.check_dog('vdi', 'write', name, str(13 * OBJECT),
                               str(OBJECT), stdin=os.urandom(OBJECT))
        self.assertSameBytes(self.dog_read(name), self.native(name))
        self.assertSameBytes(b'\0' * (2 * OBJECT),
                             self.native(name, 5 * OBJECT, 2 * OBJECT))

    def test_snapshot_and_clone_with_its_own_writes(self):
        base_data = os.urandom(5 * OBJECT)
        self.cluster.create_vdi('parent', base_data)
        self.cluster.check_dog('vdi', 'snapshot', '-s', 'snap1', 'parent')
        # The current VDI changes after the snapshot...
        self.cluster.check_dog('vdi', 'write', 'parent', str(OBJECT),
                               str(OBJECT), stdin=os.urandom(OBJECT))
        # ...and a clone of the snapshot writes objects of its own.
        self.cluster.check_dog('vdi', 'clone', '-s', 'snap1', 'parent',
                               'child')
        self.cluster.check_dog('vdi', 'write', 'child', str(2 * OBJECT + 9),
                               str(OBJECT), stdin=os.urandom(OBJECT))
        self.assertSameBytes(base_data, self.native('parent', 0,
                                                    len(base_data),
                                                    tag='snap1'))
        self.assertSameBytes(base_data, self.native('parent', 0,
                                                    len(base_data),
                                                    snapid=1))
        self.assertSameBytes(
            self.dog_read('parent', '-s', 'snap1'),
            self.native('parent', 0, len(base_data), tag='snap1'))
        self.assertSameBytes(self.dog_read('parent'), self.native('parent'))
        self.assertSameBytes(self.dog_read('child'), self.native('child'))
        child = self.native('child')
        self.assertSameBytes(base_data[:2 * OBJECT], child[:2 * OBJECT])
        self.assertSameBytes(base_data[4 * OBJECT:], child[4 * OBJECT:])

    def test_written_by_fastsheep_read_through_the_store(self):
        conf = self.store_conf()
        sd = store.Store(conf)
        sd.configure(re_raise_bsc=True)
        data = os.urandom(3 * OBJECT + 4096 + 512)
        result = sd.add('fastsheep-up', io.BytesIO(data), len(data))
        loc = location.Location('sheepdog', store.StoreLocation, conf,
                                uri=result[0])
        stream, length = sd.get(loc)
        self.assertEqual(len(data), length)
        got = b''.join(stream)
        self.assertSameBytes(data, got)
        # The VDI is the attempt's own: the name the location gives.
        self.assertSameBytes(self.dog_read(loc.store_location.image), got)
        stream, length = sd.get(loc, offset=OBJECT - 1, chunk_size=OBJECT)
        self.assertSameBytes(data[OBJECT - 1:2 * OBJECT - 1],
                             b''.join(stream))


class FaultTest(NativeTestCase):
    """Sheep killed under a native read: exact bytes or a clear error."""

    SIZE = 48 * OBJECT

    def setUp(self):
        super(FaultTest, self).setUp()
        self.data = os.urandom(self.SIZE)
        self.cluster.create_vdi('victim', self.data)

    def read_killing(self, node):
        """Read, kill node after the first piece; (bytes, error, seconds)."""
        got = []
        reader = native_read.read_range(
            Settings(self.cluster.port), self.cluster.address,
            self.cluster.port, 'victim', 0, self.SIZE)
        got.append(next(reader))
        self.cluster.kill_node(node)
        started = time.time()
        error = None
        try:
            for piece in reader:
                got.append(piece)
        except exceptions.BackendException as exc:
            error = exc
        finally:
            reader.close()
        received = b''.join(got)
        # Never misplaced data: whatever came is the image's prefix.
        self.assertTrue(self.data[:len(received)] == received,
                        'received bytes differ from the image')
        return received, error, time.time() - started

    def test_non_gateway_sheep_killed_mid_read(self):
        received, error, seconds = self.read_killing(2)
        self.addDetail('outcome', content.text_content(
            '%d of %d bytes in %.1fs after the kill; error: %s'
            % (len(received), self.SIZE, seconds, error)))
        if error is None:
            self.assertEqual(self.SIZE, len(received))
        else:
            self.assertLess(len(received), self.SIZE)
            self.assertIn('sheep at', str(error))

    def test_gateway_killed_mid_read(self):
        # The reader fails over to a member the gateway named when the
        # read began and carries on from the first byte not yielded.
        received, error, seconds = self.read_killing(0)
        self.assertIsNone(error)
        self.assertEqual(self.SIZE, len(received))
        self.assertLess(seconds, Settings.transfer_timeout)

    def test_cluster_down(self):
        self.cluster.stop()
        self.assertRaises(exceptions.BackendException, list,
                          native_read.read_range(
                              Settings(self.cluster.port),
                              self.cluster.address,
                              self.cluster.port, 'victim', 0, self.SIZE))
