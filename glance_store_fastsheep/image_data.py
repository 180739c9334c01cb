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
"""The image data glance hands to a store's ``add``, as both clients take it.

``Source`` turns glance's file or iterator into read-size pieces and
``Digest`` hashes them in order; the store builds both and gives them to
``client.Client.write``, whichever client writes. Neither client wraps
or takes them apart again: what glance's data goes through on its way
to sheep is here, once.
"""

import sys
import threading

from six.moves import queue

from glance_store_fastsheep import hub_safe

# Pieces waiting for a hash's thread (native threads): enough to keep it
# busy while an object is sent, few enough to bound memory.
HASH_QUEUE_PIECES = 16

# size -> size zero bytes, one buffer for the whole process (zeros).
_ZEROS = {}


def zeros(size):
    """size zero bytes, one buffer shared by every transfer of the process.

    An upload compares each piece with zeros, so as not to write an
    all-zero object: a buffer of its own cost each upload a read size of
    memory, 16 MiB of RSS for 16 uploads at once. Callers pass their
    read size, so that few sizes are kept.
    """
    piece = _ZEROS.get(size)
    if piece is None:
        piece = _ZEROS.setdefault(size, b'\0' * size)
    return piece


class Source(object):
    """The image data as read-size pieces, whatever glance handed us.

    glance passes a file-like object (``read(n)``, possibly returning
    less) or, when copying between stores, an iterator of arbitrary
    pieces; both come out here as pieces of at most ``size`` bytes.

    An iterator's item is cut at an offset into it, each byte copied
    once into its piece: keeping the rest as a new bytes object would
    copy it again for every piece (2 GiB of copies to cut a 64 MiB item
    into 1 MiB pieces). An item that fits a piece is passed on as is.
    """

    def __init__(self, image_file):
        self._read = getattr(image_file, 'read', None)
        self._iter = None if self._read else iter(image_file)
        self._pending = b''
        self._offset = 0

    def read(self, size):
        """At most size bytes; b'' only at the end of the data."""
        if self._read is not None:
            return self._read(size)
        while self._offset >= len(self._pending):
            try:
                self._pending = next(self._iter)
            except StopIteration:
                self._pending, self._offset = b'', 0
                return b''
            self._offset = 0
        start = self._offset
        if not start and len(self._pending) <= size:
            piece = self._pending
        else:
            piece = self._pending[start:start + size]
        self._offset = start + len(piece)
        return piece


class Digest(object):
    """The checksum, multihash and verifier, fed piece by piece in order.

    Two ways to feed it, one per client's shape of upload:

    * ``update_beside``: each piece hashed by every hash in turn, while
      the caller goes on, the next piece once the previous one is done
      (the dog client, which streams a piece to a pipe and forgets it).
    * ``feed`` and ``end_object``: the pieces of one object handed to a
      worker per hash (the native client, which holds an object until
      sheep acknowledged it): md5 and sha512 of a piece run at once on
      two cores while the object is sent, not one after the other.
      ``objects_hashed`` tells the writer which objects it may let go of.

    Pieces are at most read-size bytes and, under eventlet, hashing runs
    on tpool threads: md5 of even one 1 MiB piece holds a CPU for over a
    millisecond, and a whole 64 MiB chunk at once would hold every other
    request for tens of milliseconds (Pike's driver does that).
    """

    def __init__(self, hashers, verifier):
        self.hashers = hashers
        self.verifier = verifier
        self._jobs = hub_safe.InOrder()
        # One per hash and the verifier, made at the first piece fed
        # (whether eventlet is in use is decided then: glance may patch
        # after it built the store), dropped by settle.
        self._workers = None
        # Objects ended (end_object calls), and those known hashed by
        # catch_up.
        self._ended = 0
        self._caught_up = 0

    def _updates(self):
        updates = [hasher.update for hasher in self.hashers]
        if self.verifier is not None:
            updates.append(self.verifier.update)
        return updates

    def update(self, piece):
        for update in self._updates():
            update(piece)

    def update_beside(self, piece):
        """Start hashing piece (off the hub) once the previous one is done.

        The caller goes on with its own work (writing this piece, reading
        the next) meanwhile; pieces are hashed in the order given.
        """
        self._jobs.start(self.update, piece)

    def feed(self, piece):
        """Hand piece, the next of the current object, to every hash."""
        if self._workers is None:
            kind = _TpoolWorker if hub_safe.is_green() else _ThreadWorker
            self._workers = [kind(update) for update in self._updates()]
        for worker in self._workers:
            worker.feed(piece)

    def end_object(self):
        """End an object: its hashing starts, the one before's has ended.

        Under eventlet the object's pieces go to each hash's next tpool
        job, which starts once that hash's previous job is done, so every
        hash sees the pieces in order; under native threads the threads
        have them already and this waits until they took the previous
        object's. Either way the caller goes on once every object but
        this one is hashed (``objects_hashed``): hashing runs at most one
        object behind.
        """
        self._ended += 1
        for worker in self._workers or ():
            worker.end_object()

    def objects_hashed(self):
        """How many objects, from the first, every hash has seen."""
        if not self._workers:  # no hash, or all settled
            return self._ended
        return max(self._ended - 1, self._caught_up)

    def catch_up(self):
        """Return once every object ended so far is hashed."""
        for worker in self._workers or ():
            worker.catch_up()
        self._caught_up = self._ended

    def settle(self):
        """Return once every piece given was hashed; raise a hashing error.

        Ends the workers too (their threads or greenthreads), so call it
        when done, errors included, before the digest is read or dropped.
        """
        workers, self._workers = self._workers, None
        try:
            self._jobs.settle()
        finally:
            # Every hash's last pieces started before any is waited for,
            # so that they are hashed side by side.
            workers = workers or ()
            started = [worker.start_rest() for worker in workers]
            # Every worker ended, whatever the errors.
            ended = [worker.settle() for worker in workers]
            for error in started + ended:
                if error is not None:
                    raise error[1]


def _update_all(update, pieces):
    for piece in pieces:
        update(piece)


class _ThreadWorker(object):
    """One thread feeding one hash its pieces in order (native threads).

    Its queue is bounded (``HASH_QUEUE_PIECES``): a feed waits while the
    thread is that far behind, so a slow hash holds back the upload
    instead of its memory growing.
    """

    def __init__(self, update):
        self.update = update
        self.queue = queue.Queue(HASH_QUEUE_PIECES)
        self.error = None
        # Pieces taken off the queue and hashed (or skipped after an
        # error), under the condition the writer waits on.
        self.done = 0
        self.progress = threading.Condition()
        # Pieces queued in all, and when the previous object ended.
        self.queued = 0
        self.previous = 0
        self.thread = threading.Thread(target=self._run)
        self.thread.daemon = True
        self.thread.start()

    def _run(self):
        while True:
            piece = self.queue.get()
            if piece is None:
                return
            if self.error is None:
                try:
                    self.update(piece)
                except Exception:
                    self.error = sys.exc_info()
            piece = None  # not held while waiting for the next one
            with self.progress:
                self.done += 1
                self.progress.notify_all()

    def _wait_for(self, count):
        """Return once count pieces were taken and hashed."""
        with self.progress:
            while self.done < count:
                self.progress.wait()

    def feed(self, piece):
        self.queue.put(piece)
        self.queued += 1

    def end_object(self):
        self._wait_for(self.previous)
        self.previous = self.queued

    def catch_up(self):
        self._wait_for(self.queued)

    def start_rest(self):
        """Nothing: the thread has every piece fed already."""
        return None

    def settle(self):
        """Stop the thread once it hashed everything; its error, if any."""
        self.queue.put(None)
        self.thread.join()
        return self.error


class _TpoolWorker(object):
    """One hash fed an object at a time on a tpool thread (eventlet).

    The pieces of the object being filled are kept and hashed in one
    tpool job once it ended, while it is sent: a job per piece and hash
    would cost the hub a switch and a tpool round trip each. The hash
    holds at most one object beside the one being filled.
    """

    def __init__(self, update):
        self.update = update
        self.jobs = hub_safe.InOrder()
        self.batch = []

    def feed(self, piece):
        self.batch.append(piece)

    def end_object(self):
        """Start hashing the pieces fed since the last job, if any.

        Waits for this hash's previous job first, raising its error.
        """
        batch, self.batch = self.batch, []
        if batch:
            self.jobs.start(_update_all, self.update, batch)

    def catch_up(self):
        self.jobs.wait()

    def start_rest(self):
        """Start hashing the pieces fed since the last job.

        Returns the error of the job before, if any.
        """
        try:
            self.end_object()
        except Exception:
            return sys.exc_info()
        return None

    def settle(self):
        """Wait for the last job, end the greenthread; the error, if any.

        The greenthread is ended whatever the error, so none outlives
        the upload.
        """
        try:
            self.jobs.settle()
        except Exception:
            return sys.exc_info()
        return None
