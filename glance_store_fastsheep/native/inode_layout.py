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
"""The inode, struct sd_inode, as far as the native client reads it.

A VDI's inode object starts with a 4664-byte header (name, tag, times,
size, policies, ids; ``Fields`` reads its first 568 bytes) followed by
the ``data_vdi_id`` table: for each data object the id of the VDI that
owns it, or 0 for a hole. The layout is sheepdog 1.0's
(``include/sheepdog_proto.h``; 0.9.5 and master have the same). What
an inode says is checked against sheepdog's limits (``Fields.check``,
``check_read``) before the client sizes a buffer, a table or a loop by
it.
"""

import struct

from glance_store_fastsheep.native import proto

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
# create`` and ``resize`` enforce; ``proto.MAX_FLAT_OBJECTS``) and
# MAX_DATA_OBJS (2^32, a hyper volume's B-tree, store policy 1).
MAX_DATA_OBJS = 1 << 32
STORE_POLICIES = (0, 1)
# An erasure-coded copy_policy holds half the data strips (2, 4, 8 or
# 16) in its upper 4 bits and the parity strips (1-15) in its lower 4
# (dog's parse_copy); sheep then keeps data + parity copies
# (ec_policy_to_dp, sheep/ops.c).
EC_DATA_HALVES = (1, 2, 4, 8)

# The header (everything before data_vdi_id) is 4664 bytes: name and
# tag (256 each), five 64-bit times and sizes, four policy bytes, three
# 32-bit ids, btree_counter and 1023 unused 32-bit words.
VDI_SIZE_OFFSET = 536
FIELDS_SIZE = 568  # through parent_vdi_id
DATA_INDEX_OFFSET = 4664
DATA_INDEX_ENTRIES = 1 << 20
# name, tag, create_time, snap_ctime, vm_clock_nsec, vdi_size,
# vm_state_size, copy_policy, store_policy, nr_copies, block_size_shift,
# snap_id, vdi_id, parent_vdi_id.
_FIELDS = struct.Struct('<256s256sQQQQQBBBBIII')
assert _FIELDS.size == FIELDS_SIZE


def _bytes(data, start, end):
    """data[start:end] as bytes (data: bytes, bytearray or memoryview)."""
    return memoryview(data)[start:end].tobytes()


def check_redundancy(nr_copies, copy_policy, what):
    """Raise ProtocolError unless (nr_copies, copy_policy) is sheep's.

    Replication: up to SD_MAX_COPIES copies. Erasure code: a policy
    ``dog`` can make, and the data + parity copies sheep keeps for it.
    """
    if not copy_policy:
        proto.check_copies(nr_copies, what + ' nr_copies')
        return
    halves, parity = copy_policy >> 4, copy_policy & 0x0f
    if (halves not in EC_DATA_HALVES or not parity or
            nr_copies != 2 * halves + parity):
        raise proto.ProtocolError(
            '%s copy_policy 0x%02x and nr_copies %d: not an erasure code '
            'sheepdog makes (2, 4, 8 or 16 data strips, 1 to 15 parity '
            'strips, one copy each)' % (what, copy_policy, nr_copies))


def check_read(oid, offset, data):
    """Raise ProtocolError unless data read at offset of inode oid is.

    The header fields when data holds them (``Fields.check``, and
    the inode must be the one asked for), and every ``data_vdi_id``
    entry it holds whole: an entry names a VDI (the owner of the
    object) or 0 (a hole).
    """
    vid = proto.oid_vid(oid)
    if offset == 0 and len(data) >= FIELDS_SIZE:
        fields = Fields(data)
        if fields.vdi_id != vid:
            raise proto.ProtocolError('the inode of VDI 0x%x for VDI 0x%x'
                                      % (fields.vdi_id, vid))
    end = min(offset + len(data),
              DATA_INDEX_OFFSET + 4 * DATA_INDEX_ENTRIES)
    first = max(offset, DATA_INDEX_OFFSET)
    first += -(first - DATA_INDEX_OFFSET) % 4
    count = (end - first) // 4
    if count <= 0:
        return
    entries = struct.unpack('<%dI' % count, _bytes(
        data, first - offset, first - offset + 4 * count))
    top = max(entries)
    if top >= proto.NR_VDIS:
        index = ((first - DATA_INDEX_OFFSET) // 4 +
                 entries.index(top))
        proto.check_vid(top, 'an inode (VDI 0x%x) whose data_vdi_id entry '
                        '%d names VDI' % (vid, index))


class Fields(object):
    """The inode fields a reader needs, from its first 568 bytes.

    Checked against sheepdog's limits (``check``) before anyone sizes
    a list, a buffer or a loop by them: what is built holds only values
    a sheep can have written.
    """

    def __init__(self, raw):
        fields = _FIELDS.unpack(_bytes(raw, 0, FIELDS_SIZE))
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
        objects = proto.MAX_FLAT_OBJECTS if self.store_policy == 0 else (
            MAX_DATA_OBJS)
        return self.object_size * objects

    def check(self):
        """Raise ProtocolError unless every field is within sheep's limits.

        A flat inode (store policy 0) holds at most proto.MAX_FLAT_OBJECTS
        objects: a larger vdi_size would size a delete's or a read's
        object table past the inode's data_vdi_id array.
        """
        what = 'an inode (VDI 0x%x) with' % self.vdi_id
        proto.check_vid(self.vdi_id, 'an inode with vdi_id')
        proto.check_vid(self.parent_vdi_id, what + ' parent_vdi_id', zero=True)
        if self.block_size_shift > MAX_BLOCK_SIZE_SHIFT:
            raise proto.ProtocolError(
                '%s block_size_shift %d: sheep\'s objects are at most 2^%d '
                'bytes' % (what, self.block_size_shift, MAX_BLOCK_SIZE_SHIFT))
        if self.store_policy not in STORE_POLICIES:
            raise proto.ProtocolError(
                '%s store_policy %d: sheepdog has %s'
                % (what, self.store_policy, STORE_POLICIES))
        if self.vdi_size > self.max_size:
            raise proto.ProtocolError(
                '%s vdi_size %d: objects of %d bytes in a store policy %d '
                'inode hold at most %d bytes (%s objects)'
                % (what, self.vdi_size, self.object_size, self.store_policy,
                   self.max_size, 'OLD_MAX_DATA_OBJS' if not
                   self.store_policy else 'MAX_DATA_OBJS'))
        check_redundancy(self.nr_copies, self.copy_policy, what)
