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
"""VDIs as ``dog vdi`` handles them: look up, create, resize, delete.

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
* mark (an upload in progress): the VDI attribute ``PARTIAL_KEY``
  (``GET_VDI_ATTR``, as ``dog vdi setattr``/``getattr`` send it), set
  right after ``NEW_VDI``; once the upload's last inode update was
  acknowledged ``COMPLETE_KEY`` is set and ``PARTIAL_KEY`` deleted. The
  state only moves forward: a late copy of the partial set cannot make
  a complete image partial again (``is_partial``).
* delete: ``DELETING_KEY`` set first, so that reads of a VDI whose
  delete did not finish fail (``check_readable``) instead of returning
  zeros; then the entries zeroed in runs (sheep drops a reference to
  each object whose entry changes, and removes the object at the last
  one), then ``DEL_VDI`` on one connection, never resent to another
  sheep, then ``GET_VDI_INFO`` must answer ``NO_VDI``: sheep answers
  ``DEL_VDI`` with success even when its deletion work found objects
  still recorded and left the VDI in place.

What a late copy of each of these requests does is the subject of
doc/source/contributor/replay-model.rst.

Inode updates carry ``SD_FLAG_CMD_DIRECT``: sheep 0.9's object cache
would otherwise hold them on the gateway.
"""

import struct

from glance_store import exceptions
from oslo_log import log as logging
import six

from glance_store_fastsheep.native import cluster
from glance_store_fastsheep.native import connection
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import parking
from glance_store_fastsheep.native import placement
from glance_store_fastsheep.native import proto

LOG = logging.getLogger(__name__)

# data_vdi_id entries read per inode request: 64 KiB covers 64 GiB of
# image at the default object size.
TABLE_ENTRIES = 16384
# Entries zeroed per WRITE_OBJ on delete: dog's NR_BATCHED_DISCARD.
DELETE_BATCH = 128

# The VDI attribute marking an image whose upload has not completed:
# ``dog vdi getattr IMAGE glance_store_fastsheep.partial`` prints
# ``vdi=<hex id>`` while it is set.
PARTIAL_KEY = 'glance_store_fastsheep.partial'
# Set once an upload completed, never deleted: a partial marker counts
# only without it, whatever order late copies of the sets land in.
COMPLETE_KEY = 'glance_store_fastsheep.complete'
# Set before a delete removes anything: reads of the VDI fail from then
# on, and a retried delete finishes the job.
DELETING_KEY = 'glance_store_fastsheep.deleting'

_UINT32 = struct.Struct('<I')


class BeingDeleted(exceptions.BackendException):
    """The VDI is marked DELETING_KEY: a delete of it did not finish."""


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
        self.session.call(connection.Request(
            proto.OP_READ_OBJ, proto.vdi_oid(self.vid),
            inode_layout.DATA_INDEX_OFFSET + 4 * index, 4 * count,
            memoryview(self.buf)[:4 * count], proto.FLAG_CMD_DIRECT))
        self.first = index
        self.count = count


def read_inode_fields(session, vid):
    """The inode_layout.Fields of VDI vid."""
    fields_buf = bytearray(inode_layout.FIELDS_SIZE)
    session.call(connection.Request(
        proto.OP_READ_OBJ, proto.vdi_oid(vid), 0, len(fields_buf),
        memoryview(fields_buf), proto.FLAG_CMD_DIRECT))
    return inode_layout.Fields(fields_buf)


def look_up(session, name, snapid=0, tag=''):
    """The Vdi name (snapshot snapid or tag); NotFound if missing.

    Only flat object tables are supported: a B-tree inode (store policy
    1, images over 4 TiB) raises Unsupported.
    """
    lookup = session.call(connection.vdi_request(
        proto.OP_GET_VDI_INFO, name, snapid, tag))
    vid = lookup.response.vdi_id
    # Sheep answers the VDI's copies (0 from an older sheep): its inode
    # object is read from a node holding a copy of it.
    session.route_reads(vid, lookup.response.copies, data=False)
    inode = read_inode_fields(session, vid)
    if inode.store_policy != 0:
        raise connection.Unsupported(
            'sheepdog image %s keeps its object table in a B-tree (store '
            'policy %d): %s' % (name, inode.store_policy,
                                connection.WAY_OUT))
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
    request = connection.vdi_request(proto.OP_NEW_VDI, name, vdi_size=size)
    try:
        new = session.call(request)
    except exceptions.Duplicate:
        # Resent: after a failover, or after a retryable result (settle
        # sets the request's deadline at the first one).
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
        if taken is not None and is_deleting(session, name, taken):
            raise exceptions.Duplicate(
                message='sheepdog image %s (vdi %x) is being deleted: '
                'an earlier delete of it did not finish (it is marked '
                '%s); retry that delete, then the upload (%s)'
                % (name, taken.vid, DELETING_KEY, session.where()))
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
    return not any(_has_marker(session, name, vdi, key)
                   for key in (PARTIAL_KEY, COMPLETE_KEY, DELETING_KEY))


def _attr_request(session, name, key, flags, value=b'', vid=None):
    """GET_VDI_ATTR of key on name, answered with its own result.

    An internal operation: sent with the cluster's SD_SHEEP_PROTO_VER,
    the one known from an earlier internal request or else each known
    one until sheep stops answering VER_MISMATCH. The request is the
    same whole struct ``dog`` sends, so resending it after a failover
    sets or deletes the same attribute slot again. vid: the VDI a set or
    delete is for (a connection given up with it in flight is parked
    under it, see parking.Parking).
    """
    known = getattr(getattr(session, 'cluster', None), 'sheep_version',
                    None)
    versions = sorted(proto.SHEEP_VERSIONS, reverse=True)
    if known in versions:
        versions.remove(known)
        versions.insert(0, known)
    for version in versions:
        request = connection.Request(
            proto.OP_GET_VDI_ATTR, header_data=lambda req_id, v=version:
                proto.pack_vdi_attr(req_id, v, name, key, value, flags),
            flags=flags, vid=vid)
        answer = session.call_raw(request)
        if answer.result == proto.VER_MISMATCH:
            continue
        if getattr(session, 'cluster', None) is not None:
            session.cluster.sheep_version = version
        return answer
    raise connection.Unsupported(
        '%s answered %s to GET_VDI_ATTR with every known internal '
        'protocol version: %s' % (session.where(), proto.result_text(
            proto.VER_MISMATCH), connection.WAY_OUT))


def _marker_value(vdi):
    return ('vdi=%x' % vdi.vid).encode('ascii')


def _set_marker(session, name, vdi, key):
    """Set attribute key of name to vdi's marker value (a plain set).

    A plain set (no EXCL): sheep's get_vdi_attr writes the attribute's
    first slot whatever it held, so a marker an earlier VDI of the name
    left is overwritten, and a resent request does the same again. A
    late copy landing on a later VDI of the name names the earlier vid
    and carries the later VDI's create_time: ``_has_marker`` ignores it.
    """
    answer = _attr_request(session, name, key, proto.FLAG_CMD_CREAT,
                           _marker_value(vdi), vdi.vid)
    if answer.result != proto.SUCCESS:
        raise connection.error_for(answer.result, session.where(),
                                   'GET_VDI_ATTR (set %s)' % key, name)


def _has_marker(session, name, vdi, key):
    """Whether attribute key of name marks vdi (the current VDI name).

    Sheep keeps attributes by name, not by VDI, and deleting a VDI
    leaves them: a marker counts only when its value names vdi's id and
    its ctime (copied from the inode when it was set) is vdi's
    create_time.
    """
    answer = _attr_request(session, name, key, 0)
    if answer.result in (proto.NO_OBJ, proto.NO_VDI):
        return False
    if answer.result != proto.SUCCESS:
        raise connection.error_for(answer.result, session.where(),
                                   'GET_VDI_ATTR (look up %s)' % key, name)
    wanted = _marker_value(vdi)
    buf = bytearray(proto.ATTR_HEADER_SIZE + len(wanted))
    session.call(connection.Request(
        proto.OP_READ_OBJ, proto.attr_oid(answer.response.vdi_id,
                                          answer.response.attr_id),
        0, len(buf), memoryview(buf), proto.FLAG_CMD_DIRECT))
    _name, ctime, _key, value = proto.unpack_vdi_attr(buf)
    return value == wanted and ctime == vdi.inode.create_time


def mark_partial(session, name, vdi):
    """Mark vdi (the current VDI name) as an upload in progress."""
    _set_marker(session, name, vdi, PARTIAL_KEY)


def clear_partial(session, name, vdi):
    """Mark vdi (the current VDI name) complete, for good.

    COMPLETE_KEY first, then PARTIAL_KEY deleted (NO_OBJ, no such
    attribute, is success: a resent delete whose first attempt deleted
    it answers so). A late copy of the partial set landing after either
    leaves the image complete: ``is_partial`` wants the partial marker
    and no complete one.
    """
    _set_marker(session, name, vdi, COMPLETE_KEY)
    answer = _attr_request(session, name, PARTIAL_KEY, proto.FLAG_CMD_DEL,
                           vid=vdi.vid)
    if answer.result not in (proto.SUCCESS, proto.NO_OBJ):
        raise connection.error_for(answer.result, session.where(),
                                   'GET_VDI_ATTR (delete %s)' % PARTIAL_KEY,
                                   name)


def is_partial(session, name, vdi):
    """Whether vdi (the current VDI name) is this client's unfinished upload.

    Marked partial and never marked complete (``_has_marker``: both
    must name vdi). So an image ``dog`` or the Pike driver wrote (never
    marked), a complete image made after a marked VDI was deleted by
    hand, and a complete image a late partial set re-marked are never
    taken for partial.
    """
    return (_has_marker(session, name, vdi, PARTIAL_KEY) and
            not _has_marker(session, name, vdi, COMPLETE_KEY))


def mark_deleting(session, name, vdi):
    """Mark vdi (the current VDI name) as being deleted; never unset."""
    _set_marker(session, name, vdi, DELETING_KEY)


def is_deleting(session, name, vdi):
    """Whether vdi (the current VDI name) is marked being deleted."""
    return _has_marker(session, name, vdi, DELETING_KEY)


def check_readable(session, name, vdi):
    """BeingDeleted if vdi (the current VDI name) is being deleted.

    A delete that stopped half-way removed some of its objects: the
    image would read zeros there, so it is not read at all.
    """
    if is_deleting(session, name, vdi):
        raise BeingDeleted(
            'sheepdog image %s (vdi %x) is being deleted: an earlier '
            'delete of it did not finish (it is marked %s) and part of its '
            'data may be gone; it cannot be read; retry the delete (%s)'
            % (name, vdi.vid, DELETING_KEY, session.where()))


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
    return connection.Request(
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
                       tag=(first, count))


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


# Ancestors looked at for a snapshot of the image before giving up.
MAX_ANCESTORS = 1024


def has_snapshots(session, vdi, name):
    """Whether VDI name has snapshots: an ancestor carries its name.

    ``dog vdi snapshot`` turns the current VDI into the snapshot and
    creates a new current VDI whose parent it is; a clone's parent is a
    snapshot of another name. A deleted snapshot keeps its place in the
    chain with its name zeroed (sheep's delete_vdi_work), so the walk
    goes on through it to older snapshots.
    """
    wanted = name.encode('utf-8') if not isinstance(name, bytes) else name
    parent = vdi.inode.parent_vdi_id
    for _step in range(MAX_ANCESTORS):
        if not parent:
            return False
        fields = read_inode_fields(session, parent)
        if fields.name == wanted:
            return True
        if fields.name:
            # The base of a clone: another image's snapshot.
            return False
        parent = fields.parent_vdi_id
    return True


def marker_oid(name, key):
    """The object sheep keeps attribute key of name in.

    Attributes live under the hash of the name (sd_hash_vdi) in the slot
    of the hash of the attribute's name, tag, snapshot id and key
    (hash_vdi_attr in sheep/vdi.c), each as the fixed-size fields of the
    struct the client sends. A plain set writes that first slot whatever
    it holds (get_vdi_attr), so the client's markers are always there.
    """
    header = proto.pack_vdi_attr_obj(name, key, b'', 0)
    plain = name.encode('utf-8') if not isinstance(name, bytes) else name
    vid = placement.fnv_64a(plain) & (proto.NR_VDIS - 1)
    hval = placement.fnv_64a(header[:512])          # name, tag
    hval = placement.fnv_64a(header[520:524], hval)  # snap_id
    hval = placement.fnv_64a(header[528:784], hval)  # key
    return proto.attr_oid(vid, hval & 0xffffffff)


# Tries remove_markers gives each marker's object, and a failed upload's
# clean-up the deletion of its VDI (write.Writer.clean_up): both are
# idempotent, and a final error (an EIO or a system error of one sheep,
# a gateway killed meanwhile) is often not the next one's.
REMOVAL_TRIES = 3


def remove_markers(session, name):
    """Remove the objects of name's markers; for a name sheep deleted.

    Sheep never removes an attribute's object (deleting one zeroes its
    name, deleting the VDI leaves them all), so each image would leave
    its partial, complete and deleting objects in the stores for good.
    Only an object whose key is the marker's is removed. Each marker is
    tried up to REMOVAL_TRIES times, whatever failed (a read or removal
    answered with an error, a connection lost), and a marker given up
    on does not stop the next. Best effort: what is left names a
    deleted VDI and counts for no other; it is logged.
    """
    for key in (PARTIAL_KEY, COMPLETE_KEY, DELETING_KEY):
        failure = None
        for _attempt in range(REMOVAL_TRIES):
            try:
                failure = _remove_marker(session, name, key)
            except exceptions.BackendException as exc:
                failure = exc
            if failure is None:
                break
        if failure is not None:
            LOG.warning('Could not remove the %s object of deleted '
                        'sheepdog image %s: %s', key, name, failure)


def _remove_marker(session, name, key):
    """Remove name's marker object of key; what failed, else None."""
    oid = marker_oid(name, key)
    buf = bytearray(proto.ATTR_HEADER_SIZE)
    found = session.call_raw(connection.Request(
        proto.OP_READ_OBJ, oid, 0, len(buf), memoryview(buf),
        proto.FLAG_CMD_DIRECT))
    if found.result == proto.NO_OBJ:
        return None
    if found.result != proto.SUCCESS:
        return 'reading it: %s' % proto.result_text(found.result)
    if proto.unpack_vdi_attr(buf)[2] != key.encode('ascii'):
        return None  # another attribute's slot: not ours to remove
    gone = session.call_raw(connection.Request(proto.OP_REMOVE_OBJ, oid))
    if gone.result not in (proto.SUCCESS, proto.NO_OBJ):
        return 'removing it: %s' % proto.result_text(gone.result)
    return None


def delete(session, name):
    """Delete the current VDI name as ``dog vdi delete`` does; confirm.

    NotFound if missing; InUseByStore, leaving everything intact, when
    the image has snapshots (clones, e.g. cinder volumes, may depend on
    them: deleting the current VDI would leave their data behind under
    the image's name, which glance could no longer see or delete).

    Crash-safe: DELETING_KEY is set before anything is removed, so a
    delete that stops anywhere after leaves a VDI whose reads fail
    (``check_readable``) and which a retried delete finishes.

    DEL_VDI names the current VDI of name (sheep's cluster_del_vdi takes
    a name and a snapshot id or tag, never a vid), so a copy landing
    late would delete whatever VDI then has the name: it is sent on one
    connection and never resent to another sheep (``_del_vdi_once``).

    Nothing is removed while a request this process sent for the image
    may still land: the connections parked for it (``parking.Parking``:
    given up by a failover or an operation's end with writes, inode
    updates or marker sets in flight, or an unanswered DEL_VDI) are
    settled first, and again before DEL_VDI and before the markers'
    objects are removed. A name already gone (a DEL_VDI that landed
    after an earlier delete gave up on it) has its markers' objects
    removed before NotFound is raised, so a retried delete leaves
    nothing.
    """
    _settle(session, name)
    try:
        vdi = look_up(session, name)
    except exceptions.NotFound:
        remove_markers(session, name)
        raise
    _settle(session, name, vdi.vid)
    if has_snapshots(session, vdi, name):
        raise exceptions.InUseByStore(
            message='sheepdog image %s has snapshots (%s): left intact; '
            'delete them first (dog vdi delete -s)' % (
                name, session.where()))
    mark_deleting(session, name, vdi)
    clear_entries(session, vdi)
    _settle(session, name, vdi.vid)
    _del_vdi_once(session, name, vdi)
    check = session.call_raw(connection.vdi_request(proto.OP_GET_VDI_INFO,
                                                    name))
    if check.result == proto.SUCCESS:
        raise exceptions.BackendException(
            '%s answered success to DEL_VDI of %s but still has it (vdi '
            '%x); see its sheep.log' % (session.where(), name,
                                        check.response.vdi_id))
    if check.result not in (proto.NO_VDI, proto.NO_TAG):
        raise connection.error_for(check.result, session.where(),
                                   'GET_VDI_INFO', name)
    _settle(session, name, vdi.vid)
    remove_markers(session, name)


def _settle(session, name, vid=None):
    """Wait for the parked connections of name (and vid) to settle."""
    parked = parking.parking_of(session)
    if parked is not None:
        parked.settle(vid, name)


def _del_vdi_once(session, name, vdi):
    """DEL_VDI of name on one connection; never resent elsewhere.

    A FailoverSession would resend an unanswered DEL_VDI to the next
    sheep while the first copy may still be carried out (sheep executes
    a request that fully arrived even after the client closed the
    connection): the late copy would then delete a VDI created under
    the name meanwhile. So it goes on a connection of its own to a live
    member, and if that connection fails with it unanswered the name is
    looked up on the session: gone means the copy landed; still there,
    the delete fails, leaving the VDI marked DELETING_KEY (its reads
    fail) for a retried delete to finish.

    There is no other sheep to try and it is never resent, so its answer
    is waited for as long as any sheep's: ``transfer_timeout``, not the
    stall timeout. Left unanswered that long, or cut off after it went
    out whole, the connection is parked under the VDI and the name
    (``parking.Parking``) rather than closed: a retried delete settles
    it first, and removes the markers' objects once the name is gone.
    """
    request = connection.vdi_request(proto.OP_DEL_VDI, name)
    cluster_ = getattr(session, 'cluster', None)
    own = session
    if cluster_ is not None:
        own = cluster_.connect(
            name, stall_timeout=cluster_.settings.transfer_timeout)
    stalled = False
    try:
        answer = own.call_raw(request)
    except connection.ConnectionLost as exc:
        if own is session:
            raise
        LOG.warning('DEL_VDI of sheepdog image %s (vdi %x) unanswered, '
                    'not resent to another sheep: %s', name, vdi.vid, exc)
        answer = None
        lost = exc
        # Sent whole and unanswered (a stall, a reset or EOF after it
        # went out): sheep may still carry it out.
        stalled = own.sock is not None and bool(own.unanswered())
    finally:
        if own is not session and not stalled:
            own.close()
    if answer is None:
        gone = False
        try:
            check = session.call_raw(connection.vdi_request(
                proto.OP_GET_VDI_INFO, name))
            gone = check.result in (proto.NO_VDI, proto.NO_TAG)
        finally:
            if stalled and gone:
                own.close()  # it landed: nothing more to wait for
            elif stalled:
                cluster_.membership.parking.park(
                    own.hand_over(), [vdi.vid], name,
                    cluster_.settings.transfer_timeout)
        if gone:
            return
        if check.result != proto.SUCCESS:
            raise connection.error_for(check.result, session.where(),
                                       'GET_VDI_INFO', name)
        raise exceptions.BackendException(
            'deleting sheepdog image %s (vdi %x) did not finish: DEL_VDI '
            'was not answered (%s) and may still be carried out, so it is '
            'not resent to another sheep; the image stays marked %s (its '
            'reads fail); retry the delete'
            % (name, vdi.vid, lost, DELETING_KEY))
    if answer.result != proto.SUCCESS:
        raise connection.error_for(answer.result, own.where(), 'DEL_VDI',
                                   name)


def clear_entries(session, vdi):
    """Zero every recorded data_vdi_id entry, in runs of DELETE_BATCH."""
    if not vdi.size:
        return
    last = (vdi.size - 1) // vdi.object_size
    table = Table(session, vdi.vid, last)
    filled = [index for index in range(last + 1) if table.owner(index)]
    requests = []
    for first, count in runs(filled):
        while count:
            take = min(count, DELETE_BATCH)
            requests.append(record(vdi, first, take, owner=0))
            first += take
            count -= take
    if requests:
        session.send(requests)
        for request in requests:
            session.complete(request)


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
    session = cluster.FailoverSession(settings, name, (address, port))
    try:
        vdi = look_up(session, name)
        last = (length - 1) // vdi.object_size
        return list(unowned(session, vdi.vid, six.moves.range(last + 1)))
    finally:
        session.close()
