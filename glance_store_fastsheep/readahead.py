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
next; one process therefore leaves a cluster mostly idle when each object
costs a round trip (a cold cache, a remote node). Overlapping object
requests, as librbd does, helps there. But every ``dog vdi read`` also
looks the VDI up and reads the whole inode object, a little over 4 MiB
(dog/vdi.c reads SD_INODE_SIZE), before its first data byte, so each
extra process costs a start, a lookup and a 4 MiB read: on a hot cache
N=4 over 16 MiB windows ran at 0.78 of one reader on a real 1-node
sheepdog 1.0 cluster.

So the range is cut into windows aligned to the 4 MiB objects, large
enough that the per-process cost is small, and the number of children
reading windows at once ramps up (ReaderRamp): it starts at one and adds
a reader only while the consumer waits for bytes and the last reader
added raised the read rate, never beyond the configured maximum. When one
reader is enough, the rest of the range is read by one process. Each
window is drained by a worker (a greenthread under eventlet, a native
thread otherwise) into a queue of read-size buffers holding at most one
window, and the pieces are yielded strictly in window order, as soon as
they arrive for the window at the head; memory is bounded by N windows.
The buffers are recycled through one pool per transfer: fresh memory for
every piece would cost a page fault per 4 KiB (here, as much CPU as the
whole transfer).
"""

import collections
import mmap
import threading
import time

from oslo_log import log as logging
import six

from glance_store_fastsheep import download
from glance_store_fastsheep import hub_safe

LOG = logging.getLogger(__name__)

_now = getattr(time, 'monotonic', time.time)


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


class ReaderRamp(object):
    """How many windows to read at once: one, plus each reader that pays.

    A sample starts once every reader in flight has sent its first byte
    (a new process's start-up, lookup and inode read are not a rate) and
    lasts at least SAMPLE_SECONDS and SAMPLE_BYTES of reading.
    After one, a reader is added when the consumer spent at least STARVED
    of the sample waiting for bytes (the readers, not the consumer, set
    the pace) and, from the second reader on, the previous addition raised
    the read rate of all readers by at least GAIN; otherwise the level
    stays (or goes back by the reader that did not pay) and is settled.
    """

    SAMPLE_SECONDS = 0.05
    SAMPLE_BYTES = 8 << 20
    STARVED = 0.25
    GAIN = 1.1

    def __init__(self, maximum, clock=_now):
        self.maximum = maximum
        self.level = 1
        self.settled = maximum <= 1
        self._clock = clock
        self._mark = None
        self._rate = None

    def sample(self, received, waited, ready=True):
        """Account progress; returns the number of readers to keep.

        received: bytes all readers of the transfer have read so far;
        waited: seconds the consumer has spent waiting for bytes so far;
        ready: whether every reader in flight has sent a byte yet.
        """
        if self.settled:
            return self.level
        now = self._clock()
        if self._mark is None:
            if not ready:
                return self.level
            self._mark = (now, received, waited)
            return self.level
        start, start_received, start_waited = self._mark
        elapsed = now - start
        if (elapsed < self.SAMPLE_SECONDS or
                received - start_received < self.SAMPLE_BYTES):
            return self.level
        rate = (received - start_received) / elapsed
        starved = (waited - start_waited) / elapsed
        if self._rate is not None and rate < self._rate * self.GAIN:
            self.level -= 1
            self.settled = True
        elif starved >= self.STARVED and self.level < self.maximum:
            self._rate = rate
            self.level += 1
        else:
            self.settled = True
        self._mark = None
        LOG.debug('read-ahead: %.0f MB/s, consumer waited %.0f%%: %d '
                  'reader(s)%s', rate / 1e6, starved * 100, self.level,
                  ', settled' if self.settled else '')
        return self.level


class WindowFetch(object):
    """One window: its child, and a worker queueing what it sends.

    The queue holds at most ``cap`` bytes: a window read by one process
    for the rest of a range stays within the memory bound too.
    """

    def __init__(self, settings, address, port, name, offset, length,
                 pool, cap=None):
        self.offset = offset
        self.length = length
        self.pool = pool
        self.cap = max(cap or length, pool.size)
        self.queued = 0
        self.waited = 0.0
        self.cancelled = False
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
                with self.cond:
                    while (self.queued + self.pool.size > self.cap and
                           not self.cancelled):
                        self.cond.wait()
                    if self.cancelled:
                        return
                buffer = self.pool.get()
                count, waited = self.child.read_piece(
                    self.length - self.child.received, memoryview(buffer))
                if not count:
                    self.pool.put(buffer)
                    break
                with self.cond:
                    self.pieces.append((buffer, count))
                    self.queued += count
                    self.cond.notify_all()
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
            if not self.pieces and not self.finished:
                started = _now()
                while not self.pieces and not self.finished:
                    self.cond.wait()
                self.waited += _now() - started
            if self.error is not None:
                raise self.error
            if not self.pieces:
                return None
            buffer, count = self.pieces.popleft()
            self.queued -= count
            self.cond.notify_all()
        piece = memoryview(buffer)[:count].tobytes()
        self.pool.put(buffer)
        return piece

    def cancel(self):
        """Kill the child; the worker then reaps it and closes its fds."""
        with self.cond:
            self.cancelled = True
            self.cond.notify_all()
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
    ramp = ReaderRamp(min(settings.read_concurrency, total))
    done = 0  # bytes of the windows already yielded
    waited = 0.0  # seconds the consumer waited in those windows
    yielded = 0

    def start_readers():
        if ramp.settled and ramp.level == 1 and len(plan) > 1:
            # One reader is enough: one process for the rest, which its
            # queue's cap keeps within one window of memory.
            first, last = plan[0], plan[-1]
            rest = last[0] + last[1] - first[0]
            plan.clear()
            plan.append((first[0], rest))
        while plan and len(fetches) < ramp.level:
            window_offset, window_length = plan.popleft()
            fetches.append(WindowFetch(settings, address, port, name,
                                       window_offset, window_length, pool,
                                       settings.read_window))

    try:
        while plan or fetches:
            start_readers()
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
                if not ramp.settled:
                    ramp.sample(
                        done + sum(f.child.received for f in fetches),
                        waited + sum(f.waited for f in fetches),
                        all(f.child.received for f in fetches))
                    start_readers()
                hub_safe.give_way()
            fetches.popleft()
            done += head.length
            waited += head.waited
        LOG.debug('Read %d bytes of %s at offset %d in %d windows, up to %d '
                  'at once', yielded, name, offset, total, ramp.level)
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
