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

import fcntl
import os
import threading

from oslotest import base

from glance_store_fastsheep.dog import pipe
from glance_store_fastsheep import hub_safe
from glance_store_fastsheep.tests.compat import mock


# The Linux value; Python < 3.10 has no name for it.
F_GETPIPE_SZ = getattr(fcntl, 'F_GETPIPE_SZ', 1032)


class PipeSizeTest(base.BaseTestCase):

    def _pipe(self):
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        self.addCleanup(os.close, write_fd)
        return read_fd

    def test_enlarged(self):
        read_fd = self._pipe()
        pipe.set_pipe_size(read_fd, 256 * 1024)
        self.assertEqual(256 * 1024, fcntl.fcntl(read_fd, F_GETPIPE_SZ))

    def test_zero_keeps_kernel_default(self):
        read_fd = self._pipe()
        before = fcntl.fcntl(read_fd, F_GETPIPE_SZ)
        pipe.set_pipe_size(read_fd, 0)
        self.assertEqual(before, fcntl.fcntl(read_fd, F_GETPIPE_SZ))

    def test_refusal_keeps_kernel_size_and_warns_once(self):
        read_fd = self._pipe()
        other_fd = self._pipe()
        before = fcntl.fcntl(read_fd, F_GETPIPE_SZ)
        with mock.patch.object(pipe, '_refusal_logged', []), \
                mock.patch.object(pipe.LOG, 'warning') as warning:
            # Over the kernel's 2 GiB limit: refused (EINVAL) even for
            # root; no raise, the pipe keeps its size, and one warning
            # per process.
            pipe.set_pipe_size(read_fd, (1 << 31) + 1)
            pipe.set_pipe_size(other_fd, (1 << 31) + 1)
        self.assertEqual(before, fcntl.fcntl(read_fd, F_GETPIPE_SZ))
        self.assertEqual(1, warning.call_count)


class ReaderTest(base.BaseTestCase):

    def _pipe(self):
        read_fd, write_fd = os.pipe()
        self.addCleanup(self._close, write_fd)
        return read_fd, write_fd

    def _close(self, fd):
        try:
            os.close(fd)
        except OSError:
            pass

    def test_fills_whole_buffer_across_writes(self):
        read_fd, write_fd = self._pipe()
        reader = pipe.PipeReader(read_fd, 8, idle_timeout=5)
        self.addCleanup(reader.close)
        os.write(write_fd, b'abc')
        feeder = threading.Timer(0.05, os.write, (write_fd, b'defghij'))
        feeder.start()
        self.addCleanup(feeder.join)
        count, _waited = reader.fill(8)
        self.assertEqual(8, count)
        self.assertEqual(b'abcdefgh', reader.view[:count].tobytes())

    def test_short_at_eof(self):
        read_fd, write_fd = self._pipe()
        reader = pipe.PipeReader(read_fd, 8, idle_timeout=5)
        self.addCleanup(reader.close)
        os.write(write_fd, b'xyz')
        os.close(write_fd)
        self.assertEqual(3, reader.fill(8)[0])
        self.assertEqual(0, reader.fill(8)[0])

    def test_idle_timeout(self):
        read_fd, _write_fd = self._pipe()
        reader = pipe.PipeReader(read_fd, 8, idle_timeout=0.2)
        self.addCleanup(reader.close)
        self.assertRaises(hub_safe.Timeout, reader.fill, 8)

    def test_waits_only_for_an_empty_pipe(self):
        # A reader that keeps up with the child makes one read per piece;
        # a poll (or trampoline) comes only after a read found nothing.
        read_fd, write_fd = self._pipe()
        reader = pipe.PipeReader(read_fd, 8, idle_timeout=1)
        self.addCleanup(reader.close)
        flags = fcntl.fcntl(read_fd, fcntl.F_GETFL)
        self.assertTrue(flags & os.O_NONBLOCK)
        os.write(write_fd, b'12345678')
        with mock.patch.object(hub_safe, 'wait_fd',
                               side_effect=hub_safe.wait_fd) as wait_fd:
            self.assertEqual((8, False), reader.fill(8))
            self.assertEqual(0, wait_fd.call_count)
            timer = threading.Timer(0.05, os.write, (write_fd, b'abcdefgh'))
            timer.start()
            self.addCleanup(timer.join)
            self.assertEqual((8, True), reader.fill(8))
            self.assertEqual(1, wait_fd.call_count)


class WriterTest(base.BaseTestCase):

    def _writer(self, green):
        """(read fd, PipeWriter) of a new pipe, made in the given mode."""
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        with mock.patch.object(hub_safe, 'is_green', return_value=green):
            writer = pipe.PipeWriter(write_fd, idle_timeout=5)
        self.addCleanup(writer.close)
        return read_fd, writer

    def test_large_write_through_small_pipe(self):
        read_fd, write_fd = os.pipe()
        writer = pipe.PipeWriter(write_fd, idle_timeout=5)
        self.addCleanup(writer.close)
        data = os.urandom(3 * 1024 * 1024 + 7)
        received = []

        def drain():
            with os.fdopen(read_fd, 'rb') as source:
                received.append(source.read())

        thread = threading.Thread(target=drain)
        thread.start()
        # Whether it had to wait depends on how fast the thread drains:
        # what matters is that every byte arrived, in order.
        writer.write(data)
        writer.close()
        thread.join()
        self.assertEqual(data, received[0])

    def test_green_partial_writes_give_way_between_them(self):
        # A child that drains the pipe as fast as it fills never makes
        # write() see EAGAIN: under eventlet each partial write must let
        # the hub run, or one piece holds every other request.
        read_fd, writer = self._writer(green=True)
        written = []

        class Trickle(object):
            closed = False

            def write(self, view):
                piece = memoryview(view)[:1000].tobytes()
                written.append(piece)
                return len(piece)

            def close(self):
                self.closed = True

        real_file, writer._file = writer._file, Trickle()
        self.addCleanup(real_file.close)
        data = os.urandom(4500)
        with mock.patch.object(hub_safe, 'give_way') as give_way, \
                mock.patch.object(hub_safe, 'wait_fd') as wait_fd:
            waited = writer.write(data)
        self.assertEqual(data, b''.join(written))
        self.assertEqual(4, give_way.call_count)
        self.assertFalse(wait_fd.called)
        self.assertTrue(waited)

    def test_native_partial_writes_do_not_yield(self):
        read_fd, writer = self._writer(green=False)
        with mock.patch.object(hub_safe, 'give_way') as give_way:
            writer.write(b'x' * 3000)
        self.assertEqual(b'x' * 3000, os.read(read_fd, 4096))
        self.assertFalse(give_way.called)

    def test_reader_gone(self):
        read_fd, write_fd = os.pipe()
        writer = pipe.PipeWriter(write_fd, idle_timeout=5)
        self.addCleanup(writer.close)
        os.close(read_fd)
        exc = self.assertRaises((IOError, OSError), writer.write, b'x')
        self.assertEqual(32, exc.errno)  # EPIPE

    def test_stalled_reader_times_out(self):
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        writer = pipe.PipeWriter(write_fd, idle_timeout=0.2)
        self.addCleanup(writer.close)
        self.assertRaises(hub_safe.Timeout, writer.write, b'x' * (1 << 20))
