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
# In struct sd_node: the rb_node (three 8-byte words), then node_id's
# 16-byte address (IPv4 in its last 4 bytes, the first 12 zero) and port.
NODE_ADDR_OFFSET = 24
NODE_PORT_OFFSET = 40
# What sheep hashes a node by: node_id up to io_addr (address and port).
NODE_ID_SIZE = 18
# Then, after node_id's io_addr, io_port and padding: nr_vnodes (16
# bits) and, aligned, zone (32 bits).
NODE_VNODES_OFFSET = 64
NODE_ZONE_OFFSET = 68

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
# Sheep's object size is 1 << block_size_shift; 0 in an inode written
# before the field existed means sheep's SD_DEFAULT_BLOCK_SIZE_SHIFT.
# Sheep computes the size as a 32-bit value (``UINT32_C(1) <<
# block_size_shift``, sheep/vdi.c of 1.0.1 and master), so 31 is the
# largest shift it can serve; ``dog cluster format -z`` and ``dog vdi
# create -z`` refuse anything outside 20-31, but sheep itself takes any
# shift a NEW_VDI carries, and serves it.
DEFAULT_BLOCK_SIZE_SHIFT = 22
MAX_BLOCK_SIZE_SHIFT = 31
# Data objects a VDI can have: OLD_MAX_DATA_OBJS (2^20, the flat
# data_vdi_id array of a store policy 0 inode, the limit ``dog vdi
# create`` and ``resize`` enforce) and MAX_DATA_OBJS (2^32, a hyper
# volume's B-tree, store policy 1) in include/sheepdog_proto.h.
MAX_FLAT_OBJECTS = 1 << 20
MAX_DATA_OBJS = 1 << 32
STORE_POLICIES = (0, 1)
# SD_MAX_COPIES (internal_proto.h): SD_EC_MAX_STRIP (16, fec.h) data
# strips and up to 15 parity strips. An erasure-coded copy_policy holds
# half the data strips (2, 4, 8 or 16) in its upper 4 bits and the
# parity strips (1-15) in its lower 4 (dog's parse_copy); sheep then
# keeps data + parity copies (ec_policy_to_dp, sheep/ops.c).
MAX_COPIES = 31
EC_DATA_HALVES = (1, 2, 4, 8)
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

# struct sd_inode, the fields read here. The header (everything before
# data_vdi_id) is 4664 bytes: name and tag (256 each), five 64-bit
# times and sizes, four policy bytes, three 32-bit ids, btree_counter and
# 1023 unused 32-bit words.
INODE_CTIME_OFFSET = 512
INODE_VDI_SIZE_OFFSET = 536
INODE_PARENT_OFFSET = 564
INODE_CHILDREN_OFFSET = 568
MAX_CHILDREN = 1024
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
# sd_rsp: the common part, result, and sd_rsp.vdi's rsvd, vdi_id,
# attr_id, copies and block_size_shift (what NEW_VDI answers).
_RSP = struct.Struct(_COMMON + 'IIIIBB14x')
# sd_req.cluster (STAT_CLUSTER): oid, ctime, copies, copy_policy, flags,
# tag, nodes_nr, block_size_shift.
_REQ_CLUSTER = struct.Struct(_COMMON + 'QQBBHIIB3x')
_UINT64 = struct.Struct('<Q')
_UINT16 = struct.Struct('<H')
_UINT32 = struct.Struct('<I')
_INODE_FIELDS = struct.Struct('<256s256sQQQQQBBBBIII')

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


def _bytes(data, start, end):
    """data[start:end] as bytes (data: bytes, bytearray or memoryview)."""
    return memoryview(data)[start:end].tobytes()


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


def check_redundancy(nr_copies, copy_policy, what):
    """Raise ProtocolError unless (nr_copies, copy_policy) is sheep's.

    Replication: up to SD_MAX_COPIES copies. Erasure code: a policy
    ``dog`` can make, and the data + parity copies sheep keeps for it.
    """
    if not copy_policy:
        check_copies(nr_copies, what + ' nr_copies')
        return
    halves, parity = copy_policy >> 4, copy_policy & 0x0f
    if (halves not in EC_DATA_HALVES or not parity or
            nr_copies != 2 * halves + parity):
        raise ProtocolError(
            '%s copy_policy 0x%02x and nr_copies %d: not an erasure code '
            'sheepdog makes (2, 4, 8 or 16 data strips, 1 to 15 parity '
            'strips, one copy each)' % (what, copy_policy, nr_copies))


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


def check_inode_read(oid, offset, data):
    """Raise ProtocolError unless data read at offset of inode oid is.

    The header fields when data holds them (``InodeFields.check``, and
    the inode must be the one asked for), and every ``data_vdi_id``
    entry it holds whole: an entry names a VDI (the owner of the
    object) or 0 (a hole).
    """
    vid = oid_vid(oid)
    if offset == 0 and len(data) >= INODE_FIELDS_SIZE:
        fields = InodeFields(data)
        if fields.vdi_id != vid:
            raise ProtocolError('the inode of VDI 0x%x for VDI 0x%x'
                                % (fields.vdi_id, vid))
    end = min(offset + len(data),
              INODE_DATA_INDEX_OFFSET + 4 * INODE_DATA_INDEX_ENTRIES)
    first = max(offset, INODE_DATA_INDEX_OFFSET)
    first += -(first - INODE_DATA_INDEX_OFFSET) % 4
    count = (end - first) // 4
    if count <= 0:
        return
    entries = struct.unpack('<%dI' % count, _bytes(
        data, first - offset, first - offset + 4 * count))
    top = max(entries)
    if top >= NR_VDIS:
        index = ((first - INODE_DATA_INDEX_OFFSET) // 4 +
                 entries.index(top))
        check_vid(top, 'an inode (VDI 0x%x) whose data_vdi_id entry %d '
                  'names VDI' % (vid, index))


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


class Node(tuple):
    """A member of the cluster: ``(address, port)``, and its placement.

    A tuple so that it stands for the node wherever an ``(address,
    port)`` does (entry points, failed nodes). ``node_id`` is the bytes
    sheep hashes the node by, ``nr_vnodes`` and ``zone`` place objects
    on it (``placement.Ring``); ``disks`` says the entry came from a
    build with disk vnodes, whose placement hashes disks instead.
    """

    def __new__(cls, address, port, node_id=None, nr_vnodes=0, zone=0,
                disks=False):
        node = tuple.__new__(cls, (address, port))
        node.node_id = node_id
        node.nr_vnodes = nr_vnodes
        node.zone = zone
        node.disks = disks
        return node

    def __getnewargs__(self):
        return (self[0], self[1], self.node_id, self.nr_vnodes, self.zone,
                self.disks)


def unpack_node_list(data, nr_nodes):
    """[Node] of GET_NODE_LIST's data of nr_nodes entries, in its order.

    The entry size tells the two builds apart (``NODE_SIZES``). Each
    entry's nr_vnodes is 16 bits, as sheep's own (1 to 65535, ``sheep
    -V``; 0 for a gateway): ``placement.Ring`` bounds their sum.
    """
    if not nr_nodes:
        return []
    size = node_entry_size(len(data), nr_nodes)
    nodes = []
    for index in range(nr_nodes):
        entry = bytes(data[index * size:(index + 1) * size])
        addr = entry[NODE_ADDR_OFFSET:NODE_ADDR_OFFSET + 16]
        port = _UINT16.unpack_from(entry, NODE_PORT_OFFSET)[0]
        nodes.append(Node(
            address_text(addr), port,
            entry[NODE_ADDR_OFFSET:NODE_ADDR_OFFSET + NODE_ID_SIZE],
            _UINT16.unpack_from(entry, NODE_VNODES_OFFSET)[0],
            _UINT32.unpack_from(entry, NODE_ZONE_OFFSET)[0],
            size != NODE_SIZES[0]))
    return nodes


def address_text(addr):
    """A node_id's 16-byte address as text (IPv4 when mapped so)."""
    addr = bytearray(addr)
    if not any(addr[:12]) and addr[12]:
        return '.'.join(str(byte) for byte in addr[12:])
    return ':'.join('%x' % ((addr[i] << 8) | addr[i + 1])
                    for i in range(0, 16, 2))


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


class InodeFields(object):
    """The inode fields a reader needs, from its first 568 bytes.

    Checked against sheepdog's limits (``check``) before anyone sizes
    a list, a buffer or a loop by them: what is built holds only values
    a sheep can have written.
    """

    def __init__(self, raw):
        fields = _INODE_FIELDS.unpack(_bytes(raw, 0, INODE_FIELDS_SIZE))
        self.name = fields[0].rstrip(b'\0')
        self.create_time = fields[2]
        # Set only in a snapshot (sheep's vdi_is_snapshot).
        self.snap_ctime = fields[3]
        self.vdi_size = fields[5]
        self.copy_policy = fields[7]
        self.store_policy = fields[8]
        self.nr_copies = fields[9]
        self.block_size_shift = (fields[10] or DEFAULT_BLOCK_SIZE_SHIFT)
        self.snap_id = fields[11]
        self.vdi_id = fields[12]
        self.parent_vdi_id = fields[13]
        self.check()

    @property
    def object_size(self):
        return 1 << self.block_size_shift

    @property
    def max_size(self):
        """The largest vdi_size the inode's object table can hold."""
        objects = MAX_FLAT_OBJECTS if self.store_policy == 0 else (
            MAX_DATA_OBJS)
        return self.object_size * objects

    def check(self):
        """Raise ProtocolError unless every field is within sheep's limits.

        A flat inode (store policy 0) holds at most MAX_FLAT_OBJECTS
        objects: a larger vdi_size would size a delete's or a read's
        object table past the inode's data_vdi_id array.
        """
        what = 'an inode (VDI 0x%x) with' % self.vdi_id
        check_vid(self.vdi_id, 'an inode with vdi_id')
        check_vid(self.parent_vdi_id, what + ' parent_vdi_id', zero=True)
        if self.block_size_shift > MAX_BLOCK_SIZE_SHIFT:
            raise ProtocolError(
                '%s block_size_shift %d: sheep\'s objects are at most 2^%d '
                'bytes' % (what, self.block_size_shift, MAX_BLOCK_SIZE_SHIFT))
        if self.store_policy not in STORE_POLICIES:
            raise ProtocolError('%s store_policy %d: sheepdog has %s'
                                % (what, self.store_policy, STORE_POLICIES))
        if self.vdi_size > self.max_size:
            raise ProtocolError(
                '%s vdi_size %d: objects of %d bytes in a store policy %d '
                'inode hold at most %d bytes (%s objects)'
                % (what, self.vdi_size, self.object_size, self.store_policy,
                   self.max_size, 'OLD_MAX_DATA_OBJS' if not
                   self.store_policy else 'MAX_DATA_OBJS'))
        check_redundancy(self.nr_copies, self.copy_policy, what)
