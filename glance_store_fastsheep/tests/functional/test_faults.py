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
"""Every fault ends in the expected error and leaves nothing behind."""

import os

import fixtures
from glance_store import capabilities
from glance_store import exceptions

from glance_store_fastsheep.tests.functional import base

READ = base.FunctionalTestCase.READ_SIZE
CHUNK = base.FunctionalTestCase.CHUNK_MIB * base.MIB


class ConfigFaultTest(base.FunctionalTestCase):

    def test_cli_missing(self):
        conf = self.make_conf(sheepdog_store_command='/nonexistent/dog')
        sd = self.make_store(conf, configure=False)
        exc = self.assertRaises(exceptions.BadStoreConfiguration,
                                sd.configure, re_raise_bsc=True)
        self.assertIn('/nonexistent/dog', str(exc))
        sd.configure()
        self.assertFalse(sd.is_capable(capabilities.BitMasks.WRITE_ACCESS))
        self.assertRaises(exceptions.StoreAddDisabled, base.add, sd, 'img',
                          b'data')
        self.assertNothingLeft()

    def test_cluster_down_at_start_up(self):
        # A warning since issue 36, not BadStoreConfiguration: nothing
        # is disabled, and the store serves once the cluster is back.
        log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))
        self.sheep.stop()
        sd = self.make_store(self.make_conf(), configure=False)
        sd.configure(re_raise_bsc=True)
        self.assertIn('does not serve yet', log.output)
        self.assertIn('Connection refused', log.output)
        self.assertTrue(sd.is_capable(capabilities.BitMasks.WRITE_ACCESS))
        self.sheep.start()
        self.sheep.create_vdi('img', b'back')
        self.assertEqual(b'back', b''.join(sd.get(self.location('img'))[0]))
        base.add(sd, 'img2', b'new')
        self.assertEqual(b'new', b''.join(sd.get(self.location('img2'))[0]))
        self.assertNothingLeft(['img', 'img2'])


class TransferFaultTest(base.FunctionalTestCase):

    def test_cluster_down_on_add(self):
        self.sheep.stop()
        exc = self.assertRaises(exceptions.BackendException, base.add,
                                self.sd, 'img', os.urandom(READ))
        self.assertIn('Connection refused', str(exc))
        self.sheep.start()
        self.assertNothingLeft()

    def test_cluster_down_on_get(self):
        self.sheep.create_vdi('img', os.urandom(READ))
        self.sheep.stop()
        self.assertRaises(exceptions.BackendException, self.sd.get,
                          self.location('img'))
        self.sheep.start()
        self.assertNothingLeft(['img'])

    def test_cluster_gone_mid_download(self):
        self.sheep.create_vdi('img', os.urandom(2 * CHUNK))
        stream, _length = self.sd.get(self.location('img'))
        self.sheep.stop()
        self.assertRaises(exceptions.BackendException, b''.join, stream)
        self.sheep.start()
        self.assertNothingLeft(['img'])

    def test_mid_stream_read_failure(self):
        data = os.urandom(2 * CHUNK)
        self.sheep.create_vdi('img', data)
        self.sheep.set_knobs(fail_after_bytes=CHUNK + 5)
        stream, _length = self.sd.get(self.location('img'))
        received = []
        exc = self.assertRaises(exceptions.BackendException,
                                lambda: received.extend(stream))
        self.assertIn('I/O error', str(exc))
        # What was yielded before the failure is a true prefix, no more.
        got = b''.join(received)
        self.assertLessEqual(len(got), CHUNK + 5)
        self.assertEqual(data[:len(got)], got)
        self.assertNothingLeft(['img'])

    def test_short_output_is_not_a_short_image(self):
        data = os.urandom(CHUNK)
        self.sheep.create_vdi('img', data)
        self.sheep.set_knobs(short_bytes=CHUNK - 1)
        stream, _length = self.sd.get(self.location('img'))
        exc = self.assertRaises(exceptions.BackendException, b''.join,
                                stream)
        self.assertIn('%d of %d' % (CHUNK - 1, CHUNK), str(exc))
        self.assertNothingLeft(['img'])

    def test_failed_write_deletes_partial_vdi(self):
        # Each `vdi write` call fails half-way through its chunk.
        self.sheep.set_knobs(fail_after_bytes=CHUNK // 2 + 3)
        for size in (3 * CHUNK, 0):
            exc = self.assertRaises(exceptions.BackendException, base.add,
                                    self.sd, 'img', os.urandom(3 * CHUNK),
                                    size)
            self.assertIn('I/O error', str(exc))
            self.assertNothingLeft()

    def test_every_write_fails(self):
        self.sheep.set_knobs(fail_ops=['write'])
        self.assertRaises(exceptions.BackendException, base.add, self.sd,
                          'img', os.urandom(2 * CHUNK))
        self.assertNothingLeft()

    def test_failed_create(self):
        self.sheep.set_knobs(fail_ops=['create'])
        self.assertRaises(exceptions.BackendException, base.add, self.sd,
                          'img', os.urandom(READ))
        self.assertNothingLeft()

    def test_failed_resize_of_unknown_size(self):
        self.sheep.set_knobs(fail_ops=['resize'])
        self.assertRaises(exceptions.BackendException, base.add, self.sd,
                          'img', os.urandom(CHUNK + 1), 0)
        self.assertNothingLeft()

    def test_source_error_deletes_partial_vdi(self):
        class Cap(Exception):
            pass

        class Reader(object):
            given = 0

            def read(self, size):
                if self.given >= 2 * CHUNK:
                    raise Cap('image size limit exceeded')
                self.given += size
                return b'x' * size

        for size in (4 * CHUNK, 0):
            self.assertRaises(Cap, base.add, self.sd, 'img', Reader(), size)
            self.assertNothingLeft()

    def test_duplicate_keeps_the_original(self):
        self.sheep.create_vdi('img', b'original')
        self.assertRaises(exceptions.Duplicate, base.add, self.sd, 'img',
                          b'other')
        self.assertEqual(b'original', self.sheep.vdi_bytes('img'))
        self.assertNothingLeft(['img'])

    def test_missing_vdi(self):
        loc = self.location('nothing')
        self.assertRaises(exceptions.NotFound, self.sd.get, loc)
        self.assertRaises(exceptions.NotFound, self.sd.get_size, loc)
        self.assertRaises(exceptions.NotFound, self.sd.delete, loc)
        self.assertEqual([], self.sheep.calls('delete'))
        self.assertNothingLeft()

    def test_early_close_kills_and_reaps(self):
        self.sheep.create_vdi('img', os.urandom(4 * CHUNK))
        stream, _length = self.sd.get(self.location('img'))
        iterator = iter(stream)
        next(iterator)
        self.assertEqual(1, len(base.children()))
        stream.close()
        self.assertNothingLeft(['img'])

    def test_dropped_iterator_kills_and_reaps(self):
        self.sheep.create_vdi('img', os.urandom(4 * CHUNK))
        stream, _length = self.sd.get(self.location('img'))
        next(iter(stream))
        del stream
        self.assertNothingLeft(['img'])
