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
"""Sheep's framing as the fault proxy reads and writes it.

A request is a 48-byte header, then ``data_length`` bytes when it
carries ``SD_FLAG_CMD_WRITE``; a response is a 48-byte header, then
``data_length`` bytes. The layouts are written here from sheepdog's
``include/sheepdog_proto.h`` and ``include/internal_proto.h`` (1.0.1),
not taken from the client's ``native/proto.py``: an encoding mistake of
the client then shows as a request the proxy reads differently, not as
two copies of one mistake agreeing. They stand apart from the proxy's
threads so that a fault's predicate, or a test naming an opcode or a
result, reads the codec alone.
"""

import errno
import socket
import struct

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


def request_data_length(header):
    """How many data bytes follow a request header on the wire.

    Sheep reads ``data_length`` bytes after the header only when the
    request carries ``SD_FLAG_CMD_WRITE``: a read's ``data_length`` is
    what it asks for, not what it sends.
    """
    flags, length = struct.unpack_from('<H', header, 2)[0], \
        struct.unpack_from('<I', header, 12)[0]
    if length and flags & FLAG_CMD_WRITE:
        return length
    return 0


def response_id_and_length(header):
    """The request id a response header answers, and its data length."""
    (_ver, _opcode, _flags, _epoch, req_id,
     length) = _COMMON.unpack_from(header)
    return req_id, length


def response(request, result, data=b'', fields=None):
    """A whole answer to request: a forged result, as sheep frames one."""
    fields = fields or {}
    header = _COMMON.pack(0, request.opcode, 0, 0, request.id, len(data))
    header += _RSP.pack(result, fields.get('nr_nodes', 0),
                        fields.get('vdi_id', 0), fields.get('attr_id', 0),
                        fields.get('copies', 0),
                        fields.get('block_size_shift', 0))
    return header + data


def receive(sock, size):
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


def close(sock, rst=False):
    """Close sock, with a reset (RST) rather than a FIN when rst is set.

    Whatever the socket's state, closing never raises: the proxy closes
    what a peer may have closed already.
    """
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
