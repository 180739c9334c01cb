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
"""VDIs as ``dog vdi`` handles them: look up, create, resize, record.

Every operation follows what ``dog/vdi.c`` of sheepdog 1.0.1 sends, so
that an image created, grown or deleted here is indistinguishable from
one ``dog`` handled:

* create: ``NEW_VDI`` with the 256-byte name, copies and
  block_size_shift 0 (the cluster's defaults); the inode's first bytes
  are then read for the redundancy and object size the cluster chose.
  The name is unique to the upload attempt, so a ``VDI_EXIST`` answer
  (a copy of the request landed, its reply lost) adopts the VDI.
* size (an upload of unknown size): the inode's ``vdi_size`` field
  (offset 536) rewritten with ``WRITE_OBJ``, as ``dog vdi resize``
  rewrites the inode header; once, from the flat bound the VDI was
  created at down to the data's size, after every object was recorded
  (see ``write``).
* record: the ``data_vdi_id`` entries (offset 4664 + 4 x index) of
  objects written, one ``WRITE_OBJ`` per run of entries, as ``dog vdi
  write`` records each object it created.

The markers of an upload in progress and of a delete are ``markers``'s,
the delete itself ``deletion``'s. What a late copy of each of these
requests does is the subject of doc/source/contributor/replay-model.rst.

Inode updates carry ``SD_FLAG_CMD_DIRECT``: sheep 0.9's object cache
would otherwise hold them on the gateway.
"""

import struct

from glance_store import exceptions
from oslo_log import log as logging
import six

from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import failover
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto

LOG = logging.getLogger(__name__)


# data_vdi_id entries read per inode request: 64 KiB covers 64 GiB of
# image at the default object size.
TABLE_ENTRIES = 16384

_UINT32 = struct.Struct('<I')


class Vdi(object):
    """A VDI's id and the inode fields the client uses."""

    def __init__(self, vid, inode):
        self.vid = vid
        self.inode = inode

    @property
    def size(self):
        return self.inode.vdi_size

    @property
    def object_size(self):
        return self.inode.object_size


class Table(object):
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
        self.session.call(ops.Request(
            proto.OP_READ_OBJ, proto.vdi_oid(self.vid),
            inode_layout.DATA_INDEX_OFFSET + 4 * index, 4 * count,
            memoryview(self.buf)[:4 * count], proto.FLAG_CMD_DIRECT))
        self.first = index
        self.count = count


def read_inode_fields(session, vid):
    """The inode_layout.Fields of VDI vid."""
    fields_buf = bytearray(inode_layout.FIELDS_SIZE)
    session.call(ops.Request(
        proto.OP_READ_OBJ, proto.vdi_oid(vid), 0, len(fields_buf),
        memoryview(fields_buf), proto.FLAG_CMD_DIRECT))
    return inode_layout.Fields(fields_buf)


def look_up(session, name, snapid=0, tag=''):
    """The Vdi name (snapshot snapid or tag); NotFound if missing.

    Only flat object tables are supported: a B-tree inode (store policy
    1, images over 4 TiB) raises Unsupported.
    """
    lookup = session.call(ops.vdi_request(
        proto.OP_GET_VDI_INFO, name, snapid, tag))
    vid = lookup.response.vdi_id
    # Sheep answers the VDI's copies (0 from an older sheep): its inode
    # object is read from a node holding a copy of it.
    session.route_reads(vid, lookup.response.copies, data=False)
    inode = read_inode_fields(session, vid)
    if inode.store_policy != 0:
        raise errors.Unsupported(
            'sheepdog image %s keeps its object table in a B-tree (store '
            'policy %d): %s' % (name, inode.store_policy,
                                errors.USE_DOG))
    return Vdi(vid, inode)


def find(session, name):
    """The current Vdi name, or None when sheep answers NO_VDI."""
    try:
        return look_up(session, name)
    except exceptions.NotFound:
        return None


def create(session, name, size):
    """Create VDI name of size bytes, or adopt the one a lost reply left.

    Returns its id, before anything else is asked: from here the VDI
    exists, and whoever cleans up must know it even when the next
    request (its inode's read) fails.

    The store names the VDI of each upload attempt for that attempt
    alone (``store.vdi_name``: the image id and a random suffix), so a
    VDI of that name can only have been made by this very request.
    NEW_VDI is not idempotent: when a copy of it was carried out but its
    reply did not come back (a reset, a stall and the failover's
    resend, a retryable result answered for a request sheep carried
    out), the resend answers VDI_EXIST (sheep's vdi_create refuses a
    taken name and changes nothing). The VDI is then adopted as this
    request's (``adoptable``).

    VDI_EXIST to a request sent once means the name was taken before
    (a caller of the client choosing its own names): Duplicate, left
    alone, as is a VDI that is not what NEW_VDI makes.
    """
    before = session.failovers
    request = ops.vdi_request(proto.OP_NEW_VDI, name, vdi_size=size)
    try:
        new = session.call(request)
    except exceptions.Duplicate:
        # Resent: after a failover, or after a retryable result
        # (retry.Retry sets the request's deadline at the first one).
        resent = (session.failovers != before or
                  request.deadline is not None)
        taken = find(session, name)
        if (resent and taken is not None and
                adoptable(session, name, taken, size)):
            LOG.warning('NEW_VDI of sheepdog image %s was carried out but '
                        'its reply did not come back (%s): adopting vdi '
                        '%x, which only this upload can have created',
                        name, session.where(), taken.vid)
            return taken.vid
        if taken is not None and markers.is_deleting(session, name, taken):
            raise exceptions.Duplicate(
                message='sheepdog image %s (vdi %x) is being deleted: '
                'an earlier delete of it did not finish (it is marked '
                '%s); retry that delete, then the upload (%s)'
                % (name, taken.vid, markers.DELETING_KEY, session.where()))
        if resent:
            raise exceptions.Duplicate(
                message='sheepdog image %s exists (vdi %s) and is not the '
                'empty VDI the resent NEW_VDI of this upload would have '
                'created (%s); it is left alone'
                % (name, 'unknown' if taken is None else '%x' % taken.vid,
                   session.where()))
        raise
    return new.response.vdi_id


def adoptable(session, name, vdi, size):
    """Whether vdi is what this upload's NEW_VDI of name, size made.

    The name already says so (it is the attempt's own); the VDI must
    also be what a fresh NEW_VDI leaves: size bytes, no parent (a name
    never used before), no object recorded and no marker of this
    client. So a caller of the client that reuses a name never has a
    VDI with data, or another upload's leftover, taken for its own.
    """
    if vdi.size != size or vdi.inode.parent_vdi_id:
        return False
    if size:
        last = (size - 1) // vdi.object_size
        table = Table(session, vdi.vid, last)
        if any(table.owner(index) for index in six.moves.range(last + 1)):
            return False
    return not any(markers.has_marker(session, name, vdi, key)
                   for key in markers.KEYS)


def set_size(session, vdi, size):
    """Rewrite the inode's vdi_size, as dog vdi resize does.

    Not while objects are in flight: a late copy of the request (its
    twin resent after a failover) would land after any later size. The
    writer sends it once per upload, after the last record.
    """
    session.call(inode_write(vdi, inode_layout.VDI_SIZE_OFFSET,
                             proto.pack_uint64(size)))
    vdi.inode.vdi_size = size


def inode_write(vdi, offset, data, tag=None):
    """A WRITE_OBJ request of data at offset of vdi's inode object."""
    return ops.Request(
        proto.OP_WRITE_OBJ, proto.vdi_oid(vdi.vid), offset,
        flags=proto.FLAG_CMD_WRITE | proto.FLAG_CMD_DIRECT,
        payload=[data], copies=vdi.inode.nr_copies,
        copy_policy=vdi.inode.copy_policy, tag=tag)


def record(vdi, first, count, owner=None):
    """The request setting entries first..first+count-1 to owner."""
    if owner is None:
        owner = vdi.vid
    return inode_write(vdi, inode_layout.DATA_INDEX_OFFSET + 4 * first,
                       proto.pack_uint32s(owner, count),
                       tag=ops.RecordTag(first, count))


def runs(indexes):
    """(first, count) of each run of consecutive indexes, in order."""
    first = None
    count = 0
    for index in sorted(indexes):
        if first is not None and index == first + count:
            count += 1
            continue
        if first is not None:
            yield first, count
        first, count = index, 1
    if first is not None:
        yield first, count


def unowned(session, vid, indexes):
    """Those of indexes (ascending) whose data_vdi_id entry is not vid.

    What "an object this VDI does not own" means wherever it is asked
    (an upload's orphans, a leftover's, an image whose entries a
    recovery lost): a hole and another VDI's entry alike hold no data
    of this one. indexes is a sequence (a range will do, for 2^20 of
    them): the table is read a chunk at a time up to its last index and
    the answers yielded one at a time, so a look through a whole flat
    table holds one chunk.
    """
    if not len(indexes):
        return
    table = Table(session, vid, indexes[-1])
    for index in indexes:
        if table.owner(index) != vid:
            yield index


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
    session = failover.FailoverSession(settings, name, (address, port))
    try:
        vdi = look_up(session, name)
        last = (length - 1) // vdi.object_size
        return list(unowned(session, vdi.vid, six.moves.range(last + 1)))
    finally:
        session.close()
