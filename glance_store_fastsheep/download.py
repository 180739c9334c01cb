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

The Pike driver started one process per 64 MiB chunk and collected each
chunk whole in memory. Here one child serves the whole range, its output
is read into a reused buffer and handed out in read-size pieces, and the
number of bytes is checked against what was asked for: a child that dies
or stops early is an error, never a shorter image.
"""

import time

from glance_store import exceptions
from oslo_log import log as logging

from glance_store_fastsheep import dog_command
from glance_store_fastsheep import hub_safe
from glance_store_fastsheep import pipe_io

LOG = logging.getLogger(__name__)

# The clock of the transfer timings (Python 2.7's time has no monotonic).
now = getattr(time, 'monotonic', time.time)


class ReadProcess(object):
    """One `dog vdi read NAME OFFSET LENGTH` child and its stdout pipe."""

    def __init__(self, settings, address, port, name, offset, length,
                 buffered=True):
        self.name = name
        self.offset = offset
        self.length = length
        self.received = 0
        self.idle_timeout = settings.transfer_timeout
        argv = settings.dog.argv('read', address, port, name, offset, length)
        self.proc, read_fd, self._stderr = dog_command.spawn_transfer(
            argv, settings.pipe_size, child_reads=False)
        self.reader = pipe_io.PipeReader(
            read_fd, settings.read_size if buffered else 0,
            self.idle_timeout)
        LOG.debug('Started `%s` (pid %s)', ' '.join(argv), self.proc.pid)

    def read_piece(self, size, view=None):
        """Read up to size more bytes into view (default: the reader's).

        Returns (count, waited); count is short only at end of output.
        """
        if view is None:
            view = self.reader.view
        try:
            count, waited = self.reader.fill(min(size, len(view)), view)
        except hub_safe.Timeout:
            raise exceptions.BackendException(
                'sheepdog `vdi read` of %s sent nothing for %ss after %d '
                'bytes; killed' % (self.name, self.idle_timeout,
                                   self.received))
        self.received += count
        return count, waited

    def finish(self):
        """Check that the child sent exactly length bytes and exited 0."""
        if self.received == self.length:
            extra, _waited = self.reader.fill(1, memoryview(bytearray(1)))
            if extra:
                raise exceptions.BackendException(
                    'sheepdog `vdi read` of %s sent more than the %d bytes '
                    'asked for' % (self.name, self.length))
        try:
            status = hub_safe.wait_process(self.proc, self.idle_timeout)
        except hub_safe.Timeout:
            raise exceptions.BackendException(
                'sheepdog `vdi read` of %s did not exit %ss after its '
                'output ended' % (self.name, self.idle_timeout))
        if status != 0:
            self._stderr.seek(0)
            raise dog_command.error_for('read', self.name, status,
                                        self._stderr.read())
        if self.received != self.length:
            raise exceptions.BackendException(
                'sheepdog `vdi read` of %s ended after %d of %d bytes '
                '(offset %d)' % (self.name, self.received, self.length,
                                 self.offset))

    def close(self, kill=True):
        """Release the pipe and stderr file; kill and reap if still alive."""
        if kill and hub_safe.kill_and_reap(self.proc) is None:
            LOG.warning('`dog vdi read` pid %s of %s survived SIGKILL; left '
                        'to be reaped later', self.proc.pid, self.name)
        self.reader.close()
        self._stderr.close()


class RangeRead(object):
    """One child's range, read piece by piece by whoever asks for them.

    The plain stream reads its whole range this way, and read-ahead reads
    a range with no other reader beside it the same way (readahead's
    InlineFetch), so that one reader costs the same with or without
    read-ahead. ``cut`` ends the range early: the child is then killed at
    the cut instead of checked for its exit, as what it sent up to the
    cut was counted. ``waited`` is the time take() spent waiting on the
    child.
    """

    def __init__(self, settings, address, port, name, offset, length):
        self.offset = offset
        self.length = length
        self.end = length  # bytes to deliver; less once cut
        self.waited = 0.0
        self.finished = False
        self.child = ReadProcess(settings, address, port, name, offset,
                                 length)

    @property
    def delivered(self):
        return self.child.received

    def cut(self, length):
        """Deliver only the first length bytes; False if past them."""
        if self.finished or self.child.received > length:
            return False
        self.end = length
        return True

    def take(self):
        """The next piece (bytes) in order; None once the range is done."""
        if self.finished:
            return None
        want = self.end - self.child.received
        if want > 0:
            started = now()
            count, waited = self.child.read_piece(want)
            if waited:
                self.waited += now() - started
            if count > 0:
                piece = self.child.reader.view[:count].tobytes()
                if not waited:
                    hub_safe.give_way()
                return piece
        self._finish()
        return None

    def _finish(self):
        """Check the range (unless cut at its end) and release the child.

        Cut and reached the cut: its bytes were counted, the child is
        killed. Anything else, short output included, gets the full
        check of byte count and exit status, which raises for a range
        that ended early.
        """
        self.finished = True
        cut = self.end < self.length and self.child.received == self.end
        verified = False
        try:
            if not cut:
                self.child.finish()
            verified = True
        finally:
            self.child.close(kill=cut or not verified)

    def cancel(self):
        """Kill the child and release its pipe, unless done already."""
        if not self.finished:
            self.finished = True
            self.child.close()


class ReadStream(object):
    """The iterable that ``Store.get`` returns.

    Nothing is spawned until the first item is asked for. ``close()`` (WSGI
    servers call it when a client hangs up) and garbage collection of a
    half-read iterator both kill and reap the child.
    """

    def __init__(self, settings, address, port, name, offset, length):
        self.settings = settings
        self.address = address
        self.port = port
        self.name = name
        self.offset = offset
        self.length = length
        self._gen = None

    def __iter__(self):
        if self._gen is None:
            # A module-level generator, not a method: a generator holding
            # self while self holds it is a cycle that only the cyclic GC
            # breaks, which would keep a dropped child alive until then.
            self._gen = _stream(self.settings, self.address, self.port,
                                self.name, self.offset, self.length)
        return self._gen

    def close(self):
        if self._gen is not None:
            self._gen.close()


def _stream(settings, address, port, name, offset, length):
    if length <= 0:
        return
    reader = RangeRead(settings, address, port, name, offset, length)
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
