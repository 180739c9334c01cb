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
several readers over small windows ran slower than one reader on a real
sheepdog cluster (doc/source/fastsheep.rst has the figures).

So a download starts with one ``dog vdi read`` for the whole range, read
in the consumer's own thread exactly as the plain stream reads it
(InlineFetch), and the number of readers ramps up (ReaderRamp) only while
one more pays: the consumer waits for bytes, the readers wait on ``dog``
(not on this process's CPU), the last reader added raised the read rate,
and the readers of the other downloads of the process do not keep the
cluster busy already; never beyond the configured maximum. When a second
reader pays, the first is cut at the next window boundary and the rest
is cut into windows aligned to the 4 MiB objects, large enough that the
per-process cost is small. Each of those is drained by a worker
(WindowFetch: a greenthread under eventlet, a native thread otherwise)
into a queue of read-size buffers holding at most one window, and the
pieces are yielded strictly in range order, as soon as they arrive for
the range at the head. Every window in flight holds one window of the
process-wide read-ahead budget (budget.READ_MEMORY), taken before its
reader starts and given back when the download no longer needs it; what
does not fit is not waited for: the download keeps the readers it has,
down to the plain one-reader stream. The buffers are recycled through
one pool per transfer: fresh memory for every piece would cost a page
fault for every 4 KiB page of every piece, on top of the copy.
"""

import collections
import math
import mmap
import threading

from oslo_log import log as logging
from oslo_utils import timeutils
import six

from glance_store_fastsheep import budget
from glance_store_fastsheep.dog import read
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


def count_windows(offset, length, window):
    """How many windows ``windows`` yields, without yielding them."""
    if length <= 0:
        return 0
    return (offset + length - 1) // window - offset // window + 1


class Plan(object):
    """The ranges of a download not started yet, in order.

    Either what is left as one range, or the ``windows`` of it: held as
    two offsets and a window size, never as a list, so that planning
    does not cost memory or time in proportion to the image size (which
    comes from the cluster, and a sheep may say anything up to 2^64).
    """

    def __init__(self, start, end, window=None):
        self.start = start
        self.end = end
        self.window = window  # None: what is left is one range

    def __len__(self):
        if self.start >= self.end:
            return 0
        if self.window is None:
            return 1
        return count_windows(self.start, self.end - self.start, self.window)

    def __bool__(self):
        return self.start < self.end

    __nonzero__ = __bool__

    def popleft(self):
        """The next range to read: (offset, length)."""
        stop = self.end
        if self.window is not None:
            stop = min(stop, (self.start // self.window + 1) * self.window)
        piece = (self.start, stop - self.start)
        self.start = stop
        return piece

    def whole(self):
        """Read what is left as one range."""
        self.window = None


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


class ReaderRamp(object):
    """How many readers a download keeps: one, plus each reader that pays.

    A sample starts once every reader in flight has sent its first byte
    (a new process's start-up, lookup and inode read are not a rate) and
    lasts at least SAMPLE_SECONDS and SAMPLE_BYTES of reading. After one,
    readers are added when, for at least STARVED of the sample, the
    consumer waited for bytes and the readers waited on their ``dog`` (so
    ``dog``, not this process's CPU nor the consumer, sets the pace), and,
    after the first addition, the previous one raised the read rate of
    all readers by at least GAIN. Otherwise the count stays (or goes back
    to what it was before the addition that did not pay) and is settled.
    Readers that wait a fraction f of the time keep about 1 / (1 - f)
    times as many busy, so that many are added at once (at least one):
    a latency-bound download reaches its readers in one sample.

    ``start`` is the number of readers the download starts with (at most
    the maximum; by default one). A ramp that starts at its maximum is
    settled: ``ReaderRamp(maximum, start=maximum)`` is the fixed
    read-ahead that runs every reader from the first byte, which the
    bench compares with the ramp (see ``pieces``' ``make_ramp``).

    The cluster is shared: a reader that pays for one stream on an idle
    cluster only takes it from the other streams once they keep it busy.
    So no reader is added while the other downloads of the process run
    BUSY_READERS ``dog vdi read`` children or more. Its value comes from
    the bench's concurrent download rows (the default against one reader
    each, per concurrency; doc/source/fastsheep.rst, "Many downloads at
    once"): a few plain streams already keep a cluster as busy as one
    download's full read-ahead does, so two busy readers are enough to
    stop adding.
    """

    SAMPLE_SECONDS = 0.05
    SAMPLE_BYTES = 8 << 20
    STARVED = 0.5
    GAIN = 1.2
    BUSY_READERS = 2

    def __init__(self, maximum, clock=timeutils.now, start=1):
        self.maximum = maximum
        self.level = max(1, min(start, maximum))
        self.settled = self.level >= maximum
        self._clock = clock
        self._mark = None
        self._rate = None
        self._before = None

    def hold(self, level):
        """No more readers can start: keep level, stop sampling."""
        self.level = level
        self.settled = True

    def sample(self, received, waited, idle, ready=True, others=0):
        """Account progress; returns the number of readers to keep.

        received: bytes all readers of the download have read so far;
        waited: seconds the consumer has spent waiting for bytes so far;
        idle: seconds the readers have spent waiting on their ``dog``;
        ready: whether every reader in flight has sent a byte yet;
        others: ``dog vdi read`` children of the other downloads now.
        """
        if self.settled:
            return self.level
        now = self._clock()
        if self._mark is None:
            if ready:
                self._mark = (now, received, waited, idle)
            return self.level
        start, start_received, start_waited, start_idle = self._mark
        elapsed = now - start
        if (elapsed < self.SAMPLE_SECONDS or
                received - start_received < self.SAMPLE_BYTES):
            return self.level
        rate = (received - start_received) / elapsed
        starved = (waited - start_waited) / elapsed
        reader_idle = (idle - start_idle) / elapsed / self.level
        if self._rate is not None and rate < self._rate * self.GAIN:
            self.level = self._before
            self.settled = True
        elif (min(starved, reader_idle) >= self.STARVED and
                self.level < self.maximum and others < self.BUSY_READERS):
            busy = max(1.0 - min(reader_idle, 0.95), 0.05)
            wanted = int(math.ceil(self.level / busy))
            self._rate, self._before = rate, self.level
            self.level = min(self.maximum, max(self.level + 1, wanted))
        else:
            self.settled = True
        self._mark = None
        LOG.debug('read-ahead: %.0f MB/s, consumer waited %.0f%%, readers '
                  '%.0f%%, %d reader(s) of other downloads: %d reader(s)%s',
                  rate / 1e6, starved * 100, reader_idle * 100, others,
                  self.level, ', settled' if self.settled else '')
        return self.level


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


class _Download(object):
    """One read-ahead download's readers, in the steps ``pieces`` runs.

    ``plan`` holds the ranges not started yet, ``fetches`` the readers
    in flight in range order (the head is the one being yielded), and
    ``held`` the windows of budget.READ_MEMORY this download holds.
    """

    def __init__(self, dog, settings, address, port, name, offset, length,
                 make_ramp):
        self.dog = dog
        self.settings = settings
        self.where = (address, port, name)
        self.window = window = settings.read_window
        self.end = offset + length
        total = count_windows(offset, length, window)
        self.ramp = (make_ramp or ReaderRamp)(
            min(settings.read_concurrency, total))
        if self.ramp.level > 1:
            self.plan = Plan(offset, self.end, window)
        else:
            # One reader for the whole range, until a second one pays.
            self.plan = Plan(offset, self.end)
        self.fetches = collections.deque()
        self.held = 0
        self.pool = BufferPool(settings.read_size)
        self.done = 0  # bytes of the ranges already yielded
        self.waited = self.idle = 0.0  # and the waits in them

    # The budget's windows ---------------------------------------------

    def in_windows(self):
        return sum(1 for f in self.fetches if isinstance(f, WindowFetch))

    def hold(self, count):
        """Hold count windows if the budget has them; whether held."""
        if count <= self.held:
            return True
        if not budget.READ_MEMORY.take((count - self.held) * self.window,
                                       self.settings.readahead_budget):
            return False
        self.held = count
        return True

    def keep(self, count):
        """Give back what is held beyond count windows."""
        if count < self.held:
            budget.READ_MEMORY.give((self.held - count) * self.window)
            self.held = count

    # Starting readers -------------------------------------------------

    def one_reader_for_the_rest(self):
        self.plan.whole()

    def split_the_last_reader(self):
        """Cut the reader that reads to the end into windows, if it pays.

        At the next window boundary, if at least a whole window is left
        to amortise a new reader's start, lookup and inode read, and the
        budget has a window for one more; otherwise no reader can pay.
        """
        last, window = self.fetches[-1], self.window
        boundary = ((last.offset + last.delivered) // window + 1) * window
        if (self.end - boundary >= window and
                self.hold(self.in_windows() + 1) and
                last.cut(boundary - last.offset)):
            # The plan is empty here: the rest is the last reader's.
            self.plan = Plan(boundary, self.end, window)
        else:
            self.ramp.hold(len(self.fetches))

    def start_one(self):
        """Start the next planned range; False if the budget is used up."""
        fetches, ramp = self.fetches, self.ramp
        if fetches or ramp.level > 1:
            if not self.hold(self.in_windows() + 1):
                # Keep the readers running, or with none left, read the
                # rest as the plain stream does.
                ramp.hold(max(1, len(fetches)))
                if fetches:
                    return False
                self.one_reader_for_the_rest()
        range_offset, range_length = self.plan.popleft()
        address, port, name = self.where
        if not fetches and ramp.level == 1:
            # No reader beside it: the consumer reads it itself.
            fetches.append(InlineFetch(self.dog, self.settings, address,
                                       port, name, range_offset,
                                       range_length))
        else:
            fetches.append(WindowFetch(self.dog, self.settings, address,
                                       port, name, range_offset,
                                       range_length, self.pool,
                                       self.window))
        return True

    def start_readers(self):
        """Start as many readers as the ramp keeps and the plan has."""
        if self.ramp.settled and self.ramp.level == 1:
            # One reader is enough: one process for the rest, started
            # once the windows in flight are done and read inline.
            self.one_reader_for_the_rest()
        if not self.plan and len(self.fetches) < self.ramp.level:
            self.split_the_last_reader()
        while self.plan and len(self.fetches) < self.ramp.level:
            if not self.start_one():
                break
        # A window's share passes on to the window that follows it, and
        # what no window in flight needs goes back.
        self.keep(self.in_windows())

    # While the head is yielded ----------------------------------------

    def raise_any_failure(self):
        """Fail as soon as any window in flight has failed.

        What was yielded is then a prefix of the range read so far.
        """
        for fetch in self.fetches:
            if fetch.failed():
                fetch.take()

    def sample(self):
        """Let the ramp weigh the readers' progress; start what it adds."""
        if self.ramp.settled:
            return
        fetches = self.fetches
        own = sum(1 for f in fetches if f.reading)
        self.ramp.sample(self.done + sum(f.delivered for f in fetches),
                         self.waited + sum(f.waited for f in fetches),
                         self.idle + sum(f.idle for f in fetches),
                         all(f.delivered for f in fetches),
                         budget.READERS.held - own)
        self.start_readers()

    def head_done(self):
        """Drop the head, whose range was yielded whole; count its waits."""
        head = self.fetches.popleft()
        self.done += head.end
        self.waited += head.waited
        self.idle += head.idle

    def close(self):
        """Kill every reader in flight; give back the budget's windows."""
        try:
            while self.fetches:
                self.fetches.popleft().cancel()
        finally:
            self.keep(0)


def pieces(dog, settings, address, port, name, offset, length,
           make_ramp=None, transfer=None):
    """The read-ahead download, for ``stream.Stream``.

    ``Store.get`` runs it when read concurrency is more than 1.
    ``make_ramp`` chooses how many readers the download keeps: it is
    called with the most readers the download may run (the configured
    read concurrency, or the number of windows if that is smaller) and
    returns a ReaderRamp. ``Store.get`` leaves the default, ReaderRamp,
    which starts at one reader and adds readers while they pay;
    ``lambda most: ReaderRamp(most, start=most)`` runs them all from the
    start. ``dog`` never fails over: transfer (a ``stream.Transfer``)
    has nothing to learn.
    """
    if length <= 0:
        return
    download = _Download(dog, settings, address, port, name, offset,
                         length, make_ramp)
    yielded = 0
    try:
        while download.plan or download.fetches:
            download.start_readers()
            head = download.fetches[0]
            piece = head.take()
            while piece is not None:
                yielded += len(piece)
                yield piece
                download.raise_any_failure()
                download.sample()
                piece = head.take()
            download.head_done()
        LOG.debug('Read %d bytes of %s at offset %d, up to %d readers over '
                  '%d-byte windows', yielded, name, offset,
                  download.ramp.level, download.window)
    except GeneratorExit:
        LOG.info('Download of %s stopped by its consumer after %d of %d '
                 'bytes; killing %d `dog vdi read`', name, yielded, length,
                 len(download.fetches))
        raise
    except Exception as exc:
        LOG.error('Download of %s failed after %d of %d bytes: %s', name,
                  yielded, length, exc)
        raise
    finally:
        download.close()
