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
"""Images written by either driver read back through the other.

The in-tree Pike driver (glance_store 0.22.0) exists only in ``tox -e
pike``; glance_store removed it in Ussuri. On Python 3 it has two known
bugs that are not interoperability questions: ``processutils.execute``
decodes image bytes as text unless ``binary=True`` (forced here for its
``vdi read`` calls, as the benchmark does), and its iterator ends with
``raise StopIteration()``, a RuntimeError since Python 3.7 (PEP 479),
raised only after the last byte, which ``pike_read`` tolerates.
"""

import io
import os

import fixtures
from glance_store import location

from glance_store_fastsheep.tests.functional import base

try:
    from glance_store._drivers import sheepdog as pike_sheepdog
except ImportError:
    pike_sheepdog = None

READ = base.FunctionalTestCase.READ_SIZE
CHUNK = base.FunctionalTestCase.CHUNK_MIB * base.MIB


class PikeInteropTest(base.FunctionalTestCase):

    def setUp(self):
        if pike_sheepdog is None:
            self.skipTest('needs the in-tree Pike sheepdog driver '
                          '(glance_store 0.22.0): run `tox -e pike`')
        super(PikeInteropTest, self).setUp()
        real_execute = pike_sheepdog.processutils.execute

        def execute(*cmd, **kwargs):
            if 'read' in cmd:
                kwargs['binary'] = True
            return real_execute(*cmd, **kwargs)

        self.useFixture(fixtures.MockPatchObject(
            pike_sheepdog.processutils, 'execute', execute))
        # Same [glance_store] options: the in-tree driver reads the
        # address, port and chunk size fastsheep was configured with.
        self.pike = pike_sheepdog.Store(self.conf)
        self.pike.configure(re_raise_bsc=True)

    def pike_location(self, uri):
        return location.Location('sheepdog', pike_sheepdog.StoreLocation,
                                 self.conf, uri=uri)

    def pike_read(self, uri):
        stream, size = self.pike.get(self.pike_location(uri))
        pieces = []
        iterator = iter(stream)
        while True:
            try:
                pieces.append(next(iterator))
            except StopIteration:
                break
            except RuntimeError as exc:
                # PEP 479: Pike's trailing `raise StopIteration()`.
                self.assertIn('StopIteration', str(exc))
                break
        data = b''.join(pieces)
        self.assertEqual(size, len(data))
        return data

    def test_fastsheep_writes_pike_reads(self):
        for size in (1, READ + 1, CHUNK + READ + 3):
            data = os.urandom(size)
            name = 'fast-%d' % size
            uri = base.add(self.sd, name, data)[0]
            self.assertEqual(size, self.pike.get_size(
                self.pike_location(uri)))
            self.assertEqual(data, self.pike_read(uri))
            self.pike.delete(self.pike_location(uri))
        self.assertNothingLeft()

    def test_pike_writes_fastsheep_reads(self):
        for size, announce in ((1, True), (CHUNK + READ + 3, True),
                               (CHUNK + 5, False)):
            data = os.urandom(size)
            name = 'pike-%d-%s' % (size, announce)
            result = self.pike.add(name, io.BytesIO(data),
                                   size if announce else 0)
            uri = result[0]
            self.assertEqual('sheepdog://127.0.0.1:%d:%s'
                             % (self.sheep.port, name), uri)
            loc = self.location(uri)
            self.assertEqual(uri, loc.store_location.get_uri())
            self.assertEqual(size, self.sd.get_size(loc))
            self.assertEqual(data, self.read_all(name))
            self.assertEqual(data[3:READ + 4],
                             self.read_all(name, min(3, size), READ + 1))
            self.sd.delete(loc)
        self.assertNothingLeft()

    def test_same_checksum_for_same_bytes(self):
        data = os.urandom(CHUNK + 1)
        pike = self.pike.add('by-pike', io.BytesIO(data), len(data))
        fast = base.add(self.sd, 'by-fast', data)
        self.assertEqual(pike[1:3], fast[1:3])
        self.assertEqual(self.sheep.vdi_bytes('by-pike'),
                         self.sheep.vdi_bytes('by-fast'))

    def test_pre_mitaka_location(self):
        data = os.urandom(READ)
        self.pike.add('old', io.BytesIO(data), len(data))
        self.assertEqual(data, b''.join(self.sd.get(
            self.location('sheepdog://old'))[0]))
