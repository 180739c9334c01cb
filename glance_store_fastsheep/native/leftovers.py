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
"""What a failed native upload leaves on the cluster, and its removal.

On failure the VDI is deleted (``deletion.delete``), told the objects
the upload created, so that its sweep removes those never recorded
too, on a fresh connection to any live member. Before that, whatever
the error, the answers of the requests still in flight are waited for:
on the gateway (``drain``, within the stall timeout), then on every
connection given up with writes in flight (the gateways a failover
left and the last one, parked by ``failover.FailoverSession``), which
clean_up settles (``parking.Parking``) before it looks: sheep does
every request that reached it, so a write answered after clean_up
looked would leave an object no inode records. That wait is bounded by
``transfer_timeout`` from when each connection was given up; what is
still unanswered then (a sheep frozen that long) is logged as a
warning naming the VDI and its objects that may still land. Only a
garbled stream (nothing more can be read from it) is closed with its
requests unsettled.

A successful upload does not wait for the connections a failover
parked (a frozen gateway must not hold it): it reads the answers
already there and closes what they settle; a delete of the image
settles the rest before it removes anything (``deletion.delete``).

When no member can be reached, that cleanup cannot run: the VDI stays.
It carries the ``markers.PARTIAL_KEY`` attribute from right after
``NEW_VDI`` until its last inode update was acknowledged, so that it
can be told for an unfinished upload (``markers.is_partial``;
``dog vdi getattr NAME glance_store_fastsheep.partial``) and deleted;
a caller of the client that reuses a name replaces it on its next
upload of that name (VDI_EXIST, then the marker found).
"""

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import timeutils
import six

from glance_store_fastsheep.native import deletion
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import failover
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import vdi as vdi_ops

LOG = logging.getLogger(__name__)


def drain(writer):
    """Wait, within a stall timeout, for the answers of what is in flight.

    After every error but a garbled stream (``ProtocolError``:
    nothing more can be read from it), before clean_up: sheep does
    every request that reached it, so a write still in flight would
    otherwise land after clean_up removed its object, and stay,
    recorded nowhere. On the gateway's connection as it is, without
    failing over (a resend would put more copies in flight), and
    bounded: a request is waited for at most the stall timeout (as
    everywhere), and no new wait starts after one stall timeout
    from the drain's start, so a frozen sheep costs at most two.
    Results no longer matter here. What is left unanswered here
    (and the first copies of what a failover resent) is not lost:
    closing the session parks those connections, and clean_up
    settles them before it removes anything.
    """
    gateway = writer.session.session
    deadline = timeutils.now() + gateway.stall_timeout
    try:
        while gateway.outstanding:
            if gateway.sock is None or timeutils.now() >= deadline:
                raise errors.Stalled(
                    '%d request(s) of %s still unanswered' % (
                        len(gateway.outstanding), gateway.where()))
            gateway.receive_one()
    except Exception as exc:
        # A stream that could not be read is closed, not parked.
        writer.abandoned = gateway.garbled
        LOG.warning('Requests in flight of sheepdog image %s not all '
                    'answered before its cleanup, which waits for them '
                    'on a parked connection: %s', writer.name, exc)


def clean_up(writer):
    """Remove what a failed upload left; log what cannot be removed.

    On a fresh connection: the session that failed may be the
    reason. The VDI is deleted as ``deletion.delete`` deletes it, told
    the indexes the upload sent (``writer.created``): its sweep removes
    the orphans (objects created, never recorded) with the rest, once.
    writer is the failed upload's ``write.Writer``, its requests all
    answered or given up; the VDI it made is filled in when found here
    (its vid after a NEW_VDI whose answer was lost, its inode when it
    could not be read).

    The orphans have no other removal, and nothing that may delete
    the VDI later would find them (no entry names them: a delete
    through the store sweeps only what the table shows at the flat
    bound, ``dog vdi delete`` only the entries). So where that sweep
    does not run they are still removed, as before the delete's sweep
    took them over: a delete that fails before its sweep ended removes
    them on its way out (``deletion.delete``), and a name gone before
    a delete of this clean-up finished (NotFound: someone else's
    delete, which did not know them) has them removed here. A look-up
    that fails or finds another VDI removes nothing, as ever. Every
    removal comes after the settle below.
    """
    if writer.vid is None and not writer.create_sent:
        return
    try:
        # Any live member: the node that failed is left out.
        session = failover.FailoverSession(
            writer.settings, writer.name, cluster=writer.session.cluster)
    except exceptions.BackendException as exc:
        if writer.vid is None:
            LOG.error('Could not look for the sheepdog image %s that '
                      'an unanswered NEW_VDI may have created (delete '
                      'it by hand if it is there): %s', writer.name, exc)
        elif writer.marked:
            LOG.error('Could not remove the partial sheepdog image %s '
                      '(vdi %x, marked %s: an upload of the same image '
                      'id replaces it): %s', writer.name, writer.vid,
                      markers.PARTIAL_KEY, exc)
        else:
            LOG.error('Could not remove the partial sheepdog image %s '
                      '(vdi %x, not marked %s: delete it by hand): %s',
                      writer.name, writer.vid, markers.PARTIAL_KEY, exc)
        return
    try:
        # Nothing is looked at or removed while a write of this
        # upload may still land (see parking.Parking).
        session.cluster.membership.parking.settle(writer.vid, writer.name)
        if writer.vid is None and not _find_created(writer, session):
            return
        current = _tried(writer, vdi_ops.look_up, session, writer.name)
        if current.vid != writer.vid:
            LOG.error('Sheepdog image %s is no longer the VDI this '
                      'upload created (%x, now %x); left alone',
                      writer.name, writer.vid, current.vid)
            return
        if writer.vdi is None:
            # Created, but its inode could not be read then.
            writer.vdi = current
        sent = sorted(writer.created)
        if not _delete(writer, session, sent) and sent:
            deletion.remove_unrecorded(session, writer.name, writer.vdi,
                                       sent)
        LOG.info('Deleted the partial sheepdog image %s', writer.name)
        if writer.abandoned:
            LOG.warning('Writes of the partial sheepdog image %s (vdi '
                        '%x) were left unanswered on a connection '
                        'whose answers could not be read; sheep may '
                        'still do them, leaving objects of vdi %x that '
                        'no inode records',
                        writer.name, writer.vid, writer.vid)
    except Exception as exc:
        # The upload's own error is the one raised; this one is only
        # logged (NotFound included: someone removed it already).
        LOG.error('Could not remove the partial sheepdog image %s: %s',
                  writer.name, exc)
    finally:
        session.close()


def _delete(writer, session, sent):
    """Delete the attempt's VDI; True once done, False on NotFound.

    A delete that stopped anywhere is finished by the next one
    (``deletion.delete``), and the attempt's name is its own
    (``store.vdi_name``): trying again (``_tried``) cannot reach another
    VDI. It is given sent, the indexes the upload sent (ascending), for
    its sweep. NotFound: the name is gone (an earlier try's DEL_VDI that
    landed late, or someone else's delete, whose sweep did not know the
    upload's objects).
    """
    try:
        _tried(writer, deletion.delete, session, writer.name, sent=sent)
        return True
    except exceptions.NotFound:
        return False


def _tried(writer, call, *args, **kwargs):
    """call(*args, **kwargs), tried again on a final error.

    The clean-up's look-up and delete are idempotent, and a final error
    (an EIO, a system error or a halt of one sheep, a gateway killed
    meanwhile) is often not the next one's. Given up after one, the
    attempt's VDI, not yet marked when the upload failed before its
    marker was set, stays under a name nothing uses again.
    NotFound is an answer, not an error: it is raised at once.
    """
    for attempt in range(1, markers.REMOVAL_TRIES + 1):
        try:
            return call(*args, **kwargs)
        except exceptions.NotFound:
            raise
        except exceptions.BackendException as exc:
            if attempt == markers.REMOVAL_TRIES:
                raise
            LOG.warning('Removing the partial sheepdog image %s failed '
                        '(try %d of %d), trying again: %s', writer.name,
                        attempt, markers.REMOVAL_TRIES, exc)


def _find_created(writer, session):
    """Whether the VDI a NEW_VDI without answer made is found (vid).

    NEW_VDI was sent but no id came back (its answer lost, then the
    upload failed): the copy that was carried out, if any, made a
    VDI under this attempt's name, which only it can have made when
    the store chose the name. It is taken for this upload's only if
    it is what a fresh NEW_VDI makes (``vdi.adoptable``), as a
    resend would have taken it; anything else is left alone.
    """
    found = vdi_ops.find(session, writer.name)
    if found is None:
        return False
    if not vdi_ops.adoptable(session, writer.name, found,
                             writer.size_asked):
        LOG.error('Sheepdog image %s (vdi %x) is not the empty VDI this '
                  'upload\'s unanswered NEW_VDI would have made; left '
                  'alone', writer.name, found.vid)
        return False
    LOG.warning('NEW_VDI of sheepdog image %s was carried out but its '
                'answer was lost: removing vdi %x', writer.name,
                found.vid)
    writer.vid = found.vid
    return True


def sendable(vdi):
    """Indexes within vdi's size: every one an upload of it may have sent.

    Where a partial upload's orphans can be when what it sent is not
    known (a leftover an upload of its name replaces, ``write.Writer``,
    has them removed by its delete's sweep): every object an upload
    sends lies within the size its VDI was created with (a known size,
    or for an unknown one the flat bound, object size x 2^20), and only
    a complete upload of unknown size rewrites the size, once, after
    every object was recorded. Most of these are holes, which answer
    NO_OBJ. A range, never past a flat table, whatever the size says.
    """
    if not vdi.size:
        return six.moves.range(0)
    last = min((vdi.size - 1) // vdi.object_size,
               inode_layout.DATA_INDEX_ENTRIES - 1)
    return six.moves.range(last + 1)
