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
"""Sheep's client wire format, as far as reading an image needs it.

The layouts follow sheepdog 1.0's public protocol (version 0x02): a
48-byte request header, optionally followed by data the client sends,
and a 48-byte response header followed by ``data_length`` bytes. Fields
are in the sender's byte order, which is little-endian on every platform
sheepdog was released for. Only two public operations are used:
``GET_VDI_INFO`` (a name, snapshot id or tag to a VDI id) and
``READ_OBJ`` (bytes of one object). The result codes keep sheepdog's own
names so that an error message can be looked up in sheepdog's
documentation and logs.
"""

import struct

PROTO_VER = 0x02
HEADER_SIZE = 48

OP_READ_OBJ = 0x02
OP_GET_VDI_INFO = 0x14

FLAG_CMD_WRITE = 0x01
# Bypass sheep's object cache: how `dog` reads an inode.
FLAG_CMD_DIRECT = 0x08

MAX_VDI_LEN = 256
MAX_VDI_TAG_LEN = 256

# Object ids: bit 63 marks a VDI (inode) object, bits 32-55 hold the VDI
# id, bits 0-31 the data object's index.
VDI_BIT = 1 << 63
VDI_SPACE_SHIFT = 32
DEFAULT_BLOCK_SIZE_SHIFT = 22

# struct sd_inode, the fields read here. The header (everything before
# data_vdi_id) is 4664 bytes: name and tag (256 each), five 64-bit
# times and sizes, four policy bytes, three 32-bit ids, btree_counter and
# 1023 unused 32-bit words.
INODE_VDI_SIZE_OFFSET = 536
INODE_FIELDS_SIZE = 568  # through parent_vdi_id
INODE_DATA_INDEX_OFFSET = 4664
INODE_DATA_INDEX_ENTRIES = 1 << 20

# proto_ver, opcode, flags, epoch, id, data_length: both headers start so.
_COMMON = '<BBHIII'
# sd_req.obj: oid, cow_oid, copies, copy_policy, ec_index, reserved,
# tgt_epoch, offset, pad.
_REQ_OBJ = struct.Struct(_COMMON + 'QQBBBBIII')
# sd_req.vdi: vdi_size, base_vdi_id, copies, copy_policy, store_policy,
# block_size_shift, snapid, type, then 8 bytes of padding.
_REQ_VDI = struct.Struct(_COMMON + 'QIBBBBII8x')
# sd_rsp: the common part, result, and sd_rsp.vdi's rsvd, vdi_id.
_RSP = struct.Struct(_COMMON + 'III20x')
_INODE_FIELDS = struct.Struct('<256s256sQQQQQBBBBIII')

assert _REQ_OBJ.size == HEADER_SIZE
assert _REQ_VDI.size == HEADER_SIZE
assert _RSP.size == HEADER_SIZE

# Public result codes (0x00-0x1D) and the sheep-internal ones (0x81 on)
# that a gateway can hand a client: sheepdog's name and description.
RESULTS = {
    0x00: ('SD_RES_SUCCESS', 'Success'),
    0x01: ('SD_RES_UNKNOWN', 'Unknown error'),
    0x02: ('SD_RES_NO_OBJ', 'No object found'),
    0x03: ('SD_RES_EIO', 'I/O error'),
    0x04: ('SD_RES_VDI_EXIST', 'VDI exists already'),
    0x05: ('SD_RES_INVALID_PARMS', 'Invalid parameters'),
    0x06: ('SD_RES_SYSTEM_ERROR', 'System error'),
    0x07: ('SD_RES_VDI_LOCKED', 'VDI is locked'),
    0x08: ('SD_RES_NO_VDI', 'No VDI found'),
    0x09: ('SD_RES_NO_BASE_VDI', 'No base VDI found'),
    0x0A: ('SD_RES_VDI_READ', 'Cannot read requested VDI'),
    0x0B: ('SD_RES_VDI_WRITE', 'Cannot write requested VDI'),
    0x0C: ('SD_RES_BASE_VDI_READ', 'Cannot read base VDI'),
    0x0D: ('SD_RES_BASE_VDI_WRITE', 'Cannot write base VDI'),
    0x0E: ('SD_RES_NO_TAG', 'Requested tag is not found'),
    0x0F: ('SD_RES_STARTUP', 'Sheepdog is starting up'),
    0x10: ('SD_RES_VDI_NOT_LOCKED', 'VDI is not locked'),
    0x11: ('SD_RES_SHUTDOWN', 'Sheepdog is shutting down'),
    0x12: ('SD_RES_NO_MEM', 'Cannot allocate memory'),
    0x13: ('SD_RES_FULL_VDI', 'Maximum number of VDIs reached'),
    0x14: ('SD_RES_VER_MISMATCH', 'Protocol version mismatch'),
    0x15: ('SD_RES_NO_SPACE', 'Server has no room for new objects'),
    0x16: ('SD_RES_WAIT_FOR_FORMAT', 'Waiting for a format operation'),
    0x17: ('SD_RES_WAIT_FOR_JOIN', 'Waiting for other nodes to join'),
    0x18: ('SD_RES_JOIN_FAILED', 'Node failed to join the cluster'),
    0x19: ('SD_RES_HALT', 'Sheepdog stopped doing I/O'),
    0x1A: ('SD_RES_READONLY', 'Object is read-only'),
    0x1D: ('SD_RES_INODE_INVALIDATED', 'Inode object is invalidated'),
    0x81: ('SD_RES_OLD_NODE_VER', 'Request has an old epoch'),
    0x82: ('SD_RES_NEW_NODE_VER', 'Request has a new epoch'),
    0x83: ('SD_RES_NOT_FORMATTED', 'Cluster has not been formatted'),
    0x86: ('SD_RES_NETWORK_ERROR', 'Network error between sheep'),
    0x8C: ('SD_RES_NODE_IN_RECOVERY', 'Targeted node is in recovery'),
    0x8D: ('SD_RES_KILLED', 'Node is killed'),
    0x8F: ('SD_RES_AGAIN', 'Ask to try again'),
}

SUCCESS = 0x00
NO_OBJ = 0x02
NO_VDI = 0x08
NO_TAG = 0x0E
VER_MISMATCH = 0x14

# The results a sheep gateway itself retries a request on (sheep's
# gateway_op_done: a membership change, a peer lost, a node not ready
# yet), plus SD_RES_AGAIN, which says so in its name. The same request
# sent again later can succeed; any other result is final.
RETRYABLE = frozenset([0x0F, 0x16, 0x17, 0x81, 0x82, 0x86, 0x8C, 0x8D,
                       0x8F])


class ProtocolError(Exception):
    """Sheep sent something the protocol does not allow."""


def result_text(code):
    """'SD_RES_NAME (description)' of a result code, or 'unknown 0xNN'."""
    known = RESULTS.get(code)
    if known is None:
        return 'unknown result 0x%02x' % code
    return '%s (%s)' % known


def vdi_oid(vid):
    """The object id of a VDI's inode."""
    return VDI_BIT | (vid << VDI_SPACE_SHIFT)


def data_oid(vid, index):
    """The object id of the index-th data object owned by VDI vid."""
    return (vid << VDI_SPACE_SHIFT) | index


def pack_read(req_id, oid, offset, length, flags=0):
    """A READ_OBJ request header: length bytes at offset of object oid."""
    return _REQ_OBJ.pack(PROTO_VER, OP_READ_OBJ, flags, 0, req_id, length,
                         oid, 0, 0, 0, 0, 0, 0, offset, 0)


def pack_vdi_info(req_id, name, snapid=0, tag=''):
    """A GET_VDI_INFO request: header and the name/tag data it carries.

    snapid 0 and an empty tag name the writable (current) VDI.
    """
    name = name.encode('utf-8') if not isinstance(name, bytes) else name
    tag = tag.encode('utf-8') if not isinstance(tag, bytes) else tag
    if len(name) >= MAX_VDI_LEN or len(tag) >= MAX_VDI_TAG_LEN:
        raise ValueError('VDI name or tag too long for sheep')
    data = (name.ljust(MAX_VDI_LEN, b'\0') +
            tag.ljust(MAX_VDI_TAG_LEN, b'\0'))
    header = _REQ_VDI.pack(PROTO_VER, OP_GET_VDI_INFO, FLAG_CMD_WRITE, 0,
                           req_id, len(data), 0, 0, 0, 0, 0, 0, snapid, 0)
    return header + data


class Response(object):
    """One response header's fields."""

    __slots__ = ('proto_ver', 'opcode', 'flags', 'epoch', 'id',
                 'data_length', 'result', 'vdi_id')

    def __init__(self, raw):
        (self.proto_ver, self.opcode, self.flags, self.epoch, self.id,
         self.data_length, self.result, _rsvd, self.vdi_id) = _RSP.unpack(
            bytes(raw))


def unpack_response(raw):
    """The Response in 48 bytes."""
    if len(raw) != HEADER_SIZE:
        raise ProtocolError('a response header is %d bytes, got %d'
                            % (HEADER_SIZE, len(raw)))
    return Response(raw)


def pack_response(req_id, opcode, result, data_length=0, vdi_id=0,
                  proto_ver=PROTO_VER):
    """A response header, as sheep sends one (for test servers)."""
    return _RSP.pack(proto_ver, opcode, 0, 0, req_id, data_length, result,
                     0, vdi_id)


def unpack_request(raw):
    """(opcode, id, data_length, oid, offset, snapid) of a request header.

    Used by test servers; oid and offset are meaningful for READ_OBJ,
    snapid for GET_VDI_INFO.
    """
    fields = _REQ_OBJ.unpack(bytes(raw))
    vdi = _REQ_VDI.unpack(bytes(raw))
    return fields[1], fields[4], fields[5], fields[6], fields[13], vdi[12]


class InodeFields(object):
    """The inode fields a reader needs, from its first 568 bytes."""

    def __init__(self, raw):
        fields = _INODE_FIELDS.unpack(bytes(raw[:INODE_FIELDS_SIZE]))
        self.name = fields[0].rstrip(b'\0')
        self.vdi_size = fields[5]
        self.store_policy = fields[8]
        self.block_size_shift = (fields[10] or DEFAULT_BLOCK_SIZE_SHIFT)
        self.vdi_id = fields[12]
        self.parent_vdi_id = fields[13]

    @property
    def object_size(self):
        return 1 << self.block_size_shift


def pack_inode_fields(name, vdi_size, vdi_id, parent_vdi_id=0,
                      block_size_shift=DEFAULT_BLOCK_SIZE_SHIFT,
                      store_policy=0):
    """An inode's first INODE_FIELDS_SIZE bytes (for test servers)."""
    name = name.encode('utf-8') if not isinstance(name, bytes) else name
    return _INODE_FIELDS.pack(name, b'', 0, 0, 0, vdi_size, 0, 0,
                              store_policy, 1, block_size_shift, 0, vdi_id,
                              parent_vdi_id)
