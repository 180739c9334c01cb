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
(fetch.InlineFetch), and the readers ramp up (readplan.ReaderRamp) while
one more pays: the consumer waits for bytes, the readers wait on ``dog``
(not on this process's CPU), the last reader added raised the read rate,
and the readers of the other downloads of the process do not keep the
cluster busy already; never beyond the configured maximum. When a second
reader pays, the first is cut at the next window boundary and the rest
is cut into windows aligned to the 4 MiB objects, large enough that the
per-process cost is small. Each of those is drained by a worker
(fetch.WindowFetch: a greenthread under eventlet, a native thread
otherwise) into a queue of read-size buffers holding at most one
window, and the pieces are yielded strictly in range order, as soon as
they arrive for the range at the head. Every window in flight holds one
window of the process-wide read-ahead budget (budget.READ_MEMORY),
taken before its reader starts and given back when the download no
longer needs it; what does not fit is not waited for: the download
keeps the readers it has, down to the plain one-reader stream. The
buffers are recycled through one pool per transfer: fresh memory for
every piece would cost a page fault for every 4 KiB page of every
piece, on top of the copy.
"""

import collections

from oslo_log import log as logging

from glance_store_fastsheep import budget
from glance_store_fastsheep.dog import fetch
from glance_store_fastsheep.dog import readplan

LOG = logging.getLogger(__name__)


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
        total = readplan.count_windows(offset, length, window)
        self.ramp = (make_ramp or readplan.ReaderRamp)(
            min(settings.read_concurrency, total))
        if self.ramp.level > 1:
            self.plan = readplan.Plan(offset, self.end, window)
        else:
            # One reader for the whole range, until a second one pays.
            self.plan = readplan.Plan(offset, self.end)
        self.fetches = collections.deque()
        self.held = 0
        self.pool = fetch.BufferPool(settings.read_size)
        self.done = 0  # bytes of the ranges already yielded
        self.waited = self.idle = 0.0  # and the waits in them

    # The budget's windows ---------------------------------------------

    def in_windows(self):
        return sum(1 for f in self.fetches
                   if isinstance(f, fetch.WindowFetch))

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
            self.plan = readplan.Plan(boundary, self.end, window)
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
            fetches.append(fetch.InlineFetch(self.dog, self.settings,
                                             address, port, name,
                                             range_offset, range_length))
        else:
            fetches.append(fetch.WindowFetch(self.dog, self.settings,
                                             address, port, name,
                                             range_offset, range_length,
                                             self.pool, self.window))
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
        for reader in self.fetches:
            if reader.failed():
                reader.take()

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
    returns a ``readplan.ReaderRamp``. ``Store.get`` leaves the default,
    ReaderRamp, which starts at one reader and adds readers while they pay;
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
