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
"""Deleting a VDI as ``dog vdi delete`` does, crash-safe.

``DELETING_KEY`` set first (``markers``), so that reads of a VDI whose
delete did not finish fail instead of returning zeros; then the entries
zeroed in runs (sheep drops a reference to each object whose entry
changes, and removes the object at the last one), then ``DEL_VDI`` on
one connection, never resent to another sheep, then ``GET_VDI_INFO``
must answer ``NO_VDI``: sheep answers ``DEL_VDI`` with success even when
its deletion work found objects still recorded and left the VDI in
place. What a late copy of each of these requests does is the subject
of doc/source/contributor/replay-model.rst.
"""

import heapq
import itertools

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import excutils
import six

from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import given_up
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import recovery
from glance_store_fastsheep.native import vdi as vdi_ops

LOG = logging.getLogger(__name__)


# Entries zeroed per WRITE_OBJ on delete: dog's NR_BATCHED_DISCARD.
DELETE_BATCH = 128


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
        fields = vdi_ops.read_inode_fields(session, parent)
        if fields.name == wanted:
            return True
        if fields.name:
            # The base of a clone: another image's snapshot.
            return False
        parent = fields.parent_vdi_id
    return True


def delete(session, name, sent=()):
    """Delete the current VDI name as ``dog vdi delete`` does; confirm.

    NotFound if missing; InUseByStore, leaving everything intact, when
    the image has snapshots (clones, e.g. cinder volumes, may depend on
    them: deleting the current VDI would leave their data behind under
    the image's name, which glance could no longer see or delete).

    Crash-safe: DELETING_KEY is set before anything is removed, so a
    delete that stops anywhere after leaves a VDI whose reads fail
    (``markers.check_readable``) and which a retried delete finishes.

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

    sent: a sequence of the indexes (ascending) of the data objects an
    unfinished upload of the VDI may have created without recording
    them (a failed upload's, ``leftovers.clean_up``; a partial
    leftover's, ``write.Writer``). No entry names these orphans, so no
    later delete would find them at the flat bound (``sweep``), nor
    would ``dog vdi delete``: the sweep removes them with the rest, once,
    after DELETING_KEY. A delete that stops before its sweep ended
    removes them on its way out instead (``remove_unrecorded``), as
    the callers did before they delete.
    """
    _settle(session, name)
    try:
        vdi = vdi_ops.look_up(session, name)
    except exceptions.NotFound:
        markers.remove_markers(session, name)
        raise
    try:
        _settle(session, name, vdi.vid)
        if has_snapshots(session, vdi, name):
            raise exceptions.InUseByStore(
                message='sheepdog image %s has snapshots (%s): left '
                'intact; delete them first (dog vdi delete -s)' % (
                    name, session.where()))
        markers.mark_deleting(session, name, vdi)
        filled = clear_entries(session, vdi)
        remove_objects(session, vdi, sweep(vdi, filled, sent))
        if session.epoch_moved():
            _remove_again(session, name, vdi, sent)
    except Exception:
        with excutils.save_and_reraise_exception():
            if len(sent):
                remove_unrecorded(session, name, vdi, sent)
    _settle(session, name, vdi.vid)
    _del_vdi_once(session, name, vdi)
    check = session.call_raw(ops.vdi_request(proto.OP_GET_VDI_INFO,
                                             name))
    if check.result == proto.SUCCESS:
        raise exceptions.BackendException(
            '%s answered success to DEL_VDI of %s but still has it (vdi '
            '%x); see its sheep.log' % (session.where(), name,
                                        check.response.vdi_id))
    if check.result not in (proto.NO_VDI, proto.NO_TAG):
        raise errors.error_for(check.result, session.where(),
                               'GET_VDI_INFO', name)
    _settle(session, name, vdi.vid)
    markers.remove_markers(session, name)


def _remove_again(session, name, vdi, sent):
    """Zero the entries and sweep again once no member recovers.

    The members changed while the objects were removed: recovery copies
    each object it holds to the object's new holder, as it was when the
    recovery began, and writes the inode it read back; an object
    removed meanwhile is then back on a live sheep, named by nothing
    once the VDI is gone (the fault campaign found it). So the removal
    is repeated once recovery is over, again if the epoch moves on
    meanwhile, within the transfer timeout; past it the delete fails
    before DEL_VDI, the image still marked DELETING_KEY.
    """
    def remove():
        filled = clear_entries(session, vdi)
        remove_objects(session, vdi, sweep(vdi, filled, sent))
    recovery.repeat_once_recovered(session, name, recovery.DELETE_FAILS,
                                   'removing its objects again', remove)


def _settle(session, name, vid=None):
    """Wait for the parked connections of name (and vid) to settle."""
    session.cluster.membership.parking.settle(vid, name)


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
    request = ops.vdi_request(proto.OP_DEL_VDI, name)
    cluster_ = session.cluster
    own = cluster_.connect(
        name, stall_timeout=cluster_.settings.transfer_timeout)
    stalled = False
    try:
        answer = own.call_raw(request)
    except errors.ConnectionLost as exc:
        LOG.warning('DEL_VDI of sheepdog image %s (vdi %x) unanswered, '
                    'not resent to another sheep: %s', name, vdi.vid, exc)
        answer = None
        lost = exc
        # Sent whole and unanswered (a stall, a reset or EOF after it
        # went out): sheep may still carry it out.
        stalled = own.sock is not None and bool(given_up.unanswered(own))
    finally:
        if not stalled:
            own.close()
    if answer is None:
        gone = False
        try:
            check = session.call_raw(ops.vdi_request(
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
            raise errors.error_for(check.result, session.where(),
                                   'GET_VDI_INFO', name)
        raise exceptions.BackendException(
            'deleting sheepdog image %s (vdi %x) did not finish: DEL_VDI '
            'was not answered (%s) and may still be carried out, so it is '
            'not resent to another sheep; the image stays marked %s (its '
            'reads fail); retry the delete'
            % (name, vdi.vid, lost, markers.DELETING_KEY))
    if answer.result != proto.SUCCESS:
        raise errors.error_for(answer.result, own.where(), 'DEL_VDI',
                               name)


def clear_entries(session, vdi):
    """Zero every recorded data_vdi_id entry, in runs of DELETE_BATCH.

    Returns the indexes whose entries it zeroed (as the table read
    showed them).
    """
    if not vdi.size:
        return []
    last = (vdi.size - 1) // vdi.object_size
    table = vdi_ops.Table(session, vdi.vid, last)
    filled = [index for index in range(last + 1) if table.owner(index)]
    requests = []
    for first, count in vdi_ops.runs(filled):
        while count:
            take = min(count, DELETE_BATCH)
            requests.append(vdi_ops.record(vdi, first, take, owner=0))
            first += take
            count -= take
    if requests:
        session.send(requests)
        for request in requests:
            session.complete(request)
    return filled


def sweep(vdi, filled, sent=()):
    """The indexes whose objects a delete removes itself, by id.

    Sheep removes an object when the last entry naming it is zeroed,
    and its deletion work after DEL_VDI removes what the entries still
    name; both read the entries from one copy of the inode. After a
    member died mid-upload, recovery can leave the copies differing
    (an entry the upload wrote, acknowledged, on one copy only: see
    native/recovery.py), and a copy without the entry makes sheep keep
    the object, named by a deleted VDI, which nothing reads or removes
    again. So every index the VDI's size covers is removed by id (most
    answer NO_OBJ): the delete does not depend on which copy sheep
    read. Only an upload of unknown size that never completed has the
    flat bound for its size (2^20 objects, ``write``); for it, the
    indexes the table read showed (filled) are swept instead, with
    those its upload may have sent unrecorded (sent, ascending: see
    ``delete``), which no entry names. Each index once, ascending,
    one at a time: sent may be a range of 2^20.
    """
    if not vdi.size:
        covered = ()
    else:
        last = (vdi.size - 1) // vdi.object_size
        if last + 1 >= inode_layout.DATA_INDEX_ENTRIES:
            covered = filled
        else:
            covered = six.moves.range(last + 1)
    # Every index an upload sends lies within its VDI's size, so sent
    # adds to covered only at the flat bound; merged all the same, so
    # that no index of sent is left out whatever the size says.
    return (index for index, _same in itertools.groupby(
        heapq.merge(covered, sent)))


def remove_unrecorded(session, name, vdi, indexes):
    """REMOVE_OBJ those of indexes no entry of vdi records; log failure.

    An unfinished upload's orphans where no delete's sweep removed
    them (``delete``). Only objects no entry names: a VDI whose delete
    stopped before DELETING_KEY still reads whole; those a sweep got
    to already answer NO_OBJ. indexes is a sequence (ascending), read
    a table chunk at a time (``vdi.unowned``). Logged, not raised: the
    caller's own error is the one to report.
    """
    try:
        remove_objects(session, vdi,
                       vdi_ops.unowned(session, vdi.vid, indexes))
    except Exception as exc:
        LOG.error('Could not remove the objects of sheepdog image %s '
                  '(vdi %x) that no entry records: %s', name, vdi.vid,
                  exc)


def remove_objects(session, vdi, indexes):
    """REMOVE_OBJ vdi's data objects of indexes, DELETE_BATCH at once.

    indexes may be an iterator (read only from here on): only a
    batch is held at a time. The connections parked with writes of
    vdi are settled first: a write landing after its REMOVE_OBJ
    would leave an object no inode records.
    """
    session.cluster.membership.parking.settle(vdi.vid)
    indexes = iter(indexes)
    while True:
        requests = [ops.Request(
            proto.OP_REMOVE_OBJ, proto.data_oid(vdi.vid, index),
            copies=vdi.inode.nr_copies,
            copy_policy=vdi.inode.copy_policy,
            tag=ops.ObjectTag(index, False))
            for index in itertools.islice(indexes,
                                          DELETE_BATCH)]
        if not requests:
            return
        session.send(requests)
        for request in requests:
            while not request.done:
                answered = session.receive_one()
                if answered.result == proto.NO_OBJ:
                    # Its data never reached sheep: nothing to remove.
                    answered.done = True
                else:
                    session.follow_up(answered)
