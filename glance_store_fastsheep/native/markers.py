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
"""The markers this client sets on a VDI: attributes ``dog`` can read.

Each is the VDI attribute of a key (``GET_VDI_ATTR``, as ``dog vdi
setattr``/``getattr`` send it), valued ``vdi=<hex id>``:

* ``PARTIAL_KEY`` (an upload in progress), set right after
  ``NEW_VDI``; once the upload's last inode update was acknowledged
  ``COMPLETE_KEY`` is set and ``PARTIAL_KEY`` deleted. The state only
  moves forward: a late copy of the partial set cannot make a complete
  image partial again (``is_partial``).
* ``DELETING_KEY``, set before a delete removes anything
  (``deletion.delete``), so that reads of a VDI whose delete did not
  finish fail (``check_readable``) instead of returning zeros.

Sheep never removes an attribute's object; ``remove_markers`` does, once
the VDI is gone. What a late copy of each set does is the subject of
doc/source/contributor/replay-model.rst.
"""

from glance_store import exceptions
from oslo_log import log as logging

from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import placement
from glance_store_fastsheep.native import proto

LOG = logging.getLogger(__name__)


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
KEYS = (PARTIAL_KEY, COMPLETE_KEY, DELETING_KEY)


class BeingDeleted(exceptions.BackendException):
    """The VDI is marked DELETING_KEY: a delete of it did not finish."""


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
    known = session.cluster.membership
    for version in known.versions():
        request = ops.Request(
            proto.OP_GET_VDI_ATTR, header_data=lambda req_id, v=version:
                proto.pack_vdi_attr(req_id, v, name, key, value, flags),
            flags=flags, vid=vid)
        answer = session.call_raw(request)
        if answer.result == proto.VER_MISMATCH:
            continue
        known.sheep_version = version
        return answer
    raise errors.Unsupported(
        '%s answered %s to GET_VDI_ATTR with every known internal '
        'protocol version: %s' % (session.where(), proto.result_text(
            proto.VER_MISMATCH), errors.USE_DOG))


def _marker_value(vdi):
    return ('vdi=%x' % vdi.vid).encode('ascii')


def _set_marker(session, name, vdi, key):
    """Set attribute key of name to vdi's marker value (a plain set).

    A plain set (no EXCL): sheep's get_vdi_attr writes the attribute's
    first slot whatever it held, so a marker an earlier VDI of the name
    left is overwritten, and a resent request does the same again. A
    late copy landing on a later VDI of the name names the earlier vid
    and carries the later VDI's create_time: ``has_marker`` ignores it.
    """
    answer = _attr_request(session, name, key, proto.FLAG_CMD_CREAT,
                           _marker_value(vdi), vdi.vid)
    if answer.result != proto.SUCCESS:
        raise errors.error_for(answer.result, session.where(),
                               'GET_VDI_ATTR (set %s)' % key, name)


def has_marker(session, name, vdi, key):
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
        raise errors.error_for(answer.result, session.where(),
                               'GET_VDI_ATTR (look up %s)' % key, name)
    wanted = _marker_value(vdi)
    buf = bytearray(proto.ATTR_HEADER_SIZE + len(wanted))
    session.call(ops.Request(
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
        raise errors.error_for(answer.result, session.where(),
                               'GET_VDI_ATTR (delete %s)' % PARTIAL_KEY,
                               name)


def is_partial(session, name, vdi):
    """Whether vdi (the current VDI name) is this client's unfinished upload.

    Marked partial and never marked complete (``has_marker``: both
    must name vdi). So an image ``dog`` or the Pike driver wrote (never
    marked), a complete image made after a marked VDI was deleted by
    hand, and a complete image a late partial set re-marked are never
    taken for partial.
    """
    return (has_marker(session, name, vdi, PARTIAL_KEY) and
            not has_marker(session, name, vdi, COMPLETE_KEY))


def mark_deleting(session, name, vdi):
    """Mark vdi (the current VDI name) as being deleted; never unset."""
    _set_marker(session, name, vdi, DELETING_KEY)


def is_deleting(session, name, vdi):
    """Whether vdi (the current VDI name) is marked being deleted."""
    return has_marker(session, name, vdi, DELETING_KEY)


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
# clean-up the look-up and the deletion of its VDI (leftovers.clean_up):
# all are idempotent, and a final error (an EIO or a system error of one
# sheep, a gateway killed meanwhile) is often not the next one's.
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
    for key in KEYS:
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
    found = session.call_raw(ops.Request(
        proto.OP_READ_OBJ, oid, 0, len(buf), memoryview(buf),
        proto.FLAG_CMD_DIRECT))
    if found.result == proto.NO_OBJ:
        return None
    if found.result != proto.SUCCESS:
        return 'reading it: %s' % proto.result_text(found.result)
    if proto.unpack_vdi_attr(buf)[2] != key.encode('ascii'):
        return None  # another attribute's slot: not ours to remove
    gone = session.call_raw(ops.Request(proto.OP_REMOVE_OBJ, oid))
    if gone.result not in (proto.SUCCESS, proto.NO_OBJ):
        return 'removing it: %s' % proto.result_text(gone.result)
    return None
