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
"""The readers of a read-ahead download: one ``dog vdi read`` each.

``readahead`` decides which ranges to read and when; these read them.
A range no other reader runs beside is read by the consumer itself
(``InlineFetch``), as the plain stream reads it; the others are drained
by a worker each (``WindowFetch``: a greenthread under eventlet, a
native thread otherwise) into a queue of read-size buffers from one
``BufferPool`` per transfer, so that several ranges are read at once and
yielded in order.
"""

import collections
import mmap
import threading

from oslo_log import log as logging
from oslo_utils import timeutils
import six

from glance_store_fastsheep.dog import read
from glance_store_fastsheep import hub_safe

LOG = logging.getLogger(__name__)


def _anonymous_buffer(size):
    return mmap.mmap(-1, size)


class BufferPool(object):
    """Read-size buffers, reused for the whole transfer.

    Each buffer is an anonymous mapping of its own, not a malloc block:
    the workers that allocate them are short-lived native threads, and
    glibc serves large blocks for those from per-thread arenas that keep
    the memory after the transfer frees it, beyond the N x window bound
    (doc/source/fastsheep.rst, "Memory"). A mapping goes back to the
    kernel when its last reference goes. Python 2.7's mmap has no
    memoryview support; there the buffers are bytearrays.

    list.append and list.pop are atomic, which is all the sharing between
    the workers and the consumer needs.
    """

    def __init__(self, size):
        self.size = size
        self._free = []
        self._new = _anonymous_buffer if six.PY3 else bytearray

    def get(self):
        try:
            return self._free.pop()
        except IndexError:
            return self._new(self.size)

    def put(self, buffer):
        self._free.append(buffer)


class InlineFetch(read.RangeRead):
    """One range whose pipe the consumer reads itself, with no worker.

    A range that no other reader runs beside (the whole range at first,
    or the rest once one reader is settled) gains nothing from a worker,
    and handing each piece over through a queue costs two thread or
    greenthread switches per piece: on a hot cache, where one reader is
    all that pays, that ran measurably slower than the plain stream. So it
    is read as the plain stream reads (read.RangeRead), and the
    consumer's wait for the pipe is both what the consumer waited and
    what the reader idled, which is what the ramp samples.
    """

    @property
    def idle(self):
        return self.waited

    @property
    def reading(self):
        return not self.finished

    def failed(self):
        """Errors surface in take(), in the consumer: never pending."""
        return False


class WindowFetch(object):
    """One range read by a worker into a queue, ahead of the consumer.

    The range's lifecycle (cut, check or kill, release) is
    read.RangeRead's; this adds the worker and the queue. The queue
    holds at most ``cap`` bytes, so a reader of a long range stays within
    one window of memory.
    """

    def __init__(self, dog, settings, address, port, name, offset, length,
                 pool, cap=None):
        self.offset = offset
        self.length = length
        self.pool = pool
        self.cap = max(cap or length, pool.size)
        self.queued = 0
        self.waited = 0.0  # the consumer, for this range's pieces
        self.cancelled = False
        self.error = None
        self.finished = False
        self.pieces = collections.deque()
        self.cond = threading.Condition()
        self.range = read.RangeRead(dog, settings, address, port, name,
                                    offset, length, buffered=False)
        self.worker = threading.Thread(target=self._run,
                                       name='fastsheep-window-%d' % offset)
        self.worker.daemon = True
        try:
            self.worker.start()
        except Exception:
            self.range.cancel()
            raise

    @property
    def end(self):
        return self.range.end

    @property
    def delivered(self):
        return self.range.delivered

    @property
    def idle(self):
        """Seconds the worker waited on its child's output."""
        return self.range.waited

    @property
    def reading(self):
        return not self.range.finished

    def cut(self, length):
        return self.range.cut(length)

    def _run(self):
        """Queue the range's pieces until it is done; record any error."""
        try:
            while True:
                with self.cond:
                    while (self.queued + self.pool.size > self.cap and
                           not self.cancelled):
                        self.cond.wait()
                    if self.cancelled:
                        return
                buffer = self.pool.get()
                count, waited = self.range.read(memoryview(buffer))
                if not count:
                    self.pool.put(buffer)
                    return
                with self.cond:
                    self.pieces.append((buffer, count))
                    self.queued += count
                    self.cond.notify_all()
                if not waited:
                    # Under eventlet: let the consumer and the other
                    # windows run between two pieces.
                    hub_safe.give_way()
        except Exception as exc:
            self.error = exc
        finally:
            self.range.cancel()
            with self.cond:
                self.finished = True
                self.cond.notify_all()

    def failed(self):
        return self.error is not None

    def take(self):
        """The next piece (bytes) in order; None once the window is done.

        Raises the window's error instead of handing out its last pieces:
        nothing from a window that failed its check is yielded after the
        failure is known.
        """
        with self.cond:
            waited = not self.pieces and not self.finished
            if waited:
                started = timeutils.now()
                while not self.pieces and not self.finished:
                    self.cond.wait()
                self.waited += timeutils.now() - started
            if self.error is not None:
                raise self.error
            if not self.pieces:
                return None
            buffer, count = self.pieces.popleft()
            self.queued -= count
            self.cond.notify_all()
        piece = memoryview(buffer)[:count].tobytes()
        self.pool.put(buffer)
        if not waited:
            # Under eventlet: let the workers run between two pieces.
            hub_safe.give_way()
        return piece

    def cancel(self):
        """Kill the child; the worker then releases the range."""
        with self.cond:
            self.cancelled = True
            self.cond.notify_all()
        self.range.kill()
        try:
            self.worker.join(self.range.child.idle_timeout)
        except Exception as exc:
            # A join that cannot switch greenthreads (close() run by the
            # garbage collector inside the hub): the killed child is
            # reaped already, the worker closes its fds when it next runs.
            LOG.debug('could not join read-ahead worker: %s', exc)
        self.pieces.clear()
