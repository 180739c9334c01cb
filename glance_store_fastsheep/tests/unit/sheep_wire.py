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
"""Sheep's side of the wire, for the fake sheep and the tests.

Written from sheepdog 1.0.1's ``include/sheepdog_proto.h`` and
``include/internal_proto.h``, importing nothing of the client's codec
(``glance_store_fastsheep.native``): the fake sheep then answers with
bytes laid out by a second reading of the headers, and an encoding
mistake of the client shows as a unit test failing, not as two copies
of one mistake agreeing. Everything is little-endian, as sheep on
x86-64 sends it.
"""

import socket
import struct

# SD_REQ_SIZE and SD_RSP_SIZE.
HEADER_SIZE = 48
# SD_PROTO_VER, and SD_SHEEP_PROTO_VER of 1.0.1 (internal operations).
PROTO_VER = 0x02
SHEEP_PROTO_VER = 0x0a

# SD_OP_* (sheepdog_proto.h, then internal_proto.h).
CREATE_AND_WRITE_OBJ = 0x01
READ_OBJ = 0x02
WRITE_OBJ = 0x03
REMOVE_OBJ = 0x04
NEW_VDI = 0x11
GET_VDI_INFO = 0x14
READ_VDIS = 0x15
DEL_VDI = 0x17
GET_CLUSTER_DEFAULT = 0x18
GET_NODE_LIST = 0x82
STAT_CLUSTER = 0x87
GET_VDI_ATTR = 0x89
STAT_RECOVERY = 0x97

# SD_FLAG_CMD_*.
FLAG_CMD_WRITE = 0x01
FLAG_CMD_DIRECT = 0x08
FLAG_CMD_CREAT = 0x0100
FLAG_CMD_EXCL = 0x0200
FLAG_CMD_DEL = 0x0400

# SD_RES_* the fake answers by name.
SUCCESS = 0x00
NO_OBJ = 0x02
VDI_EXIST = 0x04
INVALID_PARMS = 0x05
NO_VDI = 0x08
VER_MISMATCH = 0x14
HALT = 0x19
NEW_NODE_VER = 0x82

SD_MAX_VDI_LEN = 256
SD_MAX_VDI_TAG_LEN = 256
SD_MAX_VDI_ATTR_KEY_LEN = 256
SD_MAX_VDI_ATTR_VALUE_LEN = 65536

# Object ids: type bits at the top, the VDI in bits 32-55, a data
# object's index (or an attribute's slot) in bits 0-31.
VDI_BIT = 1 << 63
VDI_ATTR_BIT = 1 << 61


def vid_of(oid):
    return (oid >> 32) & 0xffffff


def data_oid(vid, index):
    return (vid << 32) | index


def attr_oid(vid, slot):
    return VDI_ATTR_BIT | (vid << 32) | slot


# -- headers -----------------------------------------------------------

# sd_req and sd_rsp start alike: proto_ver, opcode, flags, epoch, id,
# data_length; a 32-byte union follows.
_HEAD = struct.Struct('<BBHIII')
# The union's views this fake reads or writes.
_REQ_OBJ = struct.Struct('<QQBBBBIII')     # oid ... offset, __pad
_REQ_VDI = struct.Struct('<QIBBBBII8x')    # vdi_size ... snapid, type
_RSP_VDI = struct.Struct('<IIIIBB2x12x')   # result, rsvd, vdi_id, attr_id
_RSP_DEFAULT = struct.Struct('<IBBBx24x')  # sd_rsp.cluster_default
EPOCH_OFFSET = 4
assert _HEAD.size + _REQ_OBJ.size == HEADER_SIZE
assert _HEAD.size + _REQ_VDI.size == HEADER_SIZE
assert _HEAD.size + _RSP_VDI.size == HEADER_SIZE
assert _HEAD.size + _RSP_DEFAULT.size == HEADER_SIZE


class Request(object):
    """A request header as sheep reads it, every field a test looks at."""

    def __init__(self, raw):
        raw = bytes(raw)
        (self.proto_ver, self.opcode, self.flags, self.epoch, self.id,
         self.data_length) = _HEAD.unpack_from(raw)
        (self.oid, _cow_oid, self.copies, self.copy_policy, _ec_index,
         _reserved, _tgt_epoch, self.offset, _pad) = _REQ_OBJ.unpack_from(
             raw, _HEAD.size)
        (self.vdi_size, _base_vdi_id, self.vdi_copies, _vdi_copy_policy,
         _store_policy, self.block_size_shift, self.snapid,
         _type) = _REQ_VDI.unpack_from(raw, _HEAD.size)


class Response(object):
    """A response header read back (sd_rsp.vdi's view of the union)."""

    FIELDS = ('data_length', 'vdi_id', 'proto_ver', 'copies',
              'block_size_shift', 'nr_nodes', 'attr_id')

    def __init__(self, raw):
        raw = bytes(raw)
        (self.proto_ver, self.opcode, self.flags, self.epoch, self.id,
         self.data_length) = _HEAD.unpack_from(raw)
        (self.result, self.nr_nodes, self.vdi_id, self.attr_id, self.copies,
         self.block_size_shift) = _RSP_VDI.unpack_from(raw, _HEAD.size)


def response(req_id, opcode, result, data_length=0, vdi_id=0,
             proto_ver=PROTO_VER, copies=0, block_size_shift=0,
             nr_nodes=0, attr_id=0):
    """A response header, as sheep sends one.

    nr_nodes is sd_rsp.node's, in the place of sd_rsp.vdi's rsvd.
    """
    return (_HEAD.pack(proto_ver, opcode, 0, 0, req_id, data_length) +
            _RSP_VDI.pack(result, nr_nodes, vdi_id, attr_id, copies,
                          block_size_shift))


def cluster_default(req_id, opcode, nr_copies, copy_policy,
                    block_size_shift):
    """GET_CLUSTER_DEFAULT's answer (sd_rsp.cluster_default)."""
    return (_HEAD.pack(PROTO_VER, opcode, 0, 0, req_id, 0) +
            _RSP_DEFAULT.pack(SUCCESS, nr_copies, copy_policy,
                              block_size_shift))


def with_epoch(header, epoch):
    """header (and what follows it) with its epoch field set."""
    return (header[:EPOCH_OFFSET] + struct.pack('<I', epoch) +
            header[EPOCH_OFFSET + 4:])


# -- struct sd_inode -------------------------------------------------------

# name, tag, create_time, snap_ctime, vm_clock_nsec, vdi_size,
# vm_state_size, copy_policy, store_policy, nr_copies, block_size_shift,
# snap_id, vdi_id, parent_vdi_id, btree_counter, __unused[1023]: the
# header before data_vdi_id.
_INODE_HEADER = struct.Struct('<256s256sQQQQQBBBBIIII4092x')
INODE_HEADER_SIZE = _INODE_HEADER.size
assert INODE_HEADER_SIZE == 4664
# Where vdi_size and the data_vdi_id entries (SD_INODE_DATA_INDEX of
# them, uint32 each) are.
VDI_SIZE_OFFSET = 256 + 256 + 8 * 3
DATA_VDI_ID_OFFSET = INODE_HEADER_SIZE
DATA_VDI_ID_ENTRIES = 1 << 20
DATA_VDI_ID_END = DATA_VDI_ID_OFFSET + 4 * DATA_VDI_ID_ENTRIES


def inode_header(name, vdi_size, vdi_id, parent_vdi_id, block_size_shift,
                 store_policy, nr_copies, create_time, copy_policy,
                 snap_id=1):
    """An sd_inode's bytes up to its data_vdi_id table."""
    if not isinstance(name, bytes):
        name = name.encode('utf-8')
    return _INODE_HEADER.pack(name, b'', create_time, 0, 0, vdi_size, 0,
                              copy_policy, store_policy, nr_copies,
                              block_size_shift, snap_id, vdi_id,
                              parent_vdi_id, 0)


def entries(values):
    """data_vdi_id entries (or any uint32 array) as bytes."""
    return struct.pack('<%dI' % len(values), *values)


def read_entries(data):
    return list(struct.unpack('<%dI' % (len(data) // 4), data))


def read_uint64(data):
    return struct.unpack('<Q', data)[0]


# -- struct sheepdog_vdi_attr ----------------------------------------------

# name, tag, ctime, snap_id, value_len, key; then the value.
_ATTR = struct.Struct('<256s256sQII256s')
ATTR_OBJ_SIZE = _ATTR.size + SD_MAX_VDI_ATTR_VALUE_LEN


def _encoded(text):
    """text as bytes; struct's ``s`` format pads it with NULs."""
    return text if isinstance(text, bytes) else text.encode('utf-8')


def attr_object(name, key, value, ctime):
    """An attribute object as sheep stores it: its header, then value."""
    return _ATTR.pack(_encoded(name), b'', ctime, 0, len(value),
                      _encoded(key)) + value


def read_attr(data):
    """(name, ctime, key, value) of an attribute object (or request)."""
    name, _tag, ctime, _snap_id, value_len, key = _ATTR.unpack_from(
        bytes(data[:_ATTR.size]))
    value = bytes(data[_ATTR.size:_ATTR.size + value_len])
    return name.rstrip(b'\0'), ctime, key.rstrip(b'\0'), value


def vdi_name(data):
    """The VDI name a NEW_VDI, GET_VDI_INFO or DEL_VDI carries."""
    return data[:SD_MAX_VDI_LEN].rstrip(b'\0').decode('utf-8')


# -- struct sd_node and struct recovery_state ------------------------------

# rb_node (three pointers), node_id (addr, port, io_addr, io_port,
# pad[4]), nr_vnodes, alignment, zone, space: 80 bytes; a build with
# disk vnodes adds DISK_MAX (32) struct disk_info of 16 bytes.
_SD_NODE = struct.Struct('<24x16sH16sH4xH2xIQ')
NODE_SIZE = _SD_NODE.size
DISK_NODE_SIZE = NODE_SIZE + 32 * 16
assert NODE_SIZE == 80


def node_address(address):
    """node_id's 16-byte address of an IPv4 address (v4-mapped)."""
    return b'\0' * 12 + socket.inet_aton(address)


def node_id(address, port):
    """The bytes sheep hashes a node by: node_id's addr and port."""
    return node_address(address) + struct.pack('<H', port)


def node_entry(address, port, size=NODE_SIZE, nr_vnodes=0, zone=0):
    """One GET_NODE_LIST entry (struct sd_node) of an IPv4 node."""
    entry = _SD_NODE.pack(node_address(address), port, b'\0' * 16, 0,
                          nr_vnodes, zone, 0)
    return entry.ljust(size, b'\0')


_RECOVERY_STATE = struct.Struct('<B3xIQQ')


def recovery_state(in_recovery, state, nr_finished, nr_total):
    """STAT_RECOVERY's data: in_recovery, enum rw_state, counts."""
    return _RECOVERY_STATE.pack(in_recovery, state, nr_finished, nr_total)
