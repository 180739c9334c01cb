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
"""Downloads: one ``dog vdi read`` process streamed per transfer.

One child serves the whole range, so a download pays one process start
and never holds more than one buffer: its output is read into a reused
buffer and handed out in read-size pieces. The number of bytes is
checked against what was asked for: a child that dies or stops early is
an error, never a shorter image.
"""

import threading

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import timeutils

from glance_store_fastsheep import budget
from glance_store_fastsheep.dog import pipe
from glance_store_fastsheep.dog import process
from glance_store_fastsheep import hub_safe

LOG = logging.getLogger(__name__)


class RangeRead(object):
    """One ``dog vdi read`` child's range, from spawn to release, once.

    Every download reads its ranges through this: the plain stream one
    range in the consumer's thread (take), read-ahead its windows from a
    worker (read, into buffers of its own), and its lone first range as
    the plain stream does. ``cut`` ends the range early, from any
    thread: the child is then killed at the cut instead of checked for
    its exit, as what it sent up to the cut was counted. Any other end,
    short output included, is checked for byte count and exit status,
    and raises for a range that ended early. ``cancel`` releases the
    child whatever its state. ``waited`` is the time spent waiting on the
    child's pipe. The child (a process.DogProcess, its stdout read
    through a pipe.PipeReader) counts in budget.READERS until released.
    """

    def __init__(self, dog, settings, address, port, name, offset, length,
                 buffered=True):
        self.name = name
        self.offset = offset
        self.length = length
        self.end = length  # bytes to deliver; less once cut
        self.received = 0  # bytes read from the pipe, cut or not
        self.delivered = 0
        self.waited = 0.0
        self.finished = False
        self._lock = threading.Lock()
        self.child = process.DogProcess(dog, settings, 'read', address,
                                        port, name, offset, length)
        self.reader = pipe.PipeReader(
            self.child.fd, settings.read_size if buffered else 0,
            self.child.idle_timeout)
        budget.READERS.take(1)

    def cut(self, length):
        """Deliver only the first length bytes; False if past them."""
        with self._lock:
            if self.finished or self.delivered > length:
                return False
            self.end = length
            return True

    def read(self, view):
        """Read the next bytes of the range into view: (count, waited).

        count is 0 once the range is done: then it has been checked (or
        cut) and its child released; a failed check raises instead.
        waited: whether the pipe made us wait.
        """
        waited = False
        if not self.finished and self.delivered < self.end:
            started = timeutils.now()
            count, waited = self._read_piece(self.end - self.delivered, view)
            if waited:
                self.waited += timeutils.now() - started
            with self._lock:
                # A cut while the read was under way: trim to it.
                count = min(count, self.end - self.delivered)
                self.delivered += count
            if count > 0:
                return count, waited
        self._finish()
        return 0, waited

    def take(self):
        """The next piece (bytes) in order; None once the range is done."""
        view = self.reader.view
        count, waited = self.read(view)
        if not count:
            return None
        piece = view[:count].tobytes()
        if not waited:
            # Under eventlet: let other greenthreads run between pieces.
            hub_safe.give_way()
        return piece

    def _read_piece(self, size, view):
        """Read up to size more bytes into view: (count, waited).

        count is short only at the end of the child's output.
        """
        try:
            count, waited = self.reader.fill(min(size, len(view)), view)
        except hub_safe.Timeout:
            raise exceptions.BackendException(
                'sheepdog `vdi read` of %s sent nothing for %ss after %d '
                'bytes; killed' % (self.name, self.child.idle_timeout,
                                   self.received))
        self.received += count
        return count, waited

    def _check(self):
        """Check that the child sent exactly length bytes and exited 0."""
        if self.received == self.length:
            extra, _waited = self.reader.fill(1, memoryview(bytearray(1)))
            if extra:
                raise exceptions.BackendException(
                    'sheepdog `vdi read` of %s sent more than the %d bytes '
                    'asked for' % (self.name, self.length))
        self.child.check_exit()
        if self.received != self.length:
            raise exceptions.BackendException(
                'sheepdog `vdi read` of %s ended after %d of %d bytes '
                '(offset %d)' % (self.name, self.received, self.length,
                                 self.offset))

    def _finish(self):
        if self.finished:
            return
        cut = self.end < self.length and self.delivered == self.end
        verified = False
        try:
            if not cut:
                self._check()
            verified = True
        finally:
            self._release(kill=cut or not verified)

    def _release(self, kill):
        with self._lock:
            if self.finished:
                return
            self.finished = True
        self.child.close(kill=kill)
        self.reader.close()
        budget.READERS.give(1)

    def kill(self):
        """Kill and reap the child, from any thread; fds stay open.

        For a range read by another thread: its next read ends, and that
        thread's cancel() releases the pipe it may still be reading.
        """
        self.child.kill()

    def cancel(self):
        """Kill the child and release its pipe, unless done already."""
        self._release(kill=True)


def pieces(dog, settings, address, port, name, offset, length,
           transfer=None):
    """The plain download: one ``dog vdi read`` for the whole range.

    What ``stream.Stream`` runs for ``Store.get`` with a read
    concurrency of 1, or a range of at most one window. ``dog`` never
    fails over: transfer (a ``stream.Transfer``) has nothing to learn.
    """
    if length <= 0:
        return
    reader = RangeRead(dog, settings, address, port, name, offset, length)
    try:
        while True:
            piece = reader.take()
            if piece is None:
                break
            yield piece
        LOG.debug('Read %d bytes of %s at offset %d', reader.delivered, name,
                  offset)
    except GeneratorExit:
        LOG.info('Download of %s stopped by its consumer after %d of %d '
                 'bytes; killing `dog vdi read`', name, reader.delivered,
                 length)
        raise
    except Exception as exc:
        LOG.error('Download of %s failed after %d of %d bytes: %s', name,
                  reader.delivered, length, exc)
        raise
    finally:
        reader.cancel()
