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
"""Sheep's client wire format, as far as the native client needs it.

The layouts follow sheepdog 1.0's public protocol (version 0x02,
``include/sheepdog_proto.h``): a 48-byte request header, optionally
followed by data the client sends, and a 48-byte response header
followed by ``data_length`` bytes. Fields are in the sender's byte
order, which is little-endian on every platform sheepdog was released
for. The public operations used are the ones ``dog vdi create``,
``write``, ``read`` and ``delete`` send; four internal ones
(``STAT_CLUSTER``, ``GET_NODE_LIST``, ``GET_VDI_ATTR``,
``STAT_RECOVERY``) carry sheep's
own internal protocol version, which changed between releases
(``SHEEP_VERSIONS``).
The result codes keep sheepdog's own names so that an error message can
be looked up in sheepdog's documentation and logs.

The headers, the operations and what the requests carry are here; what
sheep answers in its two larger structures is read by ``inode_layout``
(struct sd_inode) and ``node_list`` (GET_NODE_LIST's struct sd_node
entries), which check their numbers as ``check_success`` checks a
header's.
"""

import collections
import struct

from glance_store import exceptions

from glance_store_fastsheep import results

PROTO_VER = 0x02
HEADER_SIZE = 48

OP_CREATE_AND_WRITE_OBJ = 0x01
OP_READ_OBJ = 0x02
OP_WRITE_OBJ = 0x03
OP_REMOVE_OBJ = 0x04
OP_NEW_VDI = 0x11
OP_GET_VDI_INFO = 0x14
OP_READ_VDIS = 0x15
OP_DEL_VDI = 0x17
# From sheepdog 1.0 on; 0.9 has a fixed block_size_shift of 22.
OP_GET_CLUSTER_DEFAULT = 0x18
# Internal operations (0x80 on): sheep refuses them with VER_MISMATCH
# unless proto_ver is its own SD_SHEEP_PROTO_VER exactly.
OP_GET_NODE_LIST = 0x82
OP_STAT_CLUSTER = 0x87
# A sheep's own object recovery state (``dog node recovery``).
OP_STAT_RECOVERY = 0x97
# Look up, set or delete a VDI attribute (``dog vdi getattr/setattr``).
OP_GET_VDI_ATTR = 0x89
# SD_SHEEP_PROTO_VER of the releases this client knows: 0x0a on 1.0.x
# and master, 0x09 on 0.9.x.
SHEEP_VERSIONS = {0x0a: 'sheepdog 1.0 or later', 0x09: 'sheepdog 0.9'}
# GET_NODE_LIST answers struct sd_node entries: 80 bytes, or 592 where
# sheep was built with disk vnodes (DISK_MAX disk_info entries more).
# Sheep writes them into a buffer of the request's data_length without
# checking its size, so the request asks for what ``dog`` asks for:
# SD_MAX_NODES entries, the same 491520 bytes or less in both builds.
NODE_LIST_BUFFER = 6144 * 80
NODE_SIZES = (80, 80 + 16 * 32)
# SD_MAX_NODES (include/internal_proto.h of 0.9.5, 1.0.1 and master):
# the members a cluster can have, 6144, or 830 in a build with disk
# vnodes, whose larger entries fill the same buffer.
MAX_NODES = {NODE_SIZES[0]: 6144, NODE_SIZES[1]: 830}

FLAG_CMD_WRITE = 0x01
# Bypass sheep's object cache: how `dog` reads an inode; 0.9's object
# cache needs it for every inode update to reach the cluster at once.
FLAG_CMD_DIRECT = 0x08
# GET_VDI_ATTR's internal flags: create (overwrite) the attribute,
# refuse an existing one (with CREAT), delete it.
FLAG_CMD_CREAT = 0x0100
FLAG_CMD_EXCL = 0x0200
FLAG_CMD_DEL = 0x0400

MAX_VDI_LEN = 256
MAX_VDI_TAG_LEN = 256

# Object ids: bit 63 marks a VDI (inode) object, bits 32-55 hold the VDI
# id, bits 0-31 the data object's index.
VDI_BIT = 1 << 63
VDI_SPACE_SHIFT = 32
# VDI ids are 24 bits (SD_NR_VDIS); sheep never gives a VDI id 0
# (get_vdi_bitmap_range in sheep/vdi.c skips it), which the object
# table uses for a hole.
NR_VDIS = 1 << 24
# A flat (store policy 0) inode's data_vdi_id array has
# OLD_MAX_DATA_OBJS (2^20) entries, the only object table this client
# reads or writes (``inode_layout``): a data object's index is below it.
MAX_FLAT_OBJECTS = 1 << 20
# SD_MAX_COPIES (internal_proto.h): SD_EC_MAX_STRIP (16, fec.h) data
# strips and up to 15 parity strips (``inode_layout.check_redundancy``).
MAX_COPIES = 31
# Attribute objects: bit 61, the VDI id sheep hashes from the name, and
# the attribute's slot in bits 0-31.
VDI_ATTR_BIT = 1 << 61

# struct sheepdog_vdi_attr: name, tag, ctime, snap_id, value_len, key
# (ATTR_HEADER_SIZE bytes), then a 64 KiB value; the object is the
# whole struct, and GET_VDI_ATTR carries it whole, as dog sends it.
MAX_VDI_ATTR_KEY_LEN = 256
MAX_VDI_ATTR_VALUE_LEN = 65536
_ATTR_HEADER = struct.Struct('<256s256sQII256s')
ATTR_HEADER_SIZE = _ATTR_HEADER.size
ATTR_OBJ_SIZE = ATTR_HEADER_SIZE + MAX_VDI_ATTR_VALUE_LEN

# proto_ver, opcode, flags, epoch, id, data_length: both headers start so.
_COMMON = '<BBHIII'
# sd_req.obj: oid, cow_oid, copies, copy_policy, ec_index, reserved,
# tgt_epoch, offset, pad.
_REQ_OBJ = struct.Struct(_COMMON + 'QQBBBBIII')
# sd_req.vdi: vdi_size, base_vdi_id, copies, copy_policy, store_policy,
# block_size_shift, snapid, type, then 8 bytes of padding.
_REQ_VDI = struct.Struct(_COMMON + 'QIBBBBII8x')
# sd_rsp: the common part, result, and sd_rsp.vdi's rsvd, vdi_id,
# attr_id, copies and block_size_shift (what NEW_VDI answers).
_RSP = struct.Struct(_COMMON + 'IIIIBB14x')
# sd_req.cluster (STAT_CLUSTER): oid, ctime, copies, copy_policy, flags,
# tag, nodes_nr, block_size_shift.
_REQ_CLUSTER = struct.Struct(_COMMON + 'QQBBHIIB3x')
_UINT64 = struct.Struct('<Q')

assert _REQ_OBJ.size == HEADER_SIZE
assert _REQ_VDI.size == HEADER_SIZE
assert _RSP.size == HEADER_SIZE
assert _REQ_CLUSTER.size == HEADER_SIZE

# Sheep's result codes are the shared results module's, where both
# clients map them to glance_store exceptions; the protocol's users
# name them here.
RESULTS = results.RESULTS
SUCCESS = results.SUCCESS
NO_OBJ = results.NO_OBJ
VDI_EXIST = results.VDI_EXIST
INVALID_PARMS = results.INVALID_PARMS
VDI_LOCKED = results.VDI_LOCKED
NO_VDI = results.NO_VDI
NO_TAG = results.NO_TAG
FULL_VDI = results.FULL_VDI
VER_MISMATCH = results.VER_MISMATCH
NO_SPACE = results.NO_SPACE
READONLY = results.READONLY
WAIT_FOR_FORMAT = results.WAIT_FOR_FORMAT
NOT_FORMATTED = results.NOT_FORMATTED
result_text = results.result_text

# The results a sheep gateway itself retries a request on (sheep's
# gateway_op_done: a membership change, a peer lost, a node not ready
# yet), plus SD_RES_AGAIN, which says so in its name. The same request
# sent again later can succeed; any other result is final.
RETRYABLE = frozenset([0x0F, 0x16, 0x17, 0x81, 0x82, 0x86, 0x8C, 0x8D,
                       0x8F])


class ProtocolError(exceptions.BackendException):
    """Sheep sent something the protocol does not allow.

    A BackendException, as glance sees any fault of the cluster: it
    passes through the clients to the store unchanged.
    """


# Every number a sheep answers is checked against sheepdog's own limits
# (above) before the client sizes anything by it or builds an object id
# from it. The checks raise ProtocolError with a message that reads on
# after "<sheep> sent ", which ``connection`` puts before it.


def check_vid(vid, what, zero=False):
    """Raise ProtocolError unless vid is a VDI id sheep gives (or 0)."""
    if vid >= NR_VDIS or not (vid or zero):
        raise ProtocolError(
            '%s 0x%x: sheepdog\'s VDI ids are 0x1 to 0x%x (SD_NR_VDIS)'
            % (what, vid, NR_VDIS - 1))


def check_copies(copies, what):
    """Raise ProtocolError unless copies is within SD_MAX_COPIES."""
    if copies > MAX_COPIES:
        raise ProtocolError('%s %d: sheepdog keeps at most %d (SD_MAX_COPIES)'
                            % (what, copies, MAX_COPIES))


def node_entry_size(data_length, nr_nodes):
    """The size of each of nr_nodes (> 0) GET_NODE_LIST entries.

    ProtocolError unless the entries are of a size sheep sends, and no
    more than SD_MAX_NODES of them.
    """
    size, rest = divmod(data_length, nr_nodes)
    if rest or size not in NODE_SIZES:
        raise ProtocolError('%d bytes for %d nodes in GET_NODE_LIST'
                            % (data_length, nr_nodes))
    if nr_nodes > MAX_NODES[size]:
        raise ProtocolError('%d nodes in GET_NODE_LIST: sheepdog clusters '
                            'have at most %d (SD_MAX_NODES)'
                            % (nr_nodes, MAX_NODES[size]))
    return size


def check_success(opcode, response):
    """Raise ProtocolError unless a success's header fields are bounded.

    The VDI id of a lookup or a creation (the client builds object ids
    from it), an attribute's VDI id (the name's hash, which may be 0),
    the copies sheep says the VDI keeps, and GET_NODE_LIST's count.
    """
    if opcode in (OP_GET_VDI_INFO, OP_NEW_VDI):
        check_vid(response.vdi_id, 'VDI id')
        check_copies(response.copies, 'copies')
    elif opcode == OP_GET_VDI_ATTR:
        check_vid(response.vdi_id, 'attribute VDI id', zero=True)
        check_copies(response.copies, 'copies')
    elif opcode == OP_GET_NODE_LIST and response.nr_nodes:
        node_entry_size(response.data_length, response.nr_nodes)


def _oid_part(value, limit, what):
    # A value outside its bits would set those of another VDI or of
    # another kind of object: never built, whatever the caller was told.
    if not 0 <= value < limit:
        raise ValueError('%s %d does not fit an object id (limit %d)'
                         % (what, value, limit))
    return value


def vdi_oid(vid):
    """The object id of a VDI's inode."""
    return VDI_BIT | (_oid_part(vid, NR_VDIS, 'VDI id') << VDI_SPACE_SHIFT)


def attr_oid(vid, attr_id):
    """The object id of attribute slot attr_id of the VDI id vid."""
    return ((_oid_part(vid, NR_VDIS, 'VDI id') << VDI_SPACE_SHIFT) |
            VDI_ATTR_BIT | _oid_part(attr_id, 1 << VDI_SPACE_SHIFT,
                                     'attribute slot'))


def oid_vid(oid):
    """The VDI id an object id belongs to (sheep's oid_to_vid)."""
    return (oid >> VDI_SPACE_SHIFT) & (NR_VDIS - 1)


def data_oid(vid, index):
    """The object id of the index-th data object owned by VDI vid.

    Flat VDIs only (the only kind this client reads or writes): index
    is below MAX_FLAT_OBJECTS, beyond which a flat inode has no entry.
    """
    return ((_oid_part(vid, NR_VDIS, 'VDI id') << VDI_SPACE_SHIFT) |
            _oid_part(index, MAX_FLAT_OBJECTS, 'object index'))


def pack_obj(opcode, req_id, oid, offset, length, flags=0, copies=0,
             copy_policy=0):
    """An object request header (READ/WRITE/CREATE_AND_WRITE/REMOVE_OBJ).

    For a write, length is the data that follows the header; copies and
    copy_policy are the VDI's, as ``dog`` sends them (0: sheep looks
    them up itself).
    """
    return _REQ_OBJ.pack(PROTO_VER, opcode, flags, 0, req_id, length,
                         oid, 0, copies, copy_policy, 0, 0, 0, offset, 0)


def _name_bytes(value, limit):
    value = value.encode('utf-8') if not isinstance(value, bytes) else value
    if len(value) >= limit:
        raise ValueError('VDI name or tag too long for sheep')
    return value.ljust(limit, b'\0')


def pack_vdi(opcode, req_id, name, snapid=0, tag=None, vdi_size=0):
    """A VDI request (NEW_VDI, GET_VDI_INFO, DEL_VDI): header + data.

    The data is the 256-byte name, followed by the 256-byte tag unless
    tag is None (NEW_VDI takes the name alone and refuses any other
    length). copies, copy_policy, store_policy and block_size_shift stay
    0: the cluster's defaults.
    """
    data = _name_bytes(name, MAX_VDI_LEN)
    if tag is not None:
        data += _name_bytes(tag, MAX_VDI_TAG_LEN)
    header = _REQ_VDI.pack(PROTO_VER, opcode, FLAG_CMD_WRITE, 0, req_id,
                           len(data), vdi_size, 0, 0, 0, 0, 0, snapid, 0)
    return header + data


def pack_vdi_attr(req_id, sheep_version, name, key, value=b'', flags=0):
    """GET_VDI_ATTR of key on the current VDI name, as dog sends it.

    flags (FLAG_CMD_CREAT, _EXCL, _DEL) choose set, exclusive set or
    delete; none looks the attribute up. The data is a whole
    struct sheepdog_vdi_attr: sheep writes what it receives.
    """
    value = value.encode('utf-8') if not isinstance(value, bytes) else value
    if len(value) > MAX_VDI_ATTR_VALUE_LEN:
        raise ValueError('VDI attribute value too long for sheep')
    data = _ATTR_HEADER.pack(_name_bytes(name, MAX_VDI_LEN), b'', 0, 0,
                             len(value),
                             _name_bytes(key, MAX_VDI_ATTR_KEY_LEN))
    data += value.ljust(MAX_VDI_ATTR_VALUE_LEN, b'\0')
    header = _REQ_VDI.pack(sheep_version, OP_GET_VDI_ATTR,
                           FLAG_CMD_WRITE | flags, 0, req_id, len(data), 0,
                           0, 0, 0, 0, 0, 0, 0)
    return header + data


def unpack_vdi_attr(raw):
    """(name, ctime, key, value) of an attribute object's first bytes.

    ctime is the create_time of the VDI the attribute was set on (sheep
    copies it from the inode on every set). value is None when raw ends
    before value_len bytes of it.
    """
    name, _tag, ctime, _snap, value_len, key = _ATTR_HEADER.unpack_from(
        bytes(raw[:ATTR_HEADER_SIZE]))
    value = None
    if len(raw) >= ATTR_HEADER_SIZE + value_len:
        value = bytes(raw[ATTR_HEADER_SIZE:ATTR_HEADER_SIZE + value_len])
    return name.rstrip(b'\0'), ctime, key.rstrip(b'\0'), value


def pack_vdi_attr_obj(name, key, value, ctime):
    """An attribute object as sheep stores it: header, then value.

    What sheep hashes an attribute's slot from (``vdi.marker_oid``).
    """
    return _ATTR_HEADER.pack(_name_bytes(name, MAX_VDI_LEN), b'', ctime, 0,
                             len(value),
                             _name_bytes(key, MAX_VDI_ATTR_KEY_LEN)) + value


def pack_stat_cluster(req_id, sheep_version):
    """STAT_CLUSTER asking for no epoch log: only the result matters.

    With data_length 0 sheep fills in no log and answers the cluster's
    state: SUCCESS when running, WAIT_FOR_FORMAT before a format.
    """
    return _REQ_CLUSTER.pack(sheep_version, OP_STAT_CLUSTER, 0, 0, req_id,
                             0, 0, 0, 0, 0, 0, 0, 0, 0)


# struct recovery_state STAT_RECOVERY answers (include/internal_proto.h
# of 0.9.5, 1.0.1 and master): in_recovery (uint8), the recovery
# thread's enum rw_state, objects done and to do (uint64).
_RECOVERY_STATE = struct.Struct('<B3xIQQ')
RECOVERY_STATE_SIZE = _RECOVERY_STATE.size
RecoveryState = collections.namedtuple('RecoveryState',
                                       'in_recovery state done total')


def pack_stat_recovery(req_id, sheep_version):
    """STAT_RECOVERY: whether this sheep is recovering objects now."""
    return _REQ_CLUSTER.pack(sheep_version, OP_STAT_RECOVERY, 0, 0, req_id,
                             RECOVERY_STATE_SIZE, 0, 0, 0, 0, 0, 0, 0, 0)


def unpack_recovery_state(data):
    """RecoveryState of STAT_RECOVERY's data."""
    if len(data) != RECOVERY_STATE_SIZE:
        raise ProtocolError('STAT_RECOVERY answered %d bytes, not %d'
                            % (len(data), RECOVERY_STATE_SIZE))
    return RecoveryState(*_RECOVERY_STATE.unpack(bytes(data)))


def pack_node_list(req_id, sheep_version):
    """GET_NODE_LIST: the members of the cluster as this sheep sees it."""
    return _REQ_CLUSTER.pack(sheep_version, OP_GET_NODE_LIST, 0, 0, req_id,
                             NODE_LIST_BUFFER, 0, 0, 0, 0, 0, 0, 0, 0)


def pack_uint32s(value, count):
    """count little-endian copies of a 32-bit value (inode entries)."""
    return struct.pack('<%dI' % count, *([value] * count))


def pack_uint64(value):
    return _UINT64.pack(value)


class Response(object):
    """One response header's fields."""

    __slots__ = ('proto_ver', 'opcode', 'flags', 'epoch', 'id',
                 'data_length', 'result', 'vdi_id', 'copies',
                 'block_size_shift', 'nr_nodes', 'attr_id')

    def __init__(self, raw):
        # sd_rsp.node.nr_nodes (GET_NODE_LIST) shares its place with
        # sd_rsp.vdi.rsvd.
        (self.proto_ver, self.opcode, self.flags, self.epoch, self.id,
         self.data_length, self.result, self.nr_nodes, self.vdi_id,
         self.attr_id, self.copies, self.block_size_shift) = _RSP.unpack(
             bytes(raw))


def unpack_response(raw):
    """The Response in 48 bytes."""
    if len(raw) != HEADER_SIZE:
        raise ProtocolError('a response header is %d bytes, got %d'
                            % (HEADER_SIZE, len(raw)))
    return Response(raw)
