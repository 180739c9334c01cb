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
"""One connection to one sheep, and the requests in flight on it.

``Connection.send`` gives each ``ops.Request`` a fresh id, so the
same request can be sent again after a retryable result (when
``retry.Retry`` says) or, later, to another sheep.
``Connection.outstanding`` is what was sent and not yet answered: the
set a failover would resend elsewhere.

Plain blocking sockets are right under native threads (uWSGI); under an
eventlet-patched glance-api the ``socket`` module is eventlet's, so
every wait goes through the hub. The choice is made when the connection
is opened, as everywhere in this driver.

Deadlines: every request sent must be answered within the stall
timeout of its sending (a frozen sheep, or a gateway waiting on a frozen
peer), measured with ``timeutils.now()`` (monotonic); ``Stalled`` then
says which request waited (the account is ``stall``'s). A lost or
stalled connection raises ``ConnectionLost`` (``errors``), which
``cluster`` answers by resending ``outstanding`` to another sheep. A
connection given up with requests in flight is handed over to
``given_up`` for its late answers.
"""

import copy
import socket

from oslo_utils import timeutils

from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import exchange
from glance_store_fastsheep.native import given_up
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import retry
from glance_store_fastsheep.native import stall

# Response proto_ver values of sheep's public protocol: sheep 1.0 leaves
# the field 0 in its responses; a later sheep may fill in its version.
ACCEPTED_VERSIONS = (0, proto.PROTO_VER)


class Connection(exchange.Exchange):
    """One connection to a sheep and the requests in flight on it.

    name is the image the session works on, for messages. Final results
    raise ``errors.error_for``'s exceptions; retryable ones are sent
    again as ``retry.Retry`` decides.
    stall_timeout (at most idle_timeout, which it defaults to) bounds
    the wait for each request's answer.
    """

    # Times this session's work moved to another sheep (see failover).
    failovers = 0
    # Whether an answer could not be read (receive_one raised a
    # ProtocolError or Unsupported): what follows on the stream cannot
    # be either, so the connection is never parked (see failover).
    garbled = False

    def __init__(self, address, port, name, connect_timeout, idle_timeout,
                 stall_timeout=None):
        self.address = address
        self.port = port
        self.name = name
        self.idle_timeout = idle_timeout
        if stall_timeout is None or stall_timeout > idle_timeout:
            stall_timeout = idle_timeout
        self.stall_timeout = stall_timeout
        self.retry = retry.Retry(idle_timeout)
        self._timeout = stall_timeout
        self.stall = stall.Stall(stall_timeout)
        self._next_id = 1
        self._outstanding = {}
        self._header = bytearray(proto.HEADER_SIZE)
        self._header_view = memoryview(self._header)
        self.sock = None
        try:
            # socket is eventlet's green module when glance-api is
            # monkey-patched: every wait below then goes through the hub.
            self.sock = socket.create_connection((address, port),
                                                 connect_timeout)
            self.sock.settimeout(stall_timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except (socket.error, OSError) as exc:
            self.close()
            raise errors.Unreachable(
                'cannot connect to sheep at %s:%s for %s: %s'
                % (address, port, name, exc))

    def close(self):
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()

    @property
    def outstanding(self):
        """The requests sent on this connection and not answered yet."""
        return list(self._outstanding.values())

    @property
    def node(self):
        return (self.address, self.port)

    def where(self):
        return 'sheep at %s:%s (%s)' % (self.address, self.port, self.name)

    def send(self, requests):
        """Send requests; each gets a fresh id.

        Headers go out together; a request's payload pieces are written
        as they are (no copy into one buffer). Every request is in
        ``outstanding`` before the first byte goes out, so that a
        connection lost mid-way leaves the whole batch to resend.
        """
        numbered = []
        for request in requests:
            req_id = self._next_id
            self._next_id = (self._next_id % 0xffffffff) + 1
            self._outstanding[req_id] = request
            request.done = False
            request.sent_at = None
            numbered.append((req_id, request))
        small = []
        unstamped = []
        try:
            self._set_timeout(self.stall_timeout)
            for req_id, request in numbered:
                pieces = request.pieces(req_id)
                small.append(pieces[0])
                unstamped.append(request)
                if len(pieces) > 1:
                    self.sock.sendall(b''.join(small))
                    small = []
                    # The header-only requests before this one are whole
                    # on the wire now: sheep may carry them out.
                    now = timeutils.now()
                    for sent in unstamped[:-1]:
                        sent.sent_at = now
                    unstamped = [request]
                    for piece in pieces[1:]:
                        self.sock.sendall(piece)
                    now = timeutils.now()
                    for sent in unstamped:
                        sent.sent_at = now
                    unstamped = []
            if small:
                self.sock.sendall(b''.join(small))
            now = timeutils.now()
            for sent in unstamped:
                sent.sent_at = now
        except socket.timeout:
            raise errors.Stalled(
                '%s took no request for %ss' % (self.where(),
                                                self.stall_timeout))
        except (socket.error, OSError) as exc:
            raise errors.ConnectionLost(
                'connection to %s lost while sending: %s'
                % (self.where(), exc))

    def _set_timeout(self, timeout):
        if timeout != self._timeout:
            self.sock.settimeout(timeout)
            self._timeout = timeout

    def _receive_into(self, view, what):
        got = 0
        wanted = len(view)
        while got < wanted:
            budget = self.stall.budget(self._outstanding.values(),
                                       self.where)
            try:
                self._set_timeout(budget)
                count = self.sock.recv_into(view[got:], wanted - got)
            except socket.timeout:
                oldest = stall.oldest(self._outstanding.values())
                raise errors.Stalled(
                    '%s sent nothing for %ss while %d of %d bytes of %s '
                    'were still due%s' % (
                        self.where(), self.stall_timeout, wanted - got,
                        wanted, what, '' if oldest is None else
                        ' (oldest unanswered: %s)' % oldest.describe()))
            except (socket.error, OSError) as exc:
                raise errors.ConnectionLost(
                    'connection to %s lost after %d of %d bytes of %s: %s'
                    % (self.where(), got, wanted, what, exc))
            if not count:
                raise errors.ConnectionLost(
                    '%s closed the connection after %d of %d bytes of %s'
                    % (self.where(), got, wanted, what))
            got += count

    def receive_one(self, waiting=None):
        """Read one response into its request; return the request.

        waiting (the request the caller waits for) does not matter here:
        this connection carries every request of the session. See
        _receive_one; an answer that cannot be read marks the session
        ``garbled``.
        """
        try:
            return self._receive_one()
        except (proto.ProtocolError, errors.Unsupported):
            self.garbled = True
            raise

    def _receive_one(self):
        """Read one response into its request; return the request.

        Every field is checked before any data is read: the data of a
        success goes into the request's own buffer and must be exactly
        the length asked for, so nothing sized by sheep is allocated and
        no byte lands elsewhere. The numbers a success carries (VDI ids,
        copies, node counts, an inode's fields and object table) are
        checked against sheepdog's limits here, where the sheep that
        sent them is known (``proto.check_success``,
        ``inode_layout.check_read``).

        A failure may carry data too: sheep's gateway answers a failed
        read of an erasure-coded object with the length asked for
        (``finish_requests`` in sheep/gateway.c sets it on every path).
        Up to what the request has room for, that data is read into its
        own buffer and dropped, and the result is sheep's: retried when
        retryable, else raised as ``errors.error_for`` says.
        """
        self.stall.start_wait()
        self._receive_into(self._header_view, 'a response header')
        response = proto.unpack_response(self._header)
        request = self._outstanding.get(response.id)
        _check_header(self.where(), request, response)
        if response.result != proto.SUCCESS:
            if response.data_length:
                self._receive_data(request, response.data_length)
        else:
            _bounded(self.where(), proto.check_success, request.opcode,
                     response)
            if response.data_length:
                data = self._receive_data(request, response.data_length)
                if data is not None and request.reads_inode():
                    _bounded(self.where(), inode_layout.check_read,
                             request.oid, request.offset, data)
        # Only now: a request whose data was cut off is still to resend.
        del self._outstanding[response.id]
        request.result = response.result
        request.response = response
        return request

    def _receive_data(self, request, length):
        """Read length bytes of data into request's view; its view.

        A stand-in (no view: a late answer to a first copy) has them
        read and dropped, a bounded piece at a time; None then.
        """
        if request.view is not None:
            data = request.view[:length]
            self._receive_into(data, request.describe())
            return data
        scratch = memoryview(bytearray(min(length, DISCARD_PIECE)))
        while length:
            take = min(length, len(scratch))
            self._receive_into(scratch[:take], request.describe())
            length -= take
        return None

    def hand_over(self):
        """A ``given_up.GivenUp`` now holding this socket; this ends closed.

        For a connection given up with requests in flight that its sheep
        may still carry out (``parking.Parking``): a new Connection reads
        their answers into stand-ins (``Request.stand_in``), while this
        one keeps its ``outstanding`` requests for the caller to resend.
        """
        parked = Connection.__new__(Connection)
        parked.__dict__.update(self.__dict__)
        parked.stall = copy.copy(self.stall)
        parked._outstanding = dict(
            (req_id, request.stand_in())
            for req_id, request in self._outstanding.items())
        parked._header = bytearray(proto.HEADER_SIZE)
        parked._header_view = memoryview(parked._header)
        self.sock = None
        return given_up.GivenUp(parked)

    def follow_up(self, request):
        """Mark a success done, resend a retryable result, raise others.

        What is resent, and after which pause, is ``retry``'s.
        """
        self.retry.follow_up(request, self, self.name)


# Bytes of a dropped answer's data read at once (Connection._receive_data).
DISCARD_PIECE = 1 << 20


def _check_header(where, request, response):
    """Raise unless response may be read into request (None: unknown).

    Every field is checked before any data is read (see
    ``Connection._receive_one``); where names the sheep that sent it.
    """
    internal = request is not None and request.opcode >= 0x80
    if not internal and response.proto_ver not in ACCEPTED_VERSIONS:
        raise errors.Unsupported(
            '%s answered with protocol version 0x%02x; the native '
            'client speaks 0x%02x: %s' % (
                where, response.proto_ver, proto.PROTO_VER,
                errors.USE_DOG))
    if request is None:
        raise proto.ProtocolError(
            '%s answered request id %d, which is not in flight'
            % (where, response.id))
    if response.opcode != request.opcode:
        raise proto.ProtocolError(
            '%s answered %s with opcode 0x%02x'
            % (where, request.describe(), response.opcode))
    if response.result != proto.SUCCESS:
        if response.data_length > request.capacity:
            raise proto.ProtocolError(
                '%s sent %d bytes with %s to %s'
                % (where, response.data_length,
                   proto.result_text(response.result),
                   request.describe()))
    elif not request.accepts(response.data_length):
        raise proto.ProtocolError(
            '%s sent %d bytes for %s'
            % (where, response.data_length, request.describe()))


def _bounded(where, check, *args):
    """Run a proto check; its ProtocolError names the sheep (where)."""
    try:
        check(*args)
    except proto.ProtocolError as exc:
        raise proto.ProtocolError('%s sent %s' % (where, exc))
