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
"""Uploads: object-aligned chunk writes, several in flight.

Each chunk goes to its own ``dog vdi write NAME OFFSET LEN`` child with an
explicit offset and length (a short stdin would make ``dog`` zero-pad to
the next object). The image is read once, in read-size pieces, and every
piece is hashed, given to the verifier and written to the current child's
stdin in that order, so memory never holds a chunk when the size is
known. Up to ``write_concurrency`` children exist at once: the ones for
the next chunks are started before their data arrives and the finished
ones commit and exit while the next chunk streams: a loop that waited
for each chunk's commit before sending the next would leave the link
idle for one round trip and one process start per chunk.
Every child beyond an upload's first one holds a slot of the process's
write budget (budget.WRITERS) while it exists.
"""

import collections
import errno
import sys

from glance_store import exceptions
from oslo_log import log as logging
import six

from glance_store_fastsheep import budget
from glance_store_fastsheep.dog import pipe
from glance_store_fastsheep.dog import process
from glance_store_fastsheep import hub_safe

LOG = logging.getLogger(__name__)


class _ChildGone(Exception):
    """The writer closed its stdin early; its exit status says why."""


class ChunkWrite(object):
    """One chunk's write: its ``dog vdi write`` child, stdin and slot.

    The child is a process.DogProcess, fed through a pipe.PipeWriter.
    """

    def __init__(self, dog, settings, address, port, name, offset, length):
        self.name = name
        self.offset = offset
        self.length = length
        self.sent = 0
        # Whether this child holds a slot of budget.WRITERS (set by the
        # Uploader once it runs, given back by close()).
        self.slot = False
        self.child = process.DogProcess(dog, settings, 'write', address,
                                        port, name, offset, length)
        self.writer = pipe.PipeWriter(self.child.fd, self.child.idle_timeout)

    def feed(self, data):
        """Write data to the child; return whether we had to wait."""
        try:
            waited = self.writer.write(data)
        except hub_safe.Timeout:
            raise exceptions.BackendException(
                'sheepdog `vdi write` of %s at offset %d took no data for '
                '%ss; killed' % (self.name, self.offset,
                                 self.child.idle_timeout))
        except (IOError, OSError) as exc:
            if exc.errno == errno.EPIPE:
                raise _ChildGone()
            raise
        self.sent += len(data)
        return waited

    def end_input(self):
        self.writer.close()

    def done(self):
        return self.child.done()

    def finish(self):
        """Wait for the exit; raise the CLI's error if it failed.

        The child is reaped and its fds released whatever happens.
        """
        try:
            self.end_input()
            self.child.check_exit()
            LOG.debug('Wrote %d bytes of %s at offset %d', self.length,
                      self.name, self.offset)
        finally:
            self.close()

    def close(self):
        """Release fds and slot; kill and reap the child if it runs."""
        try:
            self.writer.close()
            self.child.close()
        finally:
            if self.slot:
                self.slot = False
                budget.WRITERS.give(1)


class Uploader(object):
    """Writes one image into a new VDI; the caller deletes it on failure."""

    def __init__(self, dog, settings, address, port, name):
        self.dog = dog
        self.settings = settings
        self.address = address
        self.port = port
        self.name = name
        self.created = False
        self.size = 0
        self._active = collections.deque()
        self._short_logged = False

    # control commands -------------------------------------------------

    def _create(self, size):
        """``dog vdi create``; adopt the VDI if dog failed after sheep made it.

        The name is this attempt's alone (``store.vdi_name``), so a VDI
        of that name found after ``vdi create`` failed other than by
        Duplicate (dog's connection reset or timed out with the request
        carried out, its reply lost) can only be the one this command
        created: it is adopted when it has the size asked for. Duplicate
        (VDI_EXIST) is never adopted: dog sends NEW_VDI once, so the
        name was taken before (a caller of the client reusing a name),
        and that VDI is not counted as created, so nothing deletes it.
        """
        try:
            self.dog.check('create', self.address, self.port, self.name, size)
        except exceptions.Duplicate:
            raise
        except (exceptions.BackendException,
                exceptions.GlanceStoreException) as exc:
            failure = sys.exc_info()
            found = self._look_up_after(exc)
            if found is None or found.size != size:
                six.reraise(*failure)
            LOG.warning('`vdi create` of sheepdog image %s failed (%s) but '
                        'created it: adopted', self.name, exc)
        self.created = True
        self.size = size

    def _look_up_after(self, failure):
        """The VDI called name after ``vdi create`` failed, or None."""
        try:
            return self.dog.stat(self.address, self.port, self.name)
        except (exceptions.BackendException,
                exceptions.GlanceStoreException) as exc:
            LOG.warning('Could not look sheepdog image %s up after `vdi '
                        'create` failed (%s): %s', self.name, failure, exc)
            return None

    def _grow(self, size):
        if size > self.size:
            self.dog.check('resize', self.address, self.port, self.name,
                           size)
            self.size = size

    # writers ----------------------------------------------------------

    def _try_spawn(self, offset, length):
        """Start the writer of a chunk if one more may run; it or None.

        One more may run below write_concurrency when it is the upload's
        only writer without a slot (its first), or when budget.WRITERS has a
        slot for it.
        """
        if len(self._active) >= self.settings.write_concurrency:
            return None
        slot = any(not child.slot for child in self._active)
        if slot and not budget.WRITERS.take(1, self.settings.write_budget):
            if not self._short_logged:
                self._short_logged = True
                LOG.debug('Upload of %s runs %d of its %d writers: the '
                          'process write budget of %d is in use',
                          self.name, len(self._active),
                          self.settings.write_concurrency,
                          self.settings.write_budget)
            return None
        try:
            child = ChunkWrite(self.dog, self.settings, self.address,
                               self.port, self.name, offset, length)
        except BaseException:
            if slot:
                budget.WRITERS.give(1)
            raise
        child.slot = slot
        self._active.append(child)
        return child

    def _reap_finished(self):
        """Collect writers that are done; raise the first failure."""
        while self._active and self._active[0].writer.closed \
                and self._active[0].done():
            self._active.popleft().finish()

    def _wait_oldest(self):
        child = self._active.popleft()
        child.finish()

    def _spawn(self, offset, length):
        """Start the writer of a chunk, after older ones if need be.

        Only writers whose input has ended are waited for, and with none
        left the upload's first writer always may start.
        """
        self._reap_finished()
        while True:
            child = self._try_spawn(offset, length)
            if child is not None:
                return child
            self._wait_oldest()

    def _feed(self, child, pieces, digest=None):
        """Stream pieces (an iterable) into child; return bytes fed.

        With a digest, each piece is hashed (on a tpool thread under
        eventlet) while the hub writes it and reads the next one; a
        piece's hash starts only once the previous one is done, so the
        digest sees the pieces in order. No hash is still running when
        this returns or raises.
        """
        fed = 0
        try:
            for piece in pieces:
                if digest is not None:
                    digest.update_beside(piece)
                if not child.feed(piece):
                    hub_safe.give_way()
                fed += len(piece)
        except _ChildGone:
            # The child exited before taking everything: its status and
            # stderr explain why (finish raises); if it claims success
            # the short write is still an error.
            self._active.remove(child)
            child.finish()
            raise exceptions.BackendException(
                'sheepdog `vdi write` of %s at offset %d stopped reading '
                'after %d of %d bytes' % (self.name, child.offset,
                                          child.sent, child.length))
        finally:
            if digest is not None:
                digest.settle()
        child.end_input()
        return fed

    def abort(self):
        """Kill and reap every writer still alive."""
        while self._active:
            self._active.popleft().close()

    # the two upload shapes --------------------------------------------

    def write_known(self, source, digest, image_size):
        """Upload exactly image_size bytes; Invalid when the data differs.

        Writers for the next chunks are spawned ahead, up to the
        concurrency limit and as the write budget allows, so their
        start-up overlaps this chunk's data.
        """
        self._create(image_size)
        chunk = self.settings.chunk_size
        bounds = [(offset, min(chunk, image_size - offset))
                  for offset in range(0, image_size, chunk)]
        spawned = 0
        written = 0
        for index, (offset, length) in enumerate(bounds):
            self._reap_finished()
            while (spawned < len(bounds) and
                   self._try_spawn(*bounds[spawned]) is not None):
                spawned += 1
                # A fork holds the hub for a few ms: not N of them in a row.
                hub_safe.give_way()
            if spawned <= index:
                self._spawn(offset, length)
                spawned += 1
            child = [c for c in self._active if c.offset == offset][0]
            written += self._feed(child, self._pieces(source, length,
                                                      written), digest)
        extra = source.read(1)
        if extra:
            raise exceptions.Invalid(
                message='image data is larger than the %d bytes announced'
                % image_size)
        self.finish_all()
        return written

    def _pieces(self, source, length, written):
        read_size = self.settings.read_size
        left = length
        while left > 0:
            piece = source.read(min(read_size, left))
            if not piece:
                raise exceptions.Invalid(
                    message='image data ended after %d of the %d bytes '
                    'announced' % (written + length - left,
                                   self.size))
            left -= len(piece)
            yield piece

    def write_unknown(self, source, digest):
        """Upload data of unknown size: grow the VDI chunk by chunk.

        A VDI cannot be shrunk, so a chunk's length must be known before
        the VDI grows for it: each chunk is collected in memory (at most
        chunk_size bytes) and then written while the next one is read.
        """
        chunk = self.settings.chunk_size
        read_size = self.settings.read_size
        offset = 0
        while True:
            pieces = []
            length = 0
            try:
                while length < chunk:
                    piece = source.read(min(read_size, chunk - length))
                    if not piece:
                        break
                    digest.update_beside(piece)
                    pieces.append(piece)
                    length += len(piece)
            finally:
                digest.settle()
            if not self.created:
                self._create(length)
            elif length:
                self._grow(offset + length)
            if length:
                child = self._spawn(offset, length)
                self._feed(child, pieces)
                del pieces
                offset += length
            if length < chunk:
                break
        self.finish_all()
        return offset

    def finish_all(self):
        while self._active:
            self._wait_oldest()
