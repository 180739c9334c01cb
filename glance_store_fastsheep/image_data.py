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
``client.Client.write``, whichever client writes.
"""

from glance_store_fastsheep import hub_safe

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

    Pieces are at most read-size bytes and, under eventlet, each is
    hashed on a tpool thread: md5 of even one 1 MiB piece holds a CPU for
    over a millisecond, and a whole 64 MiB chunk at once would hold every
    other request for tens of milliseconds (Pike's driver does that).
    """

    def __init__(self, hashers, verifier):
        self.hashers = hashers
        self.verifier = verifier
        self._jobs = hub_safe.InOrder()

    def update(self, piece):
        for hasher in self.hashers:
            hasher.update(piece)
        if self.verifier is not None:
            self.verifier.update(piece)

    def update_beside(self, piece):
        """Start hashing piece (off the hub) once the previous one is done.

        The caller goes on with its own work (writing this piece, reading
        the next) meanwhile; pieces are hashed in the order given.
        """
        self._jobs.start(self.update, piece)

    def settle(self):
        """Return once every piece given so far has been hashed."""
        self._jobs.settle()
