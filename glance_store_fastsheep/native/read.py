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
this reader does not know raises ``connection.Unsupported``, which names
the ``dog`` client as the way out; there is no silent fallback. Every
other fault is a ``BackendException``, as on the ``dog`` path; sheep's
retryable results are retried within the transfer timeout.
"""

import collections

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import units

from glance_store_fastsheep import hub_safe
from glance_store_fastsheep.native import cluster
from glance_store_fastsheep.native import connection
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


def read_range(settings, address, port, name, offset, length, snapid=0,
               tag=''):
    """Yield length bytes of VDI name from offset, in read-size pieces.

    snapid or tag select a snapshot; the default is the current VDI.
    Unsupported after the first piece is a BackendException like any
    other fault mid-stream.
    """
    if length <= 0:
        return
    delivered = 0
    # Requests in flight are resent to another sheep if this one fails:
    # each lands in its own buffer, yielded in order, so no byte is
    # lost, repeated or misplaced.
    session = cluster.FailoverSession(settings, name, (address, port))
    try:
        vdi = vdi_ops.look_up(session, name, snapid, tag)
        vid, inode = vdi.vid, vdi.inode
        # Each object read to a node holding a copy: no live gateway
        # then waits on a frozen one. Not the data of an erasure-coded
        # VDI: a node holds a strip of it, only a gateway rebuilds it.
        session.route_reads(vid, inode.nr_copies,
                            data=not inode.copy_policy)
        if offset + length > inode.vdi_size:
            raise exceptions.BackendException(
                'sheepdog image %s is %d bytes; cannot read %d at %d'
                % (name, inode.vdi_size, length, offset))
        object_size = inode.object_size
        request_size = min(object_size, max(settings.read_size,
                                            MIN_REQUEST))
        depth = max(MIN_IN_FLIGHT, IN_FLIGHT_BYTES // request_size)
        piece_size = min(settings.read_size, request_size)
        table = vdi_ops.Table(session, vid,
                              (offset + length - 1) // object_size)
        segments = _segments(table, offset, length, object_size,
                             request_size)
        free = []
        buffers = 0
        pending = collections.deque()
        zeros = None
        upcoming = next(segments, None)
        while True:
            batch = []
            while upcoming is not None and len(pending) < 2 * depth:
                owner, index, within, count = upcoming
                if owner == 0:
                    pending.append((None, count))
                else:
                    if not free and buffers < depth:
                        free.append(memoryview(bytearray(request_size)))
                        buffers += 1
                    if not free:
                        break
                    request = connection.Request(
                        proto.OP_READ_OBJ, proto.data_oid(owner, index),
                        within, count, free.pop())
                    batch.append(request)
                    pending.append((request, count))
                upcoming = next(segments, None)
            if batch:
                session.send(batch)
            if not pending:
                break
            request, count = pending.popleft()
            if request is None:
                if zeros is None:
                    zeros = b'\0' * piece_size
                while count:
                    take = min(count, piece_size)
                    piece = zeros if take == piece_size else zeros[:take]
                    count -= take
                    delivered += take
                    yield piece
                continue
            session.complete(request)
            hub_safe.give_way()
            view = request.view
            start = 0
            while start < count:
                take = min(count - start, piece_size)
                piece = view[start:start + take].tobytes()
                start += take
                delivered += take
                yield piece
            free.append(view)
        if delivered != length:
            raise exceptions.BackendException(
                'native read of %s yielded %d of %d bytes'
                % (name, delivered, length))
    except connection.Unsupported as exc:
        if delivered:
            raise exceptions.BackendException(
                'read of sheepdog image %s failed after %d of %d bytes: %s'
                % (name, delivered, length, exc))
        raise
    except proto.ProtocolError as exc:
        raise exceptions.BackendException(
            'read of sheepdog image %s failed after %d of %d bytes: %s'
            % (name, delivered, length, exc))
    finally:
        session.close()


def pieces(settings, address, port, name, offset, length):
    """The native download, for ``stream.Stream``: read_range, logged."""
    native = read_range(settings, address, port, name, offset, length)
    try:
        for piece in native:
            yield piece
        LOG.debug('Read %d bytes of %s at offset %d over sheep\'s '
                  'protocol', length, name, offset)
    finally:
        native.close()
