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

import mmap
import os

from oslotest import base
import six

from glance_store_fastsheep import readahead


class WindowsTest(base.BaseTestCase):

    def test_inner_boundaries_on_multiples(self):
        self.assertEqual([(3, 5), (8, 8), (16, 2)],
                         list(readahead.windows(3, 15, 8)))
        self.assertEqual([(0, 8)], list(readahead.windows(0, 8, 8)))
        self.assertEqual([], list(readahead.windows(5, 0, 8)))


class BufferPoolTest(base.BaseTestCase):

    def test_buffers_are_reused(self):
        pool = readahead.BufferPool(4096)
        first = pool.get()
        pool.put(first)
        self.assertIs(first, pool.get())
        self.assertIsNot(first, pool.get())

    def test_buffers_take_reads_and_give_bytes(self):
        pool = readahead.BufferPool(16)
        buffer = pool.get()
        self.assertEqual(16, len(buffer))
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        os.write(write_fd, b'0123456789')
        os.close(write_fd)
        with os.fdopen(os.dup(read_fd), 'rb', 0) as source:
            count = source.readinto(memoryview(buffer)[:12])
        self.assertEqual(10, count)
        self.assertEqual(b'0123456789', memoryview(buffer)[:count].tobytes())

    def test_python3_buffers_are_mappings_of_their_own(self):
        # Not malloc blocks: those of short-lived worker threads stay in
        # per-thread arenas after the transfer frees them.
        buffer = readahead.BufferPool(1 << 20).get()
        if six.PY3:
            self.assertIsInstance(buffer, mmap.mmap)
        else:
            self.assertIsInstance(buffer, bytearray)
