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
"""Uploads over sheep's own protocol, several object writes in flight.

``dog vdi write`` creates one object, waits, records it in the inode,
waits, and only then reads the next object from its stdin. This writer
keeps up to ``write_concurrency`` ``CREATE_AND_WRITE_OBJ`` requests in
flight on one connection and records the acknowledged objects in the
inode's ``data_vdi_id`` table with one ``WRITE_OBJ`` per run of
entries: an object is recorded only once sheep acknowledged its data,
so the inode never points at an object that is not there. All-zero
objects are neither written nor recorded, so a thin image stays thin
(a hole reads back as zeros).

Each in-flight write beyond an upload's first holds a slot of the
process's write budget (``budget.WRITERS``), as a ``dog`` child does;
an upload holds at most ``write_concurrency`` objects in memory, and
hashing runs at most one object behind (``window``).

Hashing overlaps the transfer: every hash and the verifier has a worker
of its own (``image_data.Digest.feed``), a thread under native threads,
a tpool job per object under eventlet, fed the pieces in order while
this thread sends (hashlib releases the GIL on large buffers, socket
writes too).

If the sheep fails mid-upload, the session moves to another member and
resends the writes and inode updates not acknowledged yet (``cluster``).
On failure, what the upload made is removed, or marked for removal
when no member can be reached (``leftovers``).

Sizes. A flat inode (the store policy NEW_VDI gives) records at most
2^20 objects (``MAX_OBJECTS``): the object size is asked of the cluster
before NEW_VDI (``GET_CLUSTER_DEFAULT``) and an upload larger than
object size x 2^20 is refused before anything is written, one of
unknown size before its object 2^20 is sent. The inode's ``vdi_size``
is never rewritten while objects are in flight: a late copy of such a
write (its twin resent to another gateway after a failover) could land
after the last one and cut the image short. A known size is the VDI's
from NEW_VDI on; an upload of unknown size creates its VDI at the flat
bound, object size x 2^20, and writes the real size once, after every
object and every ``data_vdi_id`` entry was acknowledged, so that any
copy of that write, late or resent, writes the same value. Sheep does
not bound object writes or entries by ``vdi_size`` (no object path of
sheep/gateway.c or ops.c reads it); what reads it is the cleanup of a
VDI: sheep's deletion work and ``dog vdi delete`` zero and check the
entries below it, ``deletion.delete`` too, and ``leftovers.sendable``
puts a leftover's orphans below it. Created at the bound, a partial
VDI's size covers every index its upload may have sent, whoever cleans
it up; the cost is a leftover of unknown size (one no member could
clean up) whose replacement looks through all 2^20 indexes.

Names. The store names each upload's VDI for that attempt alone (the
image id and a random suffix, ``store.vdi_name``), so ``NEW_VDI``
answering VDI_EXIST means a copy of this very request landed with its
reply lost: the VDI is adopted (``vdi.create``), never failed on. A
failed attempt's leftover never blocks a retry, which takes a new name.
"""

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import excutils
from oslo_utils import units

from glance_store_fastsheep import budget
from glance_store_fastsheep import image_data
from glance_store_fastsheep.native import deletion
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import failover
from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import leftovers
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import recovery
from glance_store_fastsheep.native import vdi as vdi_ops
from glance_store_fastsheep.native import window

LOG = logging.getLogger(__name__)

# Objects a flat inode (store policy 0, what NEW_VDI makes) can record:
# its data_vdi_id table has OLD_MAX_DATA_OBJS (2^20) entries. An entry
# past it would land in the inode's gref[] array; dog (vdi create and
# resize) and QEMU refuse a flat VDI above object size x 2^20.
MAX_OBJECTS = inode_layout.DATA_INDEX_ENTRIES
# The object size of a sheep without GET_CLUSTER_DEFAULT (before 1.0):
# SD_DATA_OBJ_SIZE, its only one.
FIXED_OBJECT_SIZE = 4 * units.Mi
# Object sizes sheep can be formatted with: block_size_shift 20 to 31
# for dog cluster format -z; below 9 not even a sector.
SHIFTS = range(9, 32)


def cluster_object_size(session, name):
    """The object size NEW_VDI will give the VDI: the cluster's.

    Asked before NEW_VDI (GET_CLUSTER_DEFAULT, sheep 1.0 on), so
    that a size past a flat inode is refused before anything is
    written and an upload of unknown size is created at its bound
    (``Writer._write``). Sheep 0.9 does not know the request and answers
    INVALID_PARMS (sheep/request.c: no such opcode); its objects
    are all SD_DATA_OBJ_SIZE (sheep/vdi.c), 4 MiB. Any other
    failure fails the upload: a guessed size could create a VDI
    larger than its table.
    """
    answer = session.call_raw(ops.Request(
        proto.OP_GET_CLUSTER_DEFAULT))
    if answer.result == proto.INVALID_PARMS:
        LOG.debug('%s does not know GET_CLUSTER_DEFAULT (sheep 0.9): '
                  'objects of %d bytes', session.where(),
                  FIXED_OBJECT_SIZE)
        return FIXED_OBJECT_SIZE
    if answer.result != proto.SUCCESS:
        raise errors.error_for(answer.result, session.where(),
                               'GET_CLUSTER_DEFAULT', name)
    # sd_rsp.cluster_default: nr_copies, copy_policy, block_size_shift
    # in the bytes GET_NODE_LIST's nr_nodes takes.
    shift = (answer.response.nr_nodes >> 16) & 0xff
    if shift not in SHIFTS:
        raise proto.ProtocolError(
            '%s answered block_size_shift %d to GET_CLUSTER_DEFAULT '
            '(not %d to %d)' % (session.where(), shift,
                                SHIFTS[0], SHIFTS[-1]))
    return 1 << shift


class Writer(object):
    """Writes one image into a new VDI of a session's sheep."""

    def __init__(self, session, settings, name):
        self.session = session
        self.settings = settings
        self.name = name
        # The id of the VDI this upload made, as soon as NEW_VDI said it
        # (clean_up deletes it from then on), and the VDI once its inode
        # was read.
        self.vid = None
        self.vdi = None
        # Whether NEW_VDI of the name may have created a VDI this upload
        # does not know the id of (its answer lost), and of what size.
        self.create_sent = False
        self.size_asked = None
        # Whether the VDI carries the partial marker (mark_partial done).
        self.marked = False
        self.window = window.Window(session, settings)
        # Whether a write may still land after clean_up (see drain).
        self.abandoned = False

    @property
    def created(self):
        """Indexes of the objects sent (``window.Window.created``)."""
        return self.window.created

    @property
    def recorded(self):
        """Indexes recorded in the inode (``window.Window.recorded``)."""
        return self.window.recorded

    # -- data ------------------------------------------------------------

    def _is_zero(self, piece):
        zeros = image_data.zeros(self.settings.read_size)
        size = len(piece)
        if size != len(zeros):
            # The last piece, or a short read of glance's file.
            zeros = zeros[:size] if size < len(zeros) else b'\0' * size
        return piece == zeros

    def _fill(self, source, digest, want):
        """Up to want bytes as pieces: (pieces, length, all zero)."""
        pieces = []
        length = 0
        zero = True
        read_size = self.settings.read_size
        while length < want:
            piece = source.read(min(read_size, want - length))
            if not piece:
                break
            digest.feed(piece)
            if zero and not self._is_zero(piece):
                zero = False
            pieces.append(piece)
            length += len(piece)
        return pieces, length, zero

    def write(self, source, digest, image_size):
        """Create the VDI, write source into it; return bytes written.

        image_size 0 is unknown: the VDI is created at the flat bound
        (object size x 2^20) and its size written once, after the last
        object and entry were acknowledged (``vdi.set_size``). Known
        sizes must match the data exactly (Invalid); neither may pass
        the flat bound (Invalid, before anything is written). source and
        digest are the store's ``image_data.Source`` and ``Digest``, taken
        as they are: wrapped again, each read would go through two
        layers.
        """
        try:
            written = self._write(source, digest, image_size)
        except BaseException:
            with excutils.save_and_reraise_exception():
                try:
                    digest.settle()
                except Exception as exc:
                    # The upload's own error is the one to report.
                    LOG.debug('Hashing %s also failed: %s', self.name, exc)
        try:
            digest.settle()
        finally:
            # Every write was answered: only slots held for hashing.
            self.window.release_slots()
        return written

    def _create(self, size):
        """Create (or adopt, see ``vdi.create``) and mark the VDI.

        The store names each attempt's VDI uniquely (``store.vdi_name``),
        so ``vdi.create`` adopts what a lost reply left and nothing else
        holds the name. A caller of the client that chooses its own
        names may still meet a marked leftover of an earlier upload of
        the name: it is replaced.

        self.vid is set as soon as NEW_VDI answers, before the inode is
        read and the marker set: if either fails, clean_up deletes the
        VDI like any partial one.
        """
        self.create_sent, self.size_asked = True, size
        try:
            self.vid = vdi_ops.create(self.session, self.name, size)
        except exceptions.Duplicate:
            # The name was taken: what has it is not this upload's.
            self.create_sent = False
            old = vdi_ops.find(self.session, self.name)
            if old is None or not markers.is_partial(self.session,
                                                     self.name, old):
                raise
            LOG.warning('Replacing sheepdog image %s (vdi %x): an earlier '
                        'upload of it did not complete (marked %s)',
                        self.name, old.vid, markers.PARTIAL_KEY)
            # Its sweep removes what the earlier upload may have sent
            # unrecorded too: no entry names those.
            deletion.delete(self.session, self.name,
                            sent=leftovers.sendable(old))
            self.create_sent = True
            self.vid = vdi_ops.create(self.session, self.name, size)
        self.vdi = vdi_ops.Vdi(self.vid, vdi_ops.read_inode_fields(
            self.session, self.vid))
        markers.mark_partial(self.session, self.name, self.vdi)
        self.marked = True

    def _write(self, source, digest, image_size):
        object_size = cluster_object_size(self.session, self.name)
        limit = object_size * MAX_OBJECTS
        known = image_size > 0
        if image_size > limit:
            raise exceptions.Invalid(
                message='image of %d bytes is larger than the largest '
                'flat sheepdog image of this cluster: %d objects (2^20) '
                'of %d bytes, %d bytes (%s)' % (
                    image_size, MAX_OBJECTS, object_size, limit,
                    self.session.where()))
        # Unknown size: created at the bound, written once at the end.
        self._create(image_size if known else limit)
        if self.vdi.object_size != object_size:
            # A sheep that said one default and used another. Nothing is
            # written; the VDI is never left larger than its table
            # (sheep's deletion reads the entries below vdi_size): its
            # size written once, to its own bound, before clean_up.
            bound = self.vdi.object_size * MAX_OBJECTS
            if self.vdi.size > bound:
                vdi_ops.set_size(self.session, self.vdi, bound)
            raise exceptions.BackendException(
                '%s created sheepdog image %s with objects of %d bytes, '
                'not the %d its cluster default said' % (
                    self.session.where(), self.name, self.vdi.object_size,
                    object_size))
        self.window.begin(self.vdi, digest)
        offset = 0
        index = 0
        while not known or offset < image_size:
            if index == MAX_OBJECTS:
                if known or not source.read(1):
                    break
                raise exceptions.Invalid(
                    message='image data goes on past the largest flat '
                    'sheepdog image of this cluster: %d objects (2^20) '
                    'of %d bytes, %d bytes (%s)' % (
                        MAX_OBJECTS, object_size, limit,
                        self.session.where()))
            want = object_size
            if known:
                want = min(object_size, image_size - offset)
            slot = self.window.make_room()
            sent = False
            try:
                pieces, length, zero = self._fill(source, digest, want)
                digest.end_object()
                if known and length < want:
                    raise exceptions.Invalid(
                        message='image data ended after %d of the %d '
                        'bytes announced' % (offset + length, image_size))
                if not length:
                    break
                if not zero:
                    sent = True  # the request owns the slot from here
                    self.window.send(index, pieces, slot)
            finally:
                if slot and not sent:
                    budget.WRITERS.give(1)
            del pieces
            offset += length
            index += 1
            if length < want:
                break
        if known and source.read(1):
            raise exceptions.Invalid(
                message='image data is larger than the %d bytes announced'
                % image_size)
        self.window.finish()
        if self.created != self.recorded:
            raise exceptions.BackendException(
                'upload of %s: %d object(s) written but not recorded'
                % (self.name, len(self.created - self.recorded)))
        if not known:
            # The one vdi_size write of the upload: every object and
            # entry was acknowledged, so any copy of it, late or
            # resent, writes this same value.
            vdi_ops.set_size(self.session, self.vdi, offset)
        if self.session.epoch_moved():
            self._rewrite_inode(None if known else offset)
        # Only now is the image complete.
        markers.clear_partial(self.session, self.name, self.vdi)
        return offset

    def _rewrite_inode(self, size):
        """Write the entries (and size) again once no member recovers.

        The members changed while the upload ran, and a copy of the
        inode may miss writes recovery raced (see native/recovery.py).
        The same values again, so a late copy of either write changes
        nothing; again if the epoch moves on meanwhile, within the
        transfer timeout. size: the vdi_size written, None when NEW_VDI
        set it.
        """
        def rewrite():
            requests = [vdi_ops.record(self.vdi, first, count)
                        for first, count in vdi_ops.runs(self.recorded)]
            if size is not None:
                requests.append(vdi_ops.inode_write(
                    self.vdi, inode_layout.VDI_SIZE_OFFSET,
                    proto.pack_uint64(size)))
            self.session.send(requests)
            for request in requests:
                self.session.complete(request)
        recovery.repeat_once_recovered(self.session, self.name,
                                       recovery.UPLOAD_FAILS,
                                       'rewriting its inode', rewrite)

    def drain(self):
        """Wait a while for what is in flight (``leftovers.drain``)."""
        leftovers.drain(self)

    def clean_up(self):
        """Remove what this failed upload left (``leftovers.clean_up``)."""
        self.window.release_slots()
        leftovers.clean_up(self)


def write_image(settings, name, source, digest, image_size, transfer=None):
    """Create image name on the configured sheep and write source.

    Returns the bytes written; on failure removes what it wrote and
    raises. transfer (a ``stream.Transfer``) learns the failovers.
    """
    session = failover.FailoverSession(settings, name,
                                       (settings.address, settings.port))
    writer = Writer(session, settings, name)
    try:
        written = writer.write(source, digest, image_size)
        # The first copies a failover resent, if any, are parked: what
        # they answered already settles them, without waiting (a frozen
        # sheep must not hold a successful upload); a delete settles
        # the rest.
        session.close()
        session.cluster.membership.parking.settle(writer.vdi.vid, name,
                                                  wait=False)
        return written
    except proto.ProtocolError:
        # A garbled stream: its answers can no longer be read.
        with excutils.save_and_reraise_exception():
            writer.abandoned = bool(session.outstanding)
            session.close(park=False)
            writer.clean_up()
    except BaseException:
        with excutils.save_and_reraise_exception():
            # Every error, sheep's final results included: what is in
            # flight lands before clean_up looks.
            writer.drain()
            session.close()
            writer.clean_up()
    finally:
        if transfer is not None:
            transfer.failovers = session.failovers
        session.close()
