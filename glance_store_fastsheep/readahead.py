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
"""Downloads with several object-aligned ``dog vdi read`` in flight.

The real ``dog`` asks for one object, waits for it, then asks for the
next; one process therefore leaves a cluster mostly idle, as the CephFS
kernel client did with its write-then-wait loop. librbd overlaps object
requests instead, and so does this: the range is cut into windows aligned
to the 4 MiB objects, up to N children read N windows at once, each
drained by a worker (a greenthread under eventlet, a native thread
otherwise) into a queue of read-size buffers, and the pieces are yielded
strictly in window order, as soon as they arrive for the window at the
head. A window's queue never holds more than the window, so memory is
bounded by N windows. The buffers are recycled through one pool per
transfer: fresh memory for every piece would cost a page fault per 4 KiB
(here, as much CPU as the whole transfer).
"""

import collections
import mmap
import threading

from oslo_log import log as logging
import six

from glance_store_fastsheep import download
from glance_store_fastsheep import hub_safe

LOG = logging.getLogger(__name__)


def windows(offset, length, window):
    """(offset, length) of each window; inner boundaries on multiples."""
    end = offset + length
    pos = offset
    while pos < end:
        stop = min(end, (pos // window + 1) * window)
        yield pos, stop - pos
        pos = stop


def _anonymous_buffer(size):
    return mmap.mmap(-1, size)


class BufferPool(object):
    """Read-size buffers, reused for the whole transfer.

    Each buffer is an anonymous mapping of its own, not a malloc block:
    the workers that allocate them are short-lived native threads, and
    glibc serves large blocks for those from per-thread arenas that keep
    the memory after the transfer frees it (threads ran ~40 MiB over the
    N x window bound that way). A mapping goes back to the kernel when
    its last reference goes. Python 2.7's mmap has no memoryview support;
    there the buffers are bytearrays.

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


class WindowFetch(object):
    """One window: its child, and a worker queueing what it sends."""

    def __init__(self, settings, address, port, name, offset, length,
                 pool):
        self.offset = offset
        self.length = length
        self.pool = pool
        self.error = None
        self.finished = False
        self.pieces = collections.deque()
        self.cond = threading.Condition()
        self.child = download.ReadProcess(settings, address, port, name,
                                          offset, length, buffered=False)
        self.worker = threading.Thread(target=self._run,
                                       name='fastsheep-window-%d' % offset)
        self.worker.daemon = True
        self.worker.start()

    def _run(self):
        """Queue the child's output; verify it; record any error."""
        verified = False
        try:
            while self.child.received < self.length:
                buffer = self.pool.get()
                count, waited = self.child.read_piece(
                    self.length - self.child.received, memoryview(buffer))
                if not count:
                    self.pool.put(buffer)
                    break
                with self.cond:
                    self.pieces.append((buffer, count))
                    self.cond.notify()
                if not waited:
                    # Under eventlet: let the consumer and the other
                    # windows run between two pieces.
                    hub_safe.give_way()
            self.child.finish()
            verified = True
        except Exception as exc:
            self.error = exc
        finally:
            self.child.close(kill=not verified)
            with self.cond:
                self.finished = True
                self.cond.notify()

    def failed(self):
        return self.error is not None

    def take(self):
        """The next piece (bytes) in order; None once the window is done.

        Raises the window's error instead of handing out its last pieces:
        nothing from a window that failed its check is yielded after the
        failure is known.
        """
        with self.cond:
            while not self.pieces and not self.finished:
                self.cond.wait()
            if self.error is not None:
                raise self.error
            if not self.pieces:
                return None
            buffer, count = self.pieces.popleft()
        piece = memoryview(buffer)[:count].tobytes()
        self.pool.put(buffer)
        return piece

    def cancel(self):
        """Kill the child; the worker then reaps it and closes its fds."""
        if hub_safe.kill_and_reap(self.child.proc) is None:
            LOG.warning('`dog vdi read` pid %s survived SIGKILL',
                        self.child.proc.pid)
        try:
            self.worker.join(self.child.idle_timeout)
        except Exception as exc:
            # A join that cannot switch greenthreads (close() run by the
            # garbage collector inside the hub): the killed child is
            # reaped already, the worker closes its fds when it next runs.
            LOG.debug('could not join read-ahead worker: %s', exc)
        self.pieces.clear()


class ReadAheadStream(download.ReadStream):
    """``Store.get``'s iterable when read concurrency is more than 1."""

    def __iter__(self):
        if self._gen is None:
            self._gen = _stream_windows(self.settings, self.address,
                                        self.port, self.name, self.offset,
                                        self.length)
        return self._gen


def _stream_windows(settings, address, port, name, offset, length):
    if length <= 0:
        return
    plan = collections.deque(windows(offset, length, settings.read_window))
    total = len(plan)
    fetches = collections.deque()
    pool = BufferPool(settings.read_size)
    yielded = 0
    try:
        while plan or fetches:
            while plan and len(fetches) < settings.read_concurrency:
                window_offset, window_length = plan.popleft()
                fetches.append(WindowFetch(settings, address, port, name,
                                           window_offset, window_length,
                                           pool))
            head = fetches[0]
            while True:
                piece = head.take()
                if piece is None:
                    break
                yielded += len(piece)
                yield piece
                # Fail as soon as any window in flight has failed: what
                # was yielded is a prefix of the range read so far.
                for fetch in fetches:
                    if fetch.failed():
                        fetch.take()
                hub_safe.give_way()
            fetches.popleft()
        LOG.debug('Read %d bytes of %s at offset %d in %d windows',
                  yielded, name, offset, total)
    except GeneratorExit:
        LOG.info('Download of %s stopped by its consumer after %d of %d '
                 'bytes; killing %d `dog vdi read`', name, yielded, length,
                 len(fetches))
        raise
    except Exception as exc:
        LOG.error('Download of %s failed after %d of %d bytes: %s', name,
                  yielded, length, exc)
        raise
    finally:
        while fetches:
            fetches.popleft().cancel()
