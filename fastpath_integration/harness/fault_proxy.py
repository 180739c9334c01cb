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
"""A TCP proxy in front of one sheep that injects chosen faults.

``FaultProxy`` listens on a loopback port the system chooses and relays
every connection it accepts to one sheep, parsing sheep's framing both
ways: a 48-byte request header, then ``data_length`` bytes when the
request carries ``SD_FLAG_CMD_WRITE``; a 48-byte response header, then
``data_length`` bytes. The layouts are written here from sheepdog's
``include/sheepdog_proto.h`` and ``include/internal_proto.h`` (1.0.1),
not taken from the client's ``native/proto.py``: an encoding mistake of
the client then shows as a request this proxy reads differently, not as
two copies of one mistake agreeing.

What a ``Fault`` can do to the request its predicate picks (by opcode,
object id, offset, VDI name and how many of that opcode came before):

* ``hold(seconds)``: the request and everything after it on that
  connection reach the sheep ``seconds`` later, also when the client has
  closed its side meanwhile. That is what a late copy of a request is:
  sheep executes every request that fully arrived on a connection, even
  after the client went (``sheep/request.c``: only the reply fails), and
  the kernel delivers what was queued before a ``close()``.
* ``delay(seconds)``: the request goes on at once; its response (and the
  responses after it) reach the client ``seconds`` later.
* ``reset()``: the client's connection is reset (RST) when the request
  arrives, with the request dropped or, ``forward=True``, delivered
  first.
* ``forge(result)``: the proxy answers the request itself and never
  forwards it; ``data`` and header ``fields`` forge a whole answer
  (``node_list`` builds a GET_NODE_LIST one).
* ``trigger(callback)``: ``callback(request)`` runs, then the request
  goes on: a moment of the request stream for a fault of another kind
  (a sheep killed or frozen just before that request reaches it), which
  a seed reproduces better than a wall-clock delay.

Everything runs on threads (greenthreads under eventlet, whose
monkey-patching makes ``threading``, ``socket`` and ``time.sleep``
green), each link's held requests on a writer of its own. ``stop()``
closes every socket and joins every thread; ``wait_quiet()`` returns once
nothing is held and every request delivered was answered (or its sheep
closed): only then can a test know that no late copy is still to land.
"""

import errno
import socket
import struct
import threading
import time

import fixtures
from oslo_utils import timeutils
from six.moves import queue

HEADER_SIZE = 48
# struct sd_req / sd_rsp: proto_ver, opcode, flags, epoch, id,
# data_length, then a 32-byte union.
_COMMON = struct.Struct('<BBHIII')
# sd_req.obj: oid, cow_oid, copies, copy_policy, ec_index, reserved,
# tgt_epoch, offset, __pad.
_OBJ = struct.Struct('<QQBBBBIII')
# sd_req.vdi: vdi_size, base_vdi_id, copies, copy_policy, store_policy,
# block_size_shift, snapid, type (then 8 bytes of __pad).
_VDI = struct.Struct('<QIBBBBII')
# sd_rsp: result, then sd_rsp.vdi's rsvd (sd_rsp.node's nr_nodes),
# vdi_id, attr_id, copies, block_size_shift, reserved[2], then padding.
_RSP = struct.Struct('<IIIIBB2x12x')
assert _COMMON.size + _RSP.size == HEADER_SIZE

FLAG_CMD_WRITE = 0x01

# Opcodes (sheepdog_proto.h, internal_proto.h).
CREATE_AND_WRITE_OBJ = 0x01
READ_OBJ = 0x02
WRITE_OBJ = 0x03
REMOVE_OBJ = 0x04
NEW_VDI = 0x11
GET_VDI_INFO = 0x14
DEL_VDI = 0x17
GET_CLUSTER_DEFAULT = 0x18
GET_NODE_LIST = 0x82
STAT_CLUSTER = 0x87
GET_VDI_ATTR = 0x89
OPCODES = {
    CREATE_AND_WRITE_OBJ: 'CREATE_AND_WRITE_OBJ', READ_OBJ: 'READ_OBJ',
    WRITE_OBJ: 'WRITE_OBJ', REMOVE_OBJ: 'REMOVE_OBJ', NEW_VDI: 'NEW_VDI',
    GET_VDI_INFO: 'GET_VDI_INFO', DEL_VDI: 'DEL_VDI',
    GET_CLUSTER_DEFAULT: 'GET_CLUSTER_DEFAULT',
    GET_NODE_LIST: 'GET_NODE_LIST', STAT_CLUSTER: 'STAT_CLUSTER',
    GET_VDI_ATTR: 'GET_VDI_ATTR'}
# The requests whose data starts with a 256-byte VDI name.
NAMED = (NEW_VDI, GET_VDI_INFO, DEL_VDI, GET_VDI_ATTR)

# Results (sheepdog_proto.h).
SUCCESS = 0x00
NO_OBJ = 0x02
EIO = 0x03
VDI_EXIST = 0x04
SYSTEM_ERROR = 0x06
NO_VDI = 0x08

# Object ids: bit 63 an inode, bit 61 an attribute, the VDI id in bits
# 32-55, a data object's index in bits 0-31.
VDI_BIT = 1 << 63
VDI_ATTR_BIT = 1 << 61
# The inode's vdi_size (after name, tag, ctime, snap_ctime, vm_clock_nsec)
# and data_vdi_id table (after the 4664-byte header).
INODE_VDI_SIZE_OFFSET = 256 + 256 + 3 * 8
INODE_DATA_VDI_ID_OFFSET = 4664

# struct sd_node (internal_proto.h, without disk vnodes): rb_node (24),
# node_id (addr 16, port 2, io_addr 16, io_port 2, pad 4), nr_vnodes 2,
# 2 of alignment, zone 4, space 8.
_SD_NODE = struct.Struct('<24x16sH16sH4xH2xIQ')
assert _SD_NODE.size == 80

# How long a link keeps its sheep connection for answers still due once
# everything was delivered and the client is gone.
ANSWER_WAIT = 30.0


def vid_of(oid):
    return (oid >> 32) & 0xffffff


def is_data(oid):
    return not oid & (VDI_BIT | VDI_ATTR_BIT)


def node_entry(address, port, nr_vnodes=128, zone=0):
    """One struct sd_node of an IPv4 node, as GET_NODE_LIST sends it."""
    addr = b'\0' * 12 + socket.inet_aton(address)
    return _SD_NODE.pack(addr, port, b'\0' * 16, 0, nr_vnodes, zone, 0)


class Request(object):
    """One request as the proxy parsed it.

    ``nth`` counts the requests of this opcode the proxy received, from
    1, over all its connections; ``link_nth`` the same on this
    connection. ``name`` is the VDI name of a named request.
    """

    def __init__(self, link, header, data, nth, link_nth):
        (self.proto_ver, self.opcode, self.flags, self.epoch, self.id,
         self.data_length) = _COMMON.unpack_from(header)
        obj = _OBJ.unpack_from(header, _COMMON.size)
        vdi = _VDI.unpack_from(header, _COMMON.size)
        self.oid = obj[0]
        self.offset = obj[7]
        self.vdi_size = vdi[0]
        self.link = link
        self.header = header
        self.data = data
        self.nth = nth
        self.link_nth = link_nth
        self.name = None
        if self.opcode in NAMED and len(data) >= 256:
            self.name = data[:256].split(b'\0')[0].decode('utf-8',
                                                          'replace')
        self.action = 'forward'

    @property
    def opname(self):
        return OPCODES.get(self.opcode, '0x%02x' % self.opcode)

    def describe(self):
        where = ''
        if self.name is not None:
            where = ' %s' % self.name
        elif self.opcode in (CREATE_AND_WRITE_OBJ, READ_OBJ, WRITE_OBJ,
                             REMOVE_OBJ):
            where = ' %016x@%d' % (self.oid, self.offset)
        return '#%d %s%s (%s)' % (self.nth, self.opname, where, self.action)

    def writes_vdi_size(self):
        """A WRITE_OBJ rewriting an inode's vdi_size (a resize)."""
        return (self.opcode == WRITE_OBJ and self.oid & VDI_BIT and
                self.offset == INODE_VDI_SIZE_OFFSET)

    def writes_entries(self):
        """A WRITE_OBJ of an inode's data_vdi_id entries."""
        return (self.opcode == WRITE_OBJ and self.oid & VDI_BIT and
                self.offset >= INODE_DATA_VDI_ID_OFFSET)

    def entries(self):
        """The data_vdi_id values a writes_entries request writes."""
        return list(struct.unpack('<%dI' % (len(self.data) // 4),
                                  self.data[:len(self.data) // 4 * 4]))


def on(opcode=None, nth=None, test=None, name=None):
    """A predicate: this opcode, its nth of the proxy, test(request)."""
    def match(request):
        if opcode is not None and request.opcode != opcode:
            return False
        if nth is not None and request.nth != nth:
            return False
        if name is not None and request.name != name:
            return False
        return test is None or bool(test(request))
    return match


class Fault(object):
    """What to do to the requests ``match`` picks, ``times`` of them.

    ``times`` None: every request it picks. ``fired`` lists the requests
    it was applied to; ``applied`` is set at the first.
    """

    def __init__(self, action, match, seconds=0.0, result=SUCCESS,
                 data=b'', fields=None, forward=False, times=1,
                 callback=None):
        self.action = action
        self.callback = callback
        self.match = match
        self.seconds = seconds
        self.result = result
        self.data = data
        self.fields = fields or {}
        self.forward = forward
        self.times = times
        self.fired = []
        self.applied = threading.Event()

    def take(self, request):
        """Whether this fault applies to request (and count it)."""
        if self.times is not None and len(self.fired) >= self.times:
            return False
        if not self.match(request):
            return False
        self.fired.append(request)
        self.applied.set()
        return True

    def __repr__(self):
        return 'Fault(%s, %ss, fired %s)' % (
            self.action, self.seconds,
            [request.describe() for request in self.fired])


def hold(match, seconds, times=1):
    return Fault('hold', match, seconds=seconds, times=times)


def delay(match, seconds, times=1):
    return Fault('delay', match, seconds=seconds, times=times)


def reset(match, forward=False, times=1):
    return Fault('reset', match, forward=forward, times=times)


def forge(match, result=SUCCESS, data=b'', fields=None, times=1):
    return Fault('forge', match, result=result, data=data, fields=fields,
                 times=times)


def trigger(match, callback, times=1):
    return Fault('trigger', match, callback=callback, times=times)


def node_list(nodes, match=None, times=None):
    """A Fault answering GET_NODE_LIST with nodes ((address, port)...)."""
    data = b''.join(node_entry(address, port, zone=index)
                    for index, (address, port) in enumerate(nodes))
    return forge(match or on(GET_NODE_LIST), SUCCESS, data,
                 {'nr_nodes': len(nodes)}, times=times)


def _response(request, result, data=b'', fields=None):
    fields = fields or {}
    header = _COMMON.pack(0, request.opcode, 0, 0, request.id, len(data))
    header += _RSP.pack(result, fields.get('nr_nodes', 0),
                        fields.get('vdi_id', 0), fields.get('attr_id', 0),
                        fields.get('copies', 0),
                        fields.get('block_size_shift', 0))
    return header + data


def _receive(sock, size):
    """size bytes from sock, or None at EOF or on an error."""
    pieces = []
    while size:
        try:
            piece = sock.recv(min(size, 1 << 20))
        except (socket.error, OSError, ValueError):
            return None
        if not piece:
            return None
        pieces.append(piece)
        size -= len(piece)
    return b''.join(pieces)


def _close(sock, rst=False):
    if sock is None:
        return
    try:
        if rst:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack('ii', 1, 0))
        else:
            sock.shutdown(socket.SHUT_RDWR)
    except (socket.error, OSError) as exc:
        if exc.errno not in (errno.ENOTCONN, errno.EBADF):
            pass
    try:
        sock.close()
    except (socket.error, OSError):
        pass


class _Link(object):
    """One client connection and its own connection to the sheep."""

    def __init__(self, proxy, index, client, upstream):
        self.proxy = proxy
        self.index = index
        self.client = client
        self.upstream = upstream
        self.client_lock = threading.Lock()
        self.client_alive = True
        self.queue = queue.Queue()
        self.lock = threading.Lock()
        # Ids delivered to the sheep and not answered yet.
        self.due = set()
        self.hold_until = 0.0
        self.answer_after = {}
        self.delay_until = 0.0
        self.held = 0
        self.finished = threading.Event()
        self.counts = {}
        self.threads = [threading.Thread(target=self._read_requests),
                        threading.Thread(target=self._deliver),
                        threading.Thread(target=self._read_responses)]
        for thread in self.threads:
            thread.daemon = True
            thread.start()

    @property
    def quiet(self):
        """Nothing held, and nothing due that the sheep may still answer.

        Once the sheep's side ended (it closed, or died), nothing more
        is answered: what it took was executed or never will be.
        """
        with self.lock:
            return not self.held and (not self.due or
                                      self.finished.is_set())

    def _send_client(self, data):
        with self.client_lock:
            if not self.client_alive:
                return
            try:
                self.client.sendall(data)
            except (socket.error, OSError):
                self.client_alive = False

    def reset_client(self):
        with self.client_lock:
            if self.client_alive:
                self.client_alive = False
                _close(self.client, rst=True)

    def _read_requests(self):
        while not self.proxy.stopping.is_set():
            header = _receive(self.client, HEADER_SIZE)
            if header is None:
                break
            flags, length = struct.unpack_from('<H', header, 2)[0], \
                struct.unpack_from('<I', header, 12)[0]
            data = b''
            if length and flags & FLAG_CMD_WRITE:
                data = _receive(self.client, length)
                if data is None:
                    # A request cut off: sheep would drop it too.
                    break
            opcode = bytearray(header)[1]
            self.counts[opcode] = self.counts.get(opcode, 0) + 1
            request = Request(self, header, data,
                              self.proxy._count(opcode),
                              self.counts[opcode])
            fault = self.proxy._fault_for(request)
            if fault is not None:
                request.action = fault.action
            self.proxy._log(request)
            if fault is None:
                self._enqueue(request)
                continue
            if fault.action == 'trigger':
                fault.callback(request)
                self._enqueue(request)
                continue
            if fault.action == 'forge':
                self._send_client(_response(request, fault.result,
                                            fault.data, fault.fields))
            elif fault.action == 'reset':
                if fault.forward:
                    self._enqueue(request)
                self.reset_client()
                break
            elif fault.action == 'hold':
                with self.lock:
                    self.hold_until = max(self.hold_until,
                                          timeutils.now() + fault.seconds)
                self._enqueue(request)
            elif fault.action == 'delay':
                with self.lock:
                    self.answer_after[request.id] = fault.seconds
                self._enqueue(request)
        # The client is gone: what was queued is still delivered.
        self.queue.put(None)

    def _enqueue(self, request):
        with self.lock:
            self.held += 1
            deliver_at = self.hold_until
        self.queue.put((deliver_at, request))

    def _sleep_until(self, when):
        while not self.proxy.stopping.is_set():
            left = when - timeutils.now()
            if left <= 0:
                return True
            time.sleep(min(left, 0.05))
        return False

    def _deliver(self):
        try:
            while True:
                item = self.queue.get()
                if item is None:
                    break
                deliver_at, request = item
                if not self._sleep_until(deliver_at):
                    return
                with self.lock:
                    self.due.add(request.id)
                try:
                    self.upstream.sendall(request.header + request.data)
                except (socket.error, OSError):
                    with self.lock:
                        self.due.discard(request.id)
                        self.held = 0
                    return
                finally:
                    with self.lock:
                        self.held = max(0, self.held - 1)
            # Everything delivered: wait for the answers still due, so
            # that quiet means landed, then let the sheep go.
            deadline = timeutils.now() + ANSWER_WAIT
            while timeutils.now() < deadline and not (
                    self.proxy.stopping.is_set() or
                    self.finished.is_set()):
                with self.lock:
                    if not self.due:
                        break
                time.sleep(0.02)
        finally:
            with self.lock:
                self.held = 0
            try:
                self.upstream.shutdown(socket.SHUT_WR)
            except (socket.error, OSError):
                pass

    def _read_responses(self):
        try:
            while True:
                header = _receive(self.upstream, HEADER_SIZE)
                if header is None:
                    break
                (_ver, _opcode, _flags, _epoch, req_id,
                 length) = _COMMON.unpack_from(header)
                data = b''
                if length:
                    data = _receive(self.upstream, length)
                    if data is None:
                        break
                with self.lock:
                    self.due.discard(req_id)
                    pause = self.answer_after.pop(req_id, None)
                    if pause is not None:
                        self.delay_until = max(self.delay_until,
                                               timeutils.now() + pause)
                    delay_until = self.delay_until
                if not self._sleep_until(delay_until):
                    break
                self._send_client(header + data)
        finally:
            # The sheep closed or went: so does the client's side, and
            # the link's sockets are closed (a test counts its fds).
            with self.client_lock:
                self.client_alive = False
                _close(self.client)
            # Closed before finished is set: a test that waits for it
            # then counts its fds.
            _close(self.upstream)
            self.finished.set()

    def close(self):
        with self.client_lock:
            self.client_alive = False
            _close(self.client)
        _close(self.upstream)
        self.queue.put(None)
        for thread in self.threads:
            thread.join(10)

    def alive_threads(self):
        return [thread for thread in self.threads if thread.is_alive()]


class FaultProxy(fixtures.Fixture):
    """A proxy to the sheep at address:port on a loopback port of its own.

    ``port`` is where clients connect; ``accepted`` counts the
    connections made to it; ``log`` lists every request received, in
    order, as ``Request`` objects whose ``action`` says what was done.
    """

    def __init__(self, port, address='127.0.0.1', faults=()):
        super(FaultProxy, self).__init__()
        self.upstream = (address, port)
        self.address = address
        self.faults = list(faults)

    def _setUp(self):
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._counts = {}
        self.links = []
        self.log = []
        self.accepted = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((self.address, 0))
        self.listener.listen(64)
        # accept() wakes up to see stop(), green or not.
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.addCleanup(self.stop)
        self._acceptor = threading.Thread(target=self._accept)
        self._acceptor.daemon = True
        self._acceptor.start()

    def add(self, fault):
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self):
        with self._lock:
            self.faults = []

    def _count(self, opcode):
        with self._lock:
            self._counts[opcode] = self._counts.get(opcode, 0) + 1
            return self._counts[opcode]

    def _fault_for(self, request):
        with self._lock:
            for fault in self.faults:
                if fault.take(request):
                    return fault
        return None

    def _log(self, request):
        with self._lock:
            self.log.append(request)

    def requests(self, opcode=None):
        with self._lock:
            return [request for request in self.log
                    if opcode is None or request.opcode == opcode]

    def _accept(self):
        while not self.stopping.is_set():
            try:
                client, _peer = self.listener.accept()
            except socket.timeout:
                continue
            except (socket.error, OSError):
                return
            if self.stopping.is_set():
                _close(client)
                return
            try:
                upstream = socket.create_connection(self.upstream, 10)
                upstream.settimeout(None)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY,
                                    1)
            except (socket.error, OSError):
                # The sheep is gone: so is this connection.
                with self._lock:
                    self.accepted += 1
                _close(client, rst=True)
                continue
            client.settimeout(None)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.accepted += 1
                index = len(self.links)
                self.links.append(_Link(self, index, client, upstream))

    @property
    def quiet(self):
        with self._lock:
            links = list(self.links)
        return all(link.quiet for link in links)

    def wait_quiet(self, timeout=60):
        """True once nothing is held and every delivered request answered.

        A held request counts until its sheep took it; a request the
        sheep never answers (it died) counts until its link ended.
        """
        deadline = timeutils.now() + timeout
        while timeutils.now() < deadline:
            if self.quiet:
                return True
            time.sleep(0.05)
        return self.quiet

    def stop(self):
        """Close every socket and join every thread of the proxy."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        _close(self.listener)
        self._acceptor.join(10)
        with self._lock:
            links = list(self.links)
        for link in links:
            link.close()
        left = [thread for link in links for thread in link.alive_threads()]
        if self._acceptor.is_alive():
            left.append(self._acceptor)
        if left:
            raise RuntimeError('fault proxy threads still running: %s'
                               % left)
