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
"""A fake sheep for unit tests of the native client: the wire, no more.

Serves GET_VDI_INFO, GET_CLUSTER_DEFAULT, READ_OBJ, NEW_VDI,
CREATE_AND_WRITE_OBJ, WRITE_OBJ (of data objects and of inodes:
vdi_size and data_vdi_id entries), REMOVE_OBJ, DEL_VDI, STAT_CLUSTER
and GET_VDI_ATTR (as sheep's cluster_get_vdi_attr: attributes kept by
name, left when the VDI is deleted, each carrying the create_time of
the VDI it was set on) for images held in memory, on a loopback port
the system chooses, one thread per connection. DEL_VDI behaves as sheep
1.0.1's does: with entries still recorded it answers success and
deletes nothing. The requests that arrive together are answered in
reverse order, so a reader that assumes responses in request order
fails. ``fault`` injects one misbehaviour at the n-th READ_OBJ of data;
``late`` does a chosen request later, even after its client has gone,
as sheep does with a request that arrived before a failover resent it
elsewhere. What it sends and reads is laid out by ``sheep_wire``, from
sheepdog's headers, never by the client's own codec: a layout mistake
of the client fails here rather than agreeing with itself. The
real-cluster suite (tests/real) checks the same reader against sheepdog
1.0.1 itself.
"""

import select
import socket
import struct
import threading
import time

from glance_store_fastsheep.native import membership
from glance_store_fastsheep.native import placement
from glance_store_fastsheep.tests.unit import sheep_wire as wire

# The longest a request held by ``late`` waits for its Event.
LATE_LIMIT = 30
# What a 'retryable' reply_fault answers.
RETRYABLE_ANSWER = wire.NEW_NODE_VER
# What a 'halt' reply_fault answers.
HALT = wire.HALT


class Image(object):
    def __init__(self, name, vid, size, block_size_shift, table):
        self.name = name
        self.vid = vid
        self.size = size
        self.block_size_shift = block_size_shift
        self.table = table  # object index -> owner vid (0: hole)
        self.store_policy = 0
        self.parent = 0
        self.nr_copies = 1
        self.copy_policy = 0
        # sheep's create_time: seconds << 32 | nanoseconds.
        self.create_time = (0x5f000000 + vid) << 32

    def inode_bytes(self, offset, length):
        """length bytes at offset of the inode object, built on demand."""
        fields = wire.inode_header(self.name, self.size, self.vid,
                                   self.parent, self.block_size_shift,
                                   self.store_policy, self.nr_copies,
                                   self.create_time, self.copy_policy)
        out = bytearray(length)
        if offset < len(fields):
            head = fields[offset:offset + length]
            out[:len(head)] = head
        # The data_vdi_id entries the range covers, asked of the table
        # one by one (a test's table may compute its entries).
        start = max(offset, wire.DATA_VDI_ID_OFFSET)
        end = min(offset + length, wire.DATA_VDI_ID_END)
        if start < end:
            first = (start - wire.DATA_VDI_ID_OFFSET) // 4
            last = (end - 1 - wire.DATA_VDI_ID_OFFSET) // 4
            get = self.table.get
            entries = wire.entries([get(entry, 0)
                                    for entry in range(first, last + 1)])
            skip = start - (wire.DATA_VDI_ID_OFFSET + 4 * first)
            out[start - offset:end - offset] = entries[skip:skip + end -
                                                       start]
        return bytes(out)


class _Member(tuple):
    """A member ``(address, port)`` with what placement.Ring reads of it.

    The fake's own account of the entries GET_NODE_LIST sends, so that
    it finds an object's holders without decoding them with the client.
    """

    def __new__(cls, address, port, size, nr_vnodes, zone):
        member = tuple.__new__(cls, (address, port))
        member.node_id = wire.node_id(address, port)
        member.nr_vnodes = nr_vnodes
        member.zone = zone
        member.disks = size != wire.NODE_SIZE
        return member


class _Connection(object):
    """A served socket whose answers may come from several threads."""

    def __init__(self, sock):
        self.sock = sock
        self.send_lock = threading.Lock()

    def sendall(self, data):
        with self.send_lock:
            self.sock.sendall(data)

    def __getattr__(self, name):
        return getattr(self.sock, name)


class _Forging(object):
    """A connection whose response headers carry forged fields.

    fields: ``sheep_wire.response`` keywords (vdi_id, copies, nr_nodes,
    ...) put into every header sent, whatever the fake computed.
    """

    def __init__(self, conn, fields):
        self._conn = conn
        self._fields = fields

    def sendall(self, data):
        rsp = wire.Response(data[:wire.HEADER_SIZE])
        values = dict((key, getattr(rsp, key))
                      for key in wire.Response.FIELDS)
        values.update(self._fields)
        self._conn.sendall(wire.response(
            rsp.id, rsp.opcode, rsp.result, **values) +
            data[wire.HEADER_SIZE:])

    def __getattr__(self, name):
        return getattr(self._conn, name)


class FakeSheep(object):
    """A listening fake sheep; ``close()`` stops it and its threads.

    With a peer, another member of the peer's cluster: both serve the
    same images and objects, and GET_NODE_LIST names every member.
    """

    def __init__(self, peer=None, port=0):
        if peer is None:
            self.images = {}  # (name, snapid) -> Image
            self.by_vid = {}
            self.objects = {}  # data oid -> bytes
            self.attrs = {}  # attribute oid -> the object's bytes
            # placement: port -> (nr_vnodes, zone) GET_NODE_LIST names;
            # frozen: ports of members that answer nothing.
            # recovery: see recover_at.
            self._shared = {'next_vid': 0x10, 'members': [],
                            'placement': {}, 'frozen': set(),
                            'recovery': None}
            self.lock = threading.Lock()
        else:
            self.images = peer.images
            self.by_vid = peer.by_vid
            self.objects = peer.objects
            self.attrs = peer.attrs
            self._shared = peer._shared
            self.lock = peer.lock
        self.fault = None  # (n-th data READ_OBJ, kind, argument)
        # late(opcode, oid, offset, length): None, or seconds or an
        # Event after which the request is done and answered, as a
        # sheep executes a request that arrived even once the client
        # has gone (see _answer_late).
        self.late = None
        self.late_pending = 0
        self.reply_fault = None  # see _drop_reply
        self.reply_counts = {}
        # Requests a 'hold' reply_fault kept: land_held carries them out.
        self.held = []
        # A result GET_VDI_INFO answers instead of the lookup's own.
        self.lookup_result = None
        # sheep's SD_SHEEP_PROTO_VER, for internal operations.
        self.sheep_version = wire.SHEEP_PROTO_VER
        self.cluster_result = wire.SUCCESS
        self.default_shift = 16
        # opcode -> result answered instead of doing the operation.
        self.results = {}
        # opcode -> response header fields forged into its answers (a
        # hostile sheep: see _Forging).
        self.forged = {}
        # data oid -> result a CREATE_AND_WRITE_OBJ of it answers.
        self.write_results = {}
        self.deleted = []
        # (n, seconds): a member changes at the n-th CREATE_AND_WRITE_OBJ
        # (see _start_recovery); recovered is set once it ends.
        self.recover_at = None
        self.creates = 0
        # (n, seconds): a member changes at the n-th removal of a data
        # object (REMOVE_OBJ, or its entry zeroed), and its recovery
        # copies each object as it was then to
        # the object's new holder: an object removed meanwhile is back
        # when it ends, as on a real 1.0.1 cluster whose member was
        # killed while a delete removed objects (fault campaign seed
        # 2364190377).
        self.recover_at_remove = None
        self.removes = 0
        # An epoch this sheep answers with instead of the cluster's: a
        # member that has not taken a membership change in yet.
        self.lagging_epoch = None
        self.recovered = threading.Event()
        # (image, index) of entries recorded before their object existed.
        self.dangling = []
        # Indexes whose entry the inode copy sheep reads when an entry
        # changes lacks (a recovery lost it from that copy, as on a real
        # 1.0.1 cluster after a member died mid-upload): zeroing such an
        # entry drops no reference, so the object stays, named by a VDI
        # that is then deleted.
        self.entries_lost_from_a_copy = set()
        self.fields = []  # RequestFields of every request answered
        self.new_vdi_fields = None
        # Most CREATE_AND_WRITE_OBJ requests that arrived together: a
        # lower bound of what the client had in flight at once.
        self.max_create_batch = 0
        self.max_batch = 0
        self.reads = 0
        self.requests = []  # (opcode, oid, offset, length)
        self.closed_connections = 0
        # Rounds of the accept loop that found nothing to accept.
        self.idle_rounds = 0
        # (address, port) GET_NODE_LIST names instead of the members: a
        # sheep that lies about its cluster.
        self.node_list = None
        self.connections = []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # port: one the test reserved (a sheep that comes back).
        self.listener.bind(('127.0.0.1', port))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self._shared['members'].append(('127.0.0.1', self.port))
        # A node joined: the cluster's epoch moves on.
        self.epoch += 1
        # The port may be an earlier test's: what the process learned of
        # that cluster (membership.MEMBERSHIPS) is not this one's.
        for key in list(membership.MEMBERSHIPS):
            if any(node[1] == self.port for node in key):
                membership.MEMBERSHIPS.pop(key).parking.clear()
        # GET_NODE_LIST entries: 80 bytes, or 592 (disk vnodes).
        self.node_size = wire.NODE_SIZE
        self._stop = False
        self._threads = []
        accept = threading.Thread(target=self._accept)
        accept.daemon = True
        accept.start()
        self._threads.append(accept)

    @property
    def next_vid(self):
        return self._shared['next_vid']

    @next_vid.setter
    def next_vid(self, value):
        self._shared['next_vid'] = value

    @property
    def epoch(self):
        """The epoch every response carries (sheep: sys->cinfo.epoch).

        The cluster's: 1 with the first sheep, one more per member that
        joins, as sheep counts membership changes.
        """
        return self._shared.get('epoch', 0)

    @epoch.setter
    def epoch(self, value):
        self._shared['epoch'] = value

    @property
    def members(self):
        return self._shared['members']

    def place(self, nr_vnodes, zone):
        """Name this member with nr_vnodes vnodes in zone (placement)."""
        self._shared['placement'][self.port] = (nr_vnodes, zone)

    def freeze(self):
        """Answer nothing from now on, as a SIGSTOPped sheep.

        A member asked for an object it holds no copy of then waits on
        a frozen holder, as a live gateway of a real cluster does.
        """
        self._shared['frozen'].add(self.port)

    def holders(self, oid):
        """The ports holding oid's copies (placement.Ring of the members)."""
        ring = placement.Ring.of(self._members_placed())
        image = self.by_vid.get(wire.vid_of(oid))
        if ring is None or image is None:
            return None
        return [node[1] for node in ring.holders(oid, image.nr_copies)]

    def _waits_on_frozen(self, opcode, oid):
        frozen = self._shared['frozen']
        if self.port in frozen:
            return True
        if opcode != wire.READ_OBJ or not frozen:
            return False
        holders = self.holders(oid)
        return bool(holders) and self.port not in holders and any(
            port in frozen for port in holders)

    # -- images -------------------------------------------------------

    def add_image(self, name, data, block_size_shift=16, snapid=0):
        """Store data as an image; all-zero objects become holes."""
        object_size = 1 << block_size_shift
        objects = {}
        for index in range(0, (len(data) + object_size - 1) // object_size):
            chunk = data[index * object_size:(index + 1) * object_size]
            if chunk.strip(b'\0'):
                objects[index] = chunk
        return self._add(name, len(data), block_size_shift, snapid, {},
                         objects)

    def add_clone(self, name, parent, writes, snapid=0):
        """A clone of parent (an Image) with its own objects in writes.

        writes maps an object index to that object's new bytes; every
        other object stays the parent's.
        """
        return self._add(name, parent.size, parent.block_size_shift, snapid,
                         dict(parent.table), writes)

    def _add(self, name, size, block_size_shift, snapid, table, objects):
        vid = self.next_vid
        self.next_vid += 1
        object_size = 1 << block_size_shift
        for index, chunk in objects.items():
            self.objects[wire.data_oid(vid, index)] = chunk.ljust(
                object_size, b'\0')
            table[index] = vid
        image = Image(name, vid, size, block_size_shift, table)
        self.images[(name, snapid)] = image
        self.by_vid[vid] = image
        return image

    # -- serving ------------------------------------------------------

    def close(self):
        self._stop = True
        try:
            self.listener.close()
        except socket.error:
            pass
        for conn in list(self.connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except socket.error:
                pass
        for thread in self._threads:
            if hasattr(thread, 'cancel'):
                thread.cancel()  # a recovery's Timer that has not fired
            thread.join(5)

    def _accept(self):
        while not self._stop:
            try:
                ready = select.select([self.listener], [], [], 0.05)[0]
                if not ready:
                    # Nothing left to accept: see accepted_all.
                    self.idle_rounds += 1
                    continue
                conn, _addr = self.listener.accept()
            except (socket.error, ValueError):
                return
            self.connections.append(conn)
            thread = threading.Thread(target=self._serve,
                                      args=(_Stamped(conn, self),))
            thread.daemon = True
            thread.start()
            self._threads.append(thread)

    def accepted_all(self, timeout):
        """Wait until every connection made before now is accepted.

        A client's connection can sit in the listen queue after the
        client closed it (a probe of parking.Parked.sheep_gone): two
        empty rounds of the accept loop after now mean it was taken. A
        closed sheep accepts nothing more.
        """
        if self._stop:
            return True
        start = self.idle_rounds
        deadline = time.time() + timeout
        while self.idle_rounds < start + 2 and time.time() < deadline:
            time.sleep(0.01)
        return self.idle_rounds >= start + 2

    @staticmethod
    def _recv_exact(conn, size):
        data = b''
        while len(data) < size:
            chunk = conn.recv(size - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def _serve(self, conn):
        conn = _Connection(conn)
        try:
            while not self._stop:
                batch = []
                while True:
                    timeout = 0.005 if batch else 0.05
                    if not select.select([conn], [], [], timeout)[0]:
                        if batch or self._stop:
                            break
                        continue
                    header = self._recv_exact(conn, wire.HEADER_SIZE)
                    if header is None:
                        return
                    fields = wire.Request(header)
                    opcode, req_id, length, oid, offset, snapid = (
                        fields.opcode, fields.id, fields.data_length,
                        fields.oid, fields.offset, fields.snapid)
                    data = b''
                    if length and fields.flags & wire.FLAG_CMD_WRITE:
                        data = self._recv_exact(conn, length)
                        if data is None:
                            return
                    batch.append((opcode, req_id, length, oid, offset,
                                  snapid, data, fields))
                self.max_batch = max(self.max_batch, len(batch))
                creates = sum(1 for request in batch
                              if request[0] == wire.CREATE_AND_WRITE_OBJ)
                self.max_create_batch = max(self.max_create_batch, creates)
                for request in reversed(batch):
                    if self._answer_late(conn, request):
                        continue
                    if not self._answer(conn, *request):
                        return
        except socket.error:
            # The reader closed with answers unread: a reset, as a real
            # sheep sees it.
            return
        finally:
            conn.close()
            with self.lock:
                self.closed_connections += 1

    def _answer_late(self, conn, request):
        """Whether late holds request: done and answered on a thread.

        Later requests of the connection go on meanwhile. The request
        is done even once the client closed the connection (sheep's
        request.c: only the reply fails), its twin resent elsewhere
        included.
        """
        late = self.late
        when = late and late(request[0], request[3], request[4],
                             request[2])
        if when is None or when is False:
            return False

        def answer():
            if hasattr(when, 'wait'):
                when.wait(LATE_LIMIT)
            else:
                time.sleep(when)
            try:
                self._answer(conn, *request)
            except (socket.error, ValueError):
                pass  # the client has gone: only the reply is lost
            finally:
                with self.lock:
                    self.late_pending -= 1

        with self.lock:
            self.late_pending += 1
        thread = threading.Thread(target=answer)
        thread.daemon = True
        thread.start()
        self._threads.append(thread)
        return True

    def wait_late(self, timeout=LATE_LIMIT + 5):
        """Return once every request late held was done."""
        deadline = time.time() + timeout
        while self.late_pending and time.time() < deadline:
            time.sleep(0.01)
        assert not self.late_pending, 'late requests still held'

    def _answer(self, conn, opcode, req_id, length, oid, offset, snapid,
                data, fields=None):
        with self.lock:
            self.requests.append((opcode, oid, offset, length))
            if fields is not None:
                self.fields.append(fields)
        if self._waits_on_frozen(opcode, oid):
            return True
        if opcode in self.forged:
            conn = _Forging(conn, self.forged[opcode])
        if opcode in self.results:
            conn.sendall(wire.response(req_id, opcode,
                                       self.results[opcode]))
            return True
        drop = self._drop_reply(opcode)
        if drop == 'halt':
            # Not carried out: the cluster stopped doing I/O.
            conn.sendall(wire.response(req_id, opcode, HALT))
            return True
        handler = self._HANDLERS.get(opcode)
        if handler is not None:
            if drop == 'stall':
                return True
            if drop == 'hold':
                # Kept for land_held, the connection reset unanswered.
                self.held.append((handler, (req_id, opcode, length, oid,
                                            offset, snapid, data, fields)))
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                struct.pack('ii', 1, 0))
                return False
            with self.lock:
                answer = handler(self, req_id, opcode, length, oid, offset,
                                 snapid, data, fields)
            if drop == 'retryable':
                # Done, but answered as if it should be sent again.
                conn.sendall(wire.response(req_id, opcode,
                                           RETRYABLE_ANSWER))
                return True
            if drop:
                # Done, but the reply is lost with the connection.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                struct.pack('ii', 1, 0))
                return False
            conn.sendall(answer)
            return True
        if opcode == wire.GET_VDI_INFO:
            name = wire.vdi_name(data)
            image = self.images.get((name, snapid))
            if self.lookup_result is not None:
                conn.sendall(wire.response(req_id, opcode,
                                           self.lookup_result))
            elif image is None:
                conn.sendall(wire.response(req_id, opcode,
                                           wire.NO_VDI))
            else:
                conn.sendall(wire.response(req_id, opcode,
                                           wire.SUCCESS,
                                           vdi_id=image.vid,
                                           copies=image.nr_copies))
            return True
        if oid & wire.VDI_ATTR_BIT and not oid & wire.VDI_BIT:
            body = self.attrs.get(oid)
            if body is None:
                conn.sendall(wire.response(req_id, opcode,
                                           wire.NO_OBJ))
                return True
            body = body.ljust(wire.ATTR_OBJ_SIZE, b'\0')
            conn.sendall(wire.response(req_id, opcode, wire.SUCCESS,
                                       length) +
                         body[offset:offset + length])
            return True
        if oid & wire.VDI_BIT:
            image = self.by_vid.get(wire.vid_of(oid))
            if image is None:
                conn.sendall(wire.response(req_id, opcode,
                                           wire.NO_OBJ))
                return True
            conn.sendall(wire.response(req_id, opcode, wire.SUCCESS,
                                       length) +
                         image.inode_bytes(offset, length))
            return True
        with self.lock:
            self.reads += 1
            nth = self.reads
        body = self.objects.get(oid)
        fault = self.fault
        if fault is not None and fault[0] == nth:
            return self._misbehave(conn, fault[1], fault[2], req_id, opcode,
                                   length, body, offset)
        if body is None:
            conn.sendall(wire.response(req_id, opcode, wire.NO_OBJ))
            return True
        conn.sendall(wire.response(req_id, opcode, wire.SUCCESS,
                                   length) +
                     body[offset:offset + length])
        return True

    def _drop_reply(self, opcode):
        """The reply_fault's kind if this request is its n-th, else None.

        reply_fault is (opcode, n-th request of it, kind): 'reset' does
        the operation and resets the connection instead of answering (a
        sheep killed after its work, before its reply), 'stall' neither
        does nor answers it (a frozen sheep), 'hold' resets the connection
        and keeps the request for ``land_held`` (a copy that lands late),
        'retryable' does it and answers ``RETRYABLE_ANSWER`` (a request
        carried out whose answer says to send it again), 'halt' answers
        SD_RES_HALT without doing it. 'halt' applies to every opcode, the
        others to those of ``_HANDLERS``.
        """
        fault = self.reply_fault
        if fault is None or fault[0] != opcode:
            return None
        with self.lock:
            self.reply_counts[opcode] = self.reply_counts.get(opcode, 0) + 1
            if self.reply_counts[opcode] != fault[1]:
                return None
        return fault[2]

    def land_held(self):
        """Carry out the held requests now: their late copies land."""
        held, self.held = self.held, []
        with self.lock:
            for handler, args in held:
                handler(self, *args)

    def _misbehave(self, conn, kind, argument, req_id, opcode, length, body,
                   offset):
        """Send fault kind instead of the answer; False ends the session."""
        data = body[offset:offset + length]
        if kind == 'reset':
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack('ii', 1, 0))
            return False
        if kind == 'short_header':
            conn.sendall(wire.response(req_id, opcode, wire.SUCCESS,
                                       length)[:20])
            return False
        if kind == 'garbage':
            conn.sendall(b'\xa5' * wire.HEADER_SIZE)
            return True
        if kind == 'longer':
            conn.sendall(wire.response(req_id, opcode, wire.SUCCESS,
                                       length + argument) +
                         data + b'\x01' * argument)
            return True
        if kind == 'huge':
            # A length no reader may allocate; nothing follows.
            conn.sendall(wire.response(req_id, opcode, wire.SUCCESS,
                                       0xffffffff))
            return True
        if kind == 'wrong_id':
            conn.sendall(wire.response(req_id + argument, opcode,
                                       wire.SUCCESS, length) + data)
            return True
        if kind == 'version':
            conn.sendall(wire.response(req_id, opcode, wire.SUCCESS,
                                       length, proto_ver=argument) +
                         data)
            return True
        if kind == 'result':
            conn.sendall(wire.response(req_id, opcode, argument))
            return True
        if kind == 'result_with_data':
            # A failed read of an erasure-coded object: sheep's gateway
            # sends the length asked for with the result. argument: the
            # result, or (result, bytes more than asked).
            result, extra = (argument if isinstance(argument, tuple)
                             else (argument, 0))
            conn.sendall(wire.response(req_id, opcode, result,
                                       length + extra) +
                         b'\x5a' * (length + extra))
            return True
        if kind == 'truncate':
            conn.sendall(wire.response(req_id, opcode, wire.SUCCESS,
                                       length) + data[:argument])
            return False
        if kind == 'stall':
            return True
        raise ValueError('unknown fault %s' % kind)

    # -- the write side ----------------------------------------------

    def image_bytes(self, name):
        """The current image name's bytes, as a reader would get them."""
        image = self.images[(name, 0)]
        object_size = 1 << image.block_size_shift
        out = []
        for index in range(-(-image.size // object_size)):
            owner = image.table.get(index, 0)
            body = self.objects.get(wire.data_oid(owner, index)) if (
                owner) else None
            out.append(body if body is not None else b'\0' * object_size)
        return b''.join(out)[:image.size]

    def _new_vdi(self, req_id, opcode, length, oid, offset, snapid, data,
                 fields):
        name = wire.vdi_name(data)
        if length != wire.SD_MAX_VDI_LEN:
            return wire.response(req_id, opcode, wire.INVALID_PARMS)
        if (name, 0) in self.images:
            return wire.response(req_id, opcode, wire.VDI_EXIST)
        self.new_vdi_fields = fields
        vid = self.next_vid
        self.next_vid += 1
        image = Image(name, vid, fields.vdi_size,
                      fields.block_size_shift or
                      self.default_shift, {})
        self.images[(name, 0)] = image
        self.by_vid[vid] = image
        return wire.response(req_id, opcode, wire.SUCCESS,
                             vdi_id=vid, copies=1,
                             block_size_shift=image.block_size_shift)

    def _write_obj(self, req_id, opcode, length, oid, offset, snapid, data,
                   fields):
        if oid & wire.VDI_BIT:
            image = self.by_vid.get(wire.vid_of(oid))
            if image is None or opcode != wire.WRITE_OBJ:
                return wire.response(req_id, opcode, wire.NO_OBJ)
            if offset == wire.VDI_SIZE_OFFSET and length == 8:
                image.size = wire.read_uint64(data)
            elif (offset >= wire.DATA_VDI_ID_OFFSET and
                  (offset - wire.DATA_VDI_ID_OFFSET) % 4 == 0):
                first = (offset - wire.DATA_VDI_ID_OFFSET) // 4
                values = wire.read_entries(data)
                for index, value in enumerate(values, first):
                    old = image.table.get(index, 0)
                    if (old and old != value and old == image.vid and
                            index not in self.entries_lost_from_a_copy):
                        # The last reference dropped: sheep removes it.
                        self._removing()
                        self.objects.pop(wire.data_oid(old, index), None)
                    if value and wire.data_oid(value, index) not in (
                            self.objects):
                        # An entry naming an object sheep does not have.
                        self.dangling.append((image.name, index))
                    if value:
                        image.table[index] = value
                    else:
                        image.table.pop(index, None)
            else:
                return wire.response(req_id, opcode,
                                     wire.INVALID_PARMS)
            return wire.response(req_id, opcode, wire.SUCCESS)
        result = self.write_results.get(oid)
        if result is not None:
            return wire.response(req_id, opcode, result)
        if opcode == wire.CREATE_AND_WRITE_OBJ:
            self.creates += 1
            if self.recover_at and self.recover_at[0] == self.creates:
                self._start_recovery(self.recover_at[1])
        image = self.by_vid.get(wire.vid_of(oid))
        object_size = 1 << image.block_size_shift
        if opcode == wire.CREATE_AND_WRITE_OBJ:
            body = bytearray(object_size)
        else:
            body = bytearray(self.objects[oid])
        body[offset:offset + len(data)] = data
        self.objects[oid] = bytes(body)
        return wire.response(req_id, opcode, wire.SUCCESS)

    def _remove_obj(self, req_id, opcode, length, oid, offset, snapid,
                    data, fields):
        if oid & wire.VDI_ATTR_BIT and not oid & wire.VDI_BIT:
            if self.attrs.pop(oid, None) is None:
                return wire.response(req_id, opcode, wire.NO_OBJ)
            return wire.response(req_id, opcode, wire.SUCCESS)
        self._removing()
        if self.objects.pop(oid, None) is None:
            return wire.response(req_id, opcode, wire.NO_OBJ)
        return wire.response(req_id, opcode, wire.SUCCESS)

    def _del_vdi(self, req_id, opcode, length, oid, offset, snapid, data,
                 fields):
        name = wire.vdi_name(data)
        image = self.images.get((name, snapid))
        if image is None:
            return wire.response(req_id, opcode, wire.NO_VDI)
        if not any(image.table.values()):
            del self.images[(name, snapid)]
            self.deleted.append(name)
        # else: sheep's deletion work logs "still has objects" and
        # leaves the VDI, but the answer is success all the same.
        return wire.response(req_id, opcode, wire.SUCCESS,
                             vdi_id=image.vid)

    def _removing(self):
        """A data object is about to be removed (see recover_at_remove)."""
        self.removes += 1
        if self.recover_at_remove and (
                self.recover_at_remove[0] == self.removes):
            self._start_recovery(self.recover_at_remove[1],
                                 dict(self.objects))

    def _start_recovery(self, seconds, objects=None):
        """A member changed: the epoch moves on and recovery starts.

        Recovery reads every inode as it is now and, seconds later,
        writes that copy back: what was written to an inode meanwhile is
        lost, though acknowledged, as a real 1.0.1 cluster lost it
        (native/recovery.py). objects: the data objects it copies too
        (oid -> bytes), written back where they are missing when it
        ends. Called with the lock held.
        """
        self.epoch += 1
        copies = dict((vid, (dict(image.table), image.size))
                      for vid, image in self.by_vid.items())
        self._shared['recovery'] = copies
        timer = threading.Timer(seconds, self._end_recovery,
                                (copies, objects or {}))
        timer.daemon = True
        timer.start()
        self._threads.append(timer)

    def _end_recovery(self, copies, objects):
        with self.lock:
            for vid, (table, size) in copies.items():
                image = self.by_vid.get(vid)
                if image is not None:
                    image.table = table
                    image.size = size
            for oid, body in objects.items():
                self.objects.setdefault(oid, body)
            self._shared['recovery'] = None
        self.recovered.set()

    def _stat_recovery(self, req_id, opcode, length, oid, offset, snapid,
                       data, fields):
        if fields.proto_ver != self.sheep_version:
            return wire.response(req_id, opcode, wire.VER_MISMATCH)
        # rw_state 1 is RW_RECOVER_OBJ: recovering objects.
        busy = self._shared['recovery'] is not None
        body = wire.recovery_state(busy, 1 if busy else 0, 0, 0)
        return wire.response(req_id, opcode, wire.SUCCESS,
                             len(body),
                             proto_ver=self.sheep_version) + body

    def _stat_cluster(self, req_id, opcode, length, oid, offset, snapid,
                      data, fields):
        if fields.proto_ver != self.sheep_version:
            return wire.response(req_id, opcode, wire.VER_MISMATCH)
        return wire.response(req_id, opcode, self.cluster_result,
                             proto_ver=self.sheep_version)

    def _node_list(self, req_id, opcode, length, oid, offset, snapid,
                   data, fields):
        if fields.proto_ver != self.sheep_version:
            return wire.response(req_id, opcode, wire.VER_MISMATCH)
        body = self._node_entries()
        return wire.response(
            req_id, opcode, wire.SUCCESS, len(body),
            proto_ver=self.sheep_version,
            nr_nodes=len(self._named())) + body

    def attr_slot(self, name, key):
        """The attribute oid of key on name, placed as sheep places it.

        sd_hash_vdi of the name, then hash_vdi_attr (FNV-1a 64 over the
        256-byte name, the 256-byte tag, the 4-byte snapshot id and the
        256-byte key, low 32 bits): the client removes a deleted image's
        markers by computing the same object id.
        """
        name = name.encode('utf-8') if not isinstance(name, bytes) else name
        key = key.encode('utf-8') if not isinstance(key, bytes) else key

        def fnv(data, hval=0xcbf29ce484222325):
            for byte in bytearray(data):
                hval = ((hval ^ byte) * 0x100000001b3) & ((1 << 64) - 1)
            return hval

        vid = fnv(name) & 0xffffff
        hval = fnv(name.ljust(256, b'\0') + b'\0' * 256 + b'\0' * 4 +
                   key.ljust(256, b'\0'))
        return wire.attr_oid(vid, hval & 0xffffffff)

    def _vdi_attr(self, req_id, opcode, length, oid, offset, snapid, data,
                  fields):
        if fields.proto_ver != self.sheep_version:
            return wire.response(req_id, opcode, wire.VER_MISMATCH)
        if length != wire.ATTR_OBJ_SIZE:
            return wire.response(req_id, opcode, wire.INVALID_PARMS)
        name, _ctime, key, value = wire.read_attr(data)
        image = self.images.get((name.decode('utf-8'), snapid))
        if image is None:
            return wire.response(req_id, opcode, wire.NO_VDI)
        slot = self.attr_slot(name, key)
        stored = self.attrs.get(slot)
        present = stored is not None and wire.read_attr(
            stored)[0] == name
        flags = fields.flags
        if flags & wire.FLAG_CMD_CREAT and not (
                flags & wire.FLAG_CMD_EXCL and present):
            self.attrs[slot] = wire.attr_object(
                name, key, value, image.create_time)
            result = wire.SUCCESS
        elif not present:
            result = wire.NO_OBJ
        elif flags & wire.FLAG_CMD_EXCL:
            result = wire.VDI_EXIST
        elif flags & wire.FLAG_CMD_DEL:
            # sheep zeroes the name's first byte; the object stays.
            self.attrs[slot] = b'\0' + stored[1:]
            result = wire.SUCCESS
        else:
            result = wire.SUCCESS
        return wire.response(req_id, opcode, result,
                             vdi_id=wire.vid_of(slot),
                             attr_id=slot & 0xffffffff,
                             proto_ver=self.sheep_version)

    def _named(self):
        return self.members if self.node_list is None else self.node_list

    def _node_entries(self):
        placement = self._shared['placement']
        return b''.join(wire.node_entry(address, port, self.node_size,
                                        *placement.get(port, (0, 0)))
                        for address, port in self._named())

    def _members_placed(self):
        """What placement.Ring reads of the members GET_NODE_LIST names."""
        placed = self._shared['placement']
        return [_Member(address, port, self.node_size, *placed.get(port,
                                                                   (0, 0)))
                for address, port in self._named()]

    def _cluster_default(self, req_id, opcode, length, oid, offset, snapid,
                         data, fields):
        # One copy, replicated, objects of 2^default_shift bytes.
        return wire.cluster_default(req_id, opcode, 1, 0, self.default_shift)

    _HANDLERS = {
        wire.GET_CLUSTER_DEFAULT: _cluster_default,
        wire.GET_VDI_ATTR: _vdi_attr,
        wire.GET_NODE_LIST: _node_list,
        wire.NEW_VDI: _new_vdi,
        wire.CREATE_AND_WRITE_OBJ: _write_obj,
        wire.WRITE_OBJ: _write_obj,
        wire.REMOVE_OBJ: _remove_obj,
        wire.DEL_VDI: _del_vdi,
        wire.STAT_CLUSTER: _stat_cluster,
        wire.STAT_RECOVERY: _stat_recovery,
    }


class _Stamped(object):
    """A connection whose every response header carries sheep's epoch.

    Every ``sendall`` of FakeSheep starts with a response header.
    """

    def __init__(self, conn, sheep):
        self._conn = conn
        self._sheep = sheep

    def sendall(self, data):
        epoch = self._sheep.lagging_epoch or self._sheep.epoch
        if epoch:
            data = wire.with_epoch(data, epoch)
        self._conn.sendall(data)

    def __getattr__(self, name):
        return getattr(self._conn, name)
