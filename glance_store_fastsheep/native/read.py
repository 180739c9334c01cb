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
"""Downloads over sheep's own protocol, several object reads in flight.

``dog vdi read`` reads the whole inode (a little over 4 MiB) before its
first data byte and then one object at a time, writing each to its pipe
before asking for the next: the cluster, the network and the consumer
take turns. This reader talks to sheep directly: it looks the VDI up
(``GET_VDI_INFO``) at the location's sheep, reads the inode's first
bytes and only the ``data_vdi_id`` entries of the range asked for (4
bytes per object), and keeps a bounded number of ``READ_OBJ`` requests
in flight, matched to their responses by id. Each object read goes to a
node holding a copy of it where the placement is known (``cluster``:
one connection a node), else to the location's sheep. Bytes are yielded
in order, in read-size pieces, out of a fixed set of reused buffers.

A ``data_vdi_id`` entry names the VDI that owns the object: the image
itself, or the parent of a clone or a snapshot, whose object is then
read; 0 is a hole, yielded as zeros without asking sheep.

Plain blocking sockets are right under native threads (uWSGI); under an
eventlet-patched glance-api the ``socket`` module is eventlet's, so
every wait goes through the hub. The choice is made when the connection
is opened, as everywhere in this driver.

A cluster that answers with another protocol version or a result code
this reader does not know raises ``errors.Unsupported``, which names
the ``dog`` client as the way out; there is no silent fallback. Every
other fault is a ``BackendException``, as on the ``dog`` path; sheep's
retryable results are retried within the transfer timeout.
"""

import collections

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import units

from glance_store_fastsheep import hub_safe
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import failover
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import vdi as vdi_ops

LOG = logging.getLogger(__name__)

# Bytes of READ_OBJ requests in flight per download, the reader's whole
# buffer memory: each request reads into a buffer of its own, reused for
# the next request once its bytes were yielded.
IN_FLIGHT_BYTES = 8 * units.Mi
# Size bounds of one READ_OBJ request: small requests cost sheep and
# Python a round of work per few bytes; a request never crosses an
# object boundary, so the object size is the upper bound.
MIN_REQUEST = 256 * units.Ki
MIN_IN_FLIGHT = 2
# Requests in flight at most, whatever their size: each is a Python
# object here and a round of work for sheep. Objects smaller than
# MIN_REQUEST (sheep serves any block_size_shift a NEW_VDI carried, down
# to 2-byte objects) would otherwise put millions in flight.
MAX_IN_FLIGHT = 256


def _segments(table, offset, length, object_size, request_size):
    """(owner vid, object index, offset in object, length), in order."""
    position = offset
    end = offset + length
    while position < end:
        index, within = divmod(position, object_size)
        count = min(request_size - within % request_size,
                    object_size - within, end - position)
        yield table.owner(index), index, within, count
        position += count


class _RangeRead(object):
    """One read_range's plan and the requests it has in flight.

    ``plan`` looks the VDI up and sizes the requests; ``send_ahead`` keeps
    up to ``depth`` buffers of requests in flight (and twice as many
    segments, holes included, planned); ``next_pieces`` yields the oldest
    segment's bytes once sheep answered, and gives its buffer back.
    ``delivered`` counts what was yielded, for the byte-count check and
    the errors.
    """

    def __init__(self, session, name):
        self.session = session
        self.name = name
        self.delivered = 0
        self.pending = collections.deque()  # (request or None, count)
        self.free = []
        self.buffers = 0
        self.zeros = None

    def plan(self, settings, offset, length, snapid, tag):
        session = self.session
        vdi = vdi_ops.look_up(session, self.name, snapid, tag)
        if not snapid and not tag:
            # The markers are the current VDI's; a snapshot is never
            # deleted by this driver.
            markers.check_readable(session, self.name, vdi)
        vid, inode = vdi.vid, vdi.inode
        # Each object read to a node holding a copy: no live gateway
        # then waits on a frozen one. Not the data of an erasure-coded
        # VDI: a node holds a strip of it, only a gateway rebuilds it.
        session.route_reads(vid, inode.nr_copies,
                            data=not inode.copy_policy)
        if offset + length > inode.vdi_size:
            raise exceptions.BackendException(
                'sheepdog image %s is %d bytes; cannot read %d at %d'
                % (self.name, inode.vdi_size, length, offset))
        object_size = inode.object_size
        self.request_size = min(object_size, max(settings.read_size,
                                                 MIN_REQUEST))
        self.depth = max(MIN_IN_FLIGHT, min(
            MAX_IN_FLIGHT, IN_FLIGHT_BYTES // self.request_size))
        self.piece_size = min(settings.read_size, self.request_size)
        table = vdi_ops.Table(session, vid,
                              (offset + length - 1) // object_size)
        self.segments = _segments(table, offset, length, object_size,
                                  self.request_size)
        self.upcoming = next(self.segments, None)

    def _buffer(self):
        """A free buffer, a new one while under depth, else None."""
        if not self.free and self.buffers < self.depth:
            self.free.append(memoryview(bytearray(self.request_size)))
            self.buffers += 1
        return self.free.pop() if self.free else None

    def send_ahead(self):
        """Plan segments and send their reads while buffers allow."""
        batch = []
        while (self.upcoming is not None and
               len(self.pending) < 2 * self.depth):
            owner, index, within, count = self.upcoming
            if owner == 0:
                self.pending.append((None, count))
            else:
                view = self._buffer()
                if view is None:
                    break
                request = ops.Request(
                    proto.OP_READ_OBJ, proto.data_oid(owner, index),
                    within, count, view)
                batch.append(request)
                self.pending.append((request, count))
            self.upcoming = next(self.segments, None)
        if batch:
            self.session.send(batch)

    def next_pieces(self):
        """The pieces of the oldest planned segment, in order."""
        request, count = self.pending.popleft()
        if request is None:
            return self._zeros(count)
        self.session.complete(request)
        hub_safe.give_way()
        return self._data(request.view, count)

    def _zeros(self, count):
        """A hole: zeros, without asking sheep."""
        if self.zeros is None:
            self.zeros = b'\0' * self.piece_size
        while count:
            take = min(count, self.piece_size)
            count -= take
            self.delivered += take
            yield self.zeros if take == self.piece_size else self.zeros[:take]

    def _data(self, view, count):
        """An answered read's bytes; then its buffer is free again."""
        start = 0
        while start < count:
            take = min(count - start, self.piece_size)
            piece = view[start:start + take].tobytes()
            start += take
            self.delivered += take
            yield piece
        self.free.append(view)


def read_range(settings, address, port, name, offset, length, snapid=0,
               tag='', transfer=None):
    """Yield length bytes of VDI name from offset, in read-size pieces.

    snapid or tag select a snapshot; the default is the current VDI.
    Unsupported after the first piece is a BackendException like any
    other fault mid-stream. transfer (a ``stream.Transfer``) learns how
    many times the read failed over.
    """
    if length <= 0:
        return
    # Requests in flight are resent to another sheep if this one fails:
    # each lands in its own buffer, yielded in order, so no byte is
    # lost, repeated or misplaced.
    session = failover.FailoverSession(settings, name, (address, port))
    read = _RangeRead(session, name)
    try:
        read.plan(settings, offset, length, snapid, tag)
        while True:
            read.send_ahead()
            if not read.pending:
                break
            for piece in read.next_pieces():
                yield piece
        if read.delivered != length:
            raise exceptions.BackendException(
                'native read of %s yielded %d of %d bytes'
                % (name, read.delivered, length))
    except errors.Unsupported as exc:
        if read.delivered:
            raise exceptions.BackendException(
                'read of sheepdog image %s failed after %d of %d bytes: %s'
                % (name, read.delivered, length, exc))
        raise
    finally:
        if transfer is not None:
            transfer.failovers = session.failovers
        session.close()


def pieces(settings, address, port, name, offset, length, transfer=None):
    """The native download, for ``stream.Stream``: read_range, logged."""
    native = read_range(settings, address, port, name, offset, length,
                        transfer=transfer)
    try:
        for piece in native:
            yield piece
        LOG.debug('Read %d bytes of %s at offset %d over sheep\'s '
                  'protocol', length, name, offset)
    finally:
        native.close()
