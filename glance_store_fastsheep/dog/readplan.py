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
"""What a read-ahead download reads next, and with how many readers.

The bookkeeping of ``readahead``, apart from the processes it runs: the
object-aligned windows a range is cut into (``windows``, ``Plan``) and
how many ``dog vdi read`` a download keeps (``ReaderRamp``). Neither
starts a process or touches a pipe, so each decision is tested with a
clock and numbers alone.
"""

import math

from oslo_log import log as logging
from oslo_utils import timeutils

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
    bench compares with the ramp (see ``readahead.pieces``'
    ``make_ramp``).

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
