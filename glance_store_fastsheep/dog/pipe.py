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
"""The two ends of a pipe to a ``dog`` child, in large pieces.

Why not the green ``Popen`` pipes: eventlet's ``GreenFileIO.read(n)``
returns at most what a 64 KiB pipe holds and its ``communicate`` writes
512 bytes per hub round. Here the pipe is enlarged (``F_SETPIPE_SZ``),
reads go into one preallocated buffer, and a full pipe or an empty one
costs exactly one wait: ``trampoline`` under eventlet, ``poll`` under
native threads. Both ends are raw ``io.FileIO`` objects on fds this
module owns, which behave the same on Python 2.7 and 3.
"""

import errno
import fcntl
import io
import os

from oslo_log import log as logging

from glance_store_fastsheep import hub_safe

LOG = logging.getLogger(__name__)

# The Linux value; Python < 3.10 has no name for it.
F_SETPIPE_SZ = getattr(fcntl, 'F_SETPIPE_SZ', 1031)

_refusal_logged = []


def set_pipe_size(fd, size):
    """Ask for a size-byte pipe buffer; keep the kernel's on a refusal."""
    if not size:
        return
    try:
        fcntl.fcntl(fd, F_SETPIPE_SZ, size)
    except (IOError, OSError) as exc:
        if not _refusal_logged:
            _refusal_logged.append(True)
            LOG.warning('The kernel refused a %d byte pipe (%s); '
                        'transfers use its default pipe size. See '
                        '/proc/sys/fs/pipe-max-size and '
                        'sheepdog_store_pipe_size.', size, exc)


def set_blocking(fd, blocking):
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    if blocking:
        flags &= ~os.O_NONBLOCK
    else:
        flags |= os.O_NONBLOCK
    fcntl.fcntl(fd, fcntl.F_SETFL, flags)


def _attempt(call, view):
    """call(view) on a non-blocking fd: its count, or None on EAGAIN.

    EINTR is retried here (Python 2.7 does not retry it by itself);
    ``io.FileIO`` answers None for EAGAIN on Python 3 and raises it on
    Python 2.7, and both come out as None.
    """
    while True:
        try:
            return call(view)
        except (IOError, OSError) as exc:
            if exc.errno == errno.EINTR:
                continue
            if exc.errno != errno.EAGAIN:
                raise
            return None


class PipeReader(object):
    """Reads a child's stdout in read_size pieces into one buffer.

    The fd is non-blocking in both modes and a read is tried first: only
    an empty pipe waits, in ``trampoline`` under eventlet (the child
    writes again or the idle timeout fires) or in ``poll`` under native
    threads. A transfer that keeps up with the child therefore costs one
    system call per piece, not a ``poll`` before every read.
    """

    def __init__(self, fd, read_size, idle_timeout):
        self.fd = fd
        self.idle_timeout = idle_timeout
        set_blocking(fd, False)
        self._file = io.FileIO(fd, 'rb', closefd=True)
        # read_size 0: the caller brings its own buffers (read-ahead
        # workers read into pooled ones).
        self.buffer = bytearray(read_size)
        self.view = memoryview(self.buffer)

    def fill(self, want, view=None):
        """Read until want bytes are in view (default: our buffer) or EOF.

        Returns (bytes read, whether we had to wait for the child).
        Fewer than want bytes means the child closed its stdout.
        """
        if view is None:
            view = self.view
        got = 0
        waited = False
        while got < want:
            count = _attempt(self._file.readinto, view[got:want])
            if count is None:
                hub_safe.wait_fd(self.fd, timeout=self.idle_timeout)
                waited = True
                continue
            if count == 0:
                break
            got += count
        return got, waited

    def close(self):
        self.view = None
        self.buffer = None
        self._file.close()


class PipeWriter(object):
    """Writes to a child's stdin in large pieces, never blocking the hub.

    The fd is non-blocking in both modes: a full pipe waits in
    ``trampoline`` or ``poll`` with the idle timeout, so a child that
    stops reading cannot hang the upload forever.
    """

    def __init__(self, fd, idle_timeout):
        self.fd = fd
        self.idle_timeout = idle_timeout
        self.green = hub_safe.is_green()
        set_blocking(fd, False)
        self._file = io.FileIO(fd, 'wb', closefd=True)

    def write(self, data):
        """Write all of data; return whether we had to wait for the child.

        Raises IOError/OSError with EPIPE when the child has gone.
        """
        view = memoryview(data)
        pos = 0
        waited = False
        total = len(view)
        while pos < total:
            count = _attempt(self._file.write, view[pos:])
            if count is None:
                hub_safe.wait_fd(self.fd, write=True,
                                 timeout=self.idle_timeout)
                waited = True
                continue
            pos += count
            if pos < total and self.green:
                # A partial write means the child is draining the pipe
                # as we fill it; retrying at once would never see EAGAIN
                # and would hold the hub until the whole piece is in.
                hub_safe.give_way()
                waited = True
        return waited

    def close(self):
        if not self._file.closed:
            self._file.close()

    @property
    def closed(self):
        return self._file.closed
