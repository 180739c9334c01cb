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
take turns. This reader talks to the location's sheep directly, on one
TCP connection: it looks the VDI up (``GET_VDI_INFO``), reads the inode's
first bytes and only the ``data_vdi_id`` entries of the range asked for
(4 bytes per object), and keeps a bounded number of ``READ_OBJ``
requests in flight, matched to their responses by id. Bytes are yielded
in order, in read-size pieces, out of a fixed set of reused buffers.

A ``data_vdi_id`` entry names the VDI that owns the object: the image
itself, or the parent of a clone or a snapshot, whose object is then
read; 0 is a hole, yielded as zeros without asking sheep.

Plain blocking sockets are right under native threads (uWSGI); under an
eventlet-patched glance-api the ``socket`` module is eventlet's, so
every wait goes through the hub. The choice is made when the connection
is opened, as everywhere in this driver.

Before the first byte is yielded, a cluster that answers with another
protocol version or a result code this reader does not know makes the
download fall back to ``dog`` (logged once per cluster and reason).
After it, every fault is a ``BackendException``, as on the ``dog`` path;
sheep's retryable results are retried within the transfer timeout.
"""

import collections
import socket
import struct
import threading

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import units

from glance_store_fastsheep import hub_safe
from glance_store_fastsheep import sheep_proto

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
# data_vdi_id entries read per inode request: 64 KiB covers 64 GiB of
# image at the default object size.
TABLE_ENTRIES = 16384
# Response proto_ver values of sheep's public protocol: sheep 1.0 leaves
# the field 0 in its responses; a later sheep may fill in its version.
ACCEPTED_VERSIONS = (0, sheep_proto.PROTO_VER)
# Pause before the first retry of a retryable result, doubled up to
# MAX_RETRY_PAUSE; retries stop at the transfer timeout.
FIRST_RETRY_PAUSE = 0.02
MAX_RETRY_PAUSE = 1.0

_UINT32 = struct.Struct('<I')


class Unsupported(Exception):
    """The cluster speaks a protocol this reader does not: use ``dog``."""


class Unreachable(exceptions.BackendException):
    """No connection to the sheep could be made."""


class _Request(object):
    """One request in flight, and where its response data goes."""

    __slots__ = ('opcode', 'oid', 'offset', 'length', 'view', 'flags',
                 'header_data', 'result', 'vdi_id', 'done', 'deadline',
                 'pause')

    def __init__(self, opcode, oid=0, offset=0, length=0, view=None,
                 flags=0, header_data=None):
        self.opcode = opcode
        self.oid = oid
        self.offset = offset
        self.length = length
        self.view = view
        self.flags = flags
        # GET_VDI_INFO: a function of the id giving header + data.
        self.header_data = header_data
        self.result = None
        self.vdi_id = None  # what GET_VDI_INFO answered
        self.done = False
        self.deadline = None
        self.pause = FIRST_RETRY_PAUSE

    def packed(self, req_id):
        if self.header_data is not None:
            return self.header_data(req_id)
        return sheep_proto.pack_read(req_id, self.oid, self.offset,
                                     self.length, self.flags)

    @property
    def expected(self):
        """Bytes of response data a success carries."""
        return self.length if self.opcode == sheep_proto.OP_READ_OBJ else 0

    def describe(self):
        if self.opcode == sheep_proto.OP_READ_OBJ:
            return 'READ_OBJ of %d bytes at %d of object %016x' % (
                self.length, self.offset, self.oid)
        return 'GET_VDI_INFO'


class Session(object):
    """One connection to a sheep and the requests in flight on it."""

    def __init__(self, address, port, name, connect_timeout, idle_timeout):
        self.address = address
        self.port = port
        self.name = name
        self.idle_timeout = idle_timeout
        self._next_id = 1
        self._outstanding = {}
        self._header = bytearray(sheep_proto.HEADER_SIZE)
        self._header_view = memoryview(self._header)
        self.sock = None
        try:
            # socket is eventlet's green module when glance-api is
            # monkey-patched: every wait below then goes through the hub.
            self.sock = socket.create_connection((address, port),
                                                 connect_timeout)
            self.sock.settimeout(idle_timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except (socket.error, OSError) as exc:
            self.close()
            raise Unreachable(
                'cannot connect to sheep at %s:%s to read %s: %s'
                % (address, port, name, exc))

    def close(self):
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()

    def _where(self):
        return 'sheep at %s:%s (reading %s)' % (
            self.address, self.port, self.name)

    def send(self, requests):
        """Send requests in one write; each gets a fresh id."""
        packed = []
        for request in requests:
            req_id = self._next_id
            self._next_id = (self._next_id % 0xffffffff) + 1
            self._outstanding[req_id] = request
            request.done = False
            packed.append(request.packed(req_id))
        try:
            self.sock.sendall(b''.join(packed))
        except socket.timeout:
            raise exceptions.BackendException(
                '%s took no request for %ss' % (self._where(),
                                                self.idle_timeout))
        except (socket.error, OSError) as exc:
            raise exceptions.BackendException(
                'connection to %s lost while sending: %s'
                % (self._where(), exc))

    def _receive_into(self, view, what):
        got = 0
        wanted = len(view)
        while got < wanted:
            try:
                count = self.sock.recv_into(view[got:], wanted - got)
            except socket.timeout:
                raise exceptions.BackendException(
                    '%s sent nothing for %ss while %d of %d bytes of %s '
                    'were still due' % (self._where(), self.idle_timeout,
                                        wanted - got, wanted, what))
            except (socket.error, OSError) as exc:
                raise exceptions.BackendException(
                    'connection to %s lost after %d of %d bytes of %s: %s'
                    % (self._where(), got, wanted, what, exc))
            if not count:
                raise exceptions.BackendException(
                    '%s closed the connection after %d of %d bytes of %s'
                    % (self._where(), got, wanted, what))
            got += count

    def receive_one(self):
        """Read one response into its request; return the request.

        Every field is checked before any data is read: the data of a
        success goes into the request's own buffer and must be exactly
        the length asked for, so nothing sized by sheep is allocated and
        no byte lands elsewhere.
        """
        self._receive_into(self._header_view, 'a response header')
        response = sheep_proto.unpack_response(self._header)
        if response.proto_ver not in ACCEPTED_VERSIONS:
            raise Unsupported('%s answered with protocol version 0x%02x; '
                              'this reader speaks 0x%02x'
                              % (self._where(), response.proto_ver,
                                 sheep_proto.PROTO_VER))
        request = self._outstanding.pop(response.id, None)
        if request is None:
            raise sheep_proto.ProtocolError(
                '%s answered request id %d, which is not in flight'
                % (self._where(), response.id))
        if response.opcode != request.opcode:
            raise sheep_proto.ProtocolError(
                '%s answered %s with opcode 0x%02x'
                % (self._where(), request.describe(), response.opcode))
        if response.result != sheep_proto.SUCCESS:
            if response.data_length:
                raise sheep_proto.ProtocolError(
                    '%s sent %d bytes with %s to %s'
                    % (self._where(), response.data_length,
                       sheep_proto.result_text(response.result),
                       request.describe()))
        elif response.data_length != request.expected:
            raise sheep_proto.ProtocolError(
                '%s sent %d bytes for %s'
                % (self._where(), response.data_length,
                   request.describe()))
        elif response.data_length:
            self._receive_into(request.view[:response.data_length],
                               request.describe())
        request.result = response.result
        request.vdi_id = response.vdi_id
        return request

    def complete(self, request):
        """Pump responses until request is answered with success.

        Responses of other requests land in their own buffers meanwhile.
        A retryable result sends that request again after a pause, until
        the transfer timeout since its first failure.
        """
        while not request.done:
            answered = self.receive_one()
            self._settle(answered)

    def _settle(self, request):
        result = request.result
        if result == sheep_proto.SUCCESS:
            request.done = True
            return
        if result == sheep_proto.VER_MISMATCH or (
                result not in sheep_proto.RESULTS):
            raise Unsupported('%s answered %s to %s' % (
                self._where(), sheep_proto.result_text(result),
                request.describe()))
        if result in sheep_proto.RETRYABLE:
            now = timeutils.now()
            if request.deadline is None:
                request.deadline = now + self.idle_timeout
            if now < request.deadline:
                LOG.warning('%s answered %s to %s; retrying in %.2fs',
                            self._where(), sheep_proto.result_text(result),
                            request.describe(), request.pause)
                hub_safe.sleep(request.pause)
                request.pause = min(request.pause * 2, MAX_RETRY_PAUSE)
                self.send([request])
                return
            raise exceptions.BackendException(
                '%s kept answering %s to %s for %ss' % (
                    self._where(), sheep_proto.result_text(result),
                    request.describe(), self.idle_timeout))
        if result in (sheep_proto.NO_VDI, sheep_proto.NO_TAG):
            raise exceptions.NotFound(
                message='sheepdog image %s not found by %s: %s'
                % (self.name, self._where(),
                   sheep_proto.result_text(result)))
        raise exceptions.BackendException('%s answered %s to %s' % (
            self._where(), sheep_proto.result_text(result),
            request.describe()))

    def call(self, request):
        self.send([request])
        self.complete(request)
        return request


class _Table(object):
    """The data_vdi_id entries of a range, read a chunk at a time."""

    def __init__(self, session, vid, last_index):
        self.session = session
        self.vid = vid
        self.last_index = last_index
        self.first = None
        self.count = 0
        self.buf = None

    def owner(self, index):
        """The VDI id owning object index; 0 for a hole."""
        if self.first is None or not (
                self.first <= index < self.first + self.count):
            self._load(index)
        return _UINT32.unpack_from(self.buf, 4 * (index - self.first))[0]

    def _load(self, index):
        count = min(TABLE_ENTRIES, self.last_index - index + 1)
        if self.buf is None or len(self.buf) < 4 * count:
            self.buf = bytearray(4 * count)
        self.session.call(_Request(
            sheep_proto.OP_READ_OBJ, sheep_proto.vdi_oid(self.vid),
            sheep_proto.INODE_DATA_INDEX_OFFSET + 4 * index, 4 * count,
            memoryview(self.buf)[:4 * count], sheep_proto.FLAG_CMD_DIRECT))
        self.first = index
        self.count = count


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


def _look_up(session, name, snapid=0, tag=''):
    """(vdi id, inode fields) of a VDI whose object table is flat."""
    lookup = session.call(_Request(
        sheep_proto.OP_GET_VDI_INFO,
        header_data=lambda req_id: sheep_proto.pack_vdi_info(
            req_id, name, snapid, tag)))
    vid = lookup.vdi_id
    fields_buf = bytearray(sheep_proto.INODE_FIELDS_SIZE)
    session.call(_Request(
        sheep_proto.OP_READ_OBJ, sheep_proto.vdi_oid(vid), 0,
        len(fields_buf), memoryview(fields_buf),
        sheep_proto.FLAG_CMD_DIRECT))
    inode = sheep_proto.InodeFields(fields_buf)
    if inode.store_policy != 0:
        raise Unsupported('sheepdog image %s keeps its object table '
                          'in a B-tree (store policy %d)'
                          % (name, inode.store_policy))
    return vid, inode


def unowned_objects(settings, address, port, name, length):
    """Indexes of the objects in VDI name's first length bytes not its own.

    ``dog vdi write`` creates each object it writes and then records it
    in the inode's ``data_vdi_id`` table with a second, separate write.
    On sheepdog 1.0.1 that second write can be lost when a sheep dies
    while the inode object is recovered, although ``dog`` exits 0: the
    object then reads as a hole (zeros). A freshly uploaded image owns
    every object it was written to, so any index returned here is data
    the cluster will not give back. Raises Unsupported for a cluster
    this module cannot read the table of.
    """
    if length <= 0:
        return []
    session = Session(address, port, name, settings.command_timeout,
                      settings.transfer_timeout)
    try:
        vid, inode = _look_up(session, name)
        last = (length - 1) // inode.object_size
        table = _Table(session, vid, last)
        return [index for index in range(last + 1)
                if table.owner(index) != vid]
    except sheep_proto.ProtocolError as exc:
        raise exceptions.BackendException(
            'reading the object table of sheepdog image %s failed: %s'
            % (name, exc))
    finally:
        session.close()


def read_range(settings, address, port, name, offset, length, snapid=0,
               tag=''):
    """Yield length bytes of VDI name from offset, in read-size pieces.

    snapid or tag select a snapshot; the default is the current VDI.
    Raises Unsupported only before the first piece.
    """
    if length <= 0:
        return
    delivered = 0
    session = Session(address, port, name, settings.command_timeout,
                      settings.transfer_timeout)
    try:
        vid, inode = _look_up(session, name, snapid, tag)
        if offset + length > inode.vdi_size:
            raise exceptions.BackendException(
                'sheepdog image %s is %d bytes; cannot read %d at %d'
                % (name, inode.vdi_size, length, offset))
        object_size = inode.object_size
        request_size = min(object_size, max(settings.read_size,
                                            MIN_REQUEST))
        depth = max(MIN_IN_FLIGHT, IN_FLIGHT_BYTES // request_size)
        piece_size = min(settings.read_size, request_size)
        table = _Table(session, vid, (offset + length - 1) // object_size)
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
                    request = _Request(
                        sheep_proto.OP_READ_OBJ,
                        sheep_proto.data_oid(owner, index), within, count,
                        free.pop())
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
    except Unsupported as exc:
        if delivered:
            raise exceptions.BackendException(
                'read of sheepdog image %s failed after %d of %d bytes: %s'
                % (name, delivered, length, exc))
        raise
    except sheep_proto.ProtocolError as exc:
        raise exceptions.BackendException(
            'read of sheepdog image %s failed after %d of %d bytes: %s'
            % (name, delivered, length, exc))
    finally:
        session.close()


_logged = set()
_logged_lock = threading.Lock()


def _log_fallback(address, port, exc):
    """Warn once per cluster and reason; later fallbacks at debug."""
    key = (address, port, str(exc))
    with _logged_lock:
        first = key not in _logged
        _logged.add(key)
    if first:
        LOG.warning('Native sheep reader not usable with %s:%s: %s; '
                    'downloads from it use `dog` instead', address, port,
                    exc)
    else:
        LOG.debug('Native reader falls back to `dog` for %s:%s: %s',
                  address, port, exc)


class NativeStream(object):
    """The iterable ``Store.get`` returns for the native reader.

    Nothing is connected until the first item is asked for.
    ``fallback()`` builds the ``dog`` stream that serves the download if
    the cluster turns out not to speak this reader's protocol before the
    first byte. ``close()`` (a client that hung up) and garbage collection
    close the socket, or the fallback stream.
    """

    def __init__(self, settings, address, port, name, offset, length,
                 fallback):
        self._args = (settings, address, port, name, offset, length,
                      fallback)
        self._gen = None

    def __iter__(self):
        if self._gen is None:
            # A module-level generator: see download.ReadStream.
            self._gen = _stream(*self._args)
        return self._gen

    def close(self):
        if self._gen is not None:
            self._gen.close()


def _stream(settings, address, port, name, offset, length, fallback):
    native = read_range(settings, address, port, name, offset, length)
    try:
        try:
            first = next(native)
        except StopIteration:
            return
        except Unsupported as exc:
            _log_fallback(address, port, exc)
            native = None
        if native is not None:
            yield first
            for piece in native:
                yield piece
            LOG.debug('Read %d bytes of %s at offset %d over sheep\'s '
                      'protocol', length, name, offset)
            return
    finally:
        if native is not None:
            native.close()
    stream = fallback()
    try:
        for piece in stream:
            yield piece
    finally:
        stream.close()
