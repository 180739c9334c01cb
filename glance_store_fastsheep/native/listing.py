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
"""The cluster's VDIs, found as ``dog vdi list`` finds them.

For the orphan audit (``fastsheep-locations --orphans``), which must
work where no ``dog`` is installed: sheep answers READ_VDIS with its
bitmap of VDI ids in use, and each id's inode names its VDI. An id
stays in use after its VDI is deleted (the inode keeps an empty name),
and a snapshot's inode has its snapshot time set: neither is an image.
Nothing here writes.
"""

import collections

from oslo_log import log as logging

from glance_store_fastsheep.native import inode_layout
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto

LOG = logging.getLogger(__name__)

# The bitmap READ_VDIS answers: one bit per VDI id (sheep's vdi_inuse).
BITMAP_SIZE = proto.NR_VDIS // 8
# Inode reads in flight at once.
BATCH = 64

Image = collections.namedtuple('Image', 'name vid size')


def vids_in_use(bitmap):
    """The VDI ids whose bit is set in bitmap, lowest first.

    Sheep's bitmap is an array of unsigned longs in its host's byte
    order, read here as a little-endian (x86) sheep sends it: id i is
    bit i % 8 of byte i // 8.
    """
    for index, byte in enumerate(bytearray(bitmap)):
        if not byte:
            continue
        for bit in range(8):
            if byte & (1 << bit):
                vid = index * 8 + bit
                if vid:
                    yield vid


def images(session):
    """The current VDIs of the cluster session reaches, as Images.

    Deleted VDIs and snapshots are left out; an inode that cannot be
    read (a VDI whose creation never finished) is logged and skipped.
    """
    bitmap = bytearray(BITMAP_SIZE)
    session.call(ops.Request(proto.OP_READ_VDIS, length=BITMAP_SIZE,
                             view=memoryview(bitmap)))
    vids = list(vids_in_use(bitmap))
    found = []
    for first in range(0, len(vids), BATCH):
        requests = []
        for vid in vids[first:first + BATCH]:
            buf = bytearray(inode_layout.FIELDS_SIZE)
            requests.append((vid, buf, ops.Request(
                proto.OP_READ_OBJ, proto.vdi_oid(vid), 0, len(buf),
                memoryview(buf), proto.FLAG_CMD_DIRECT)))
        session.send([request for _vid, _buf, request in requests])
        for vid, buf, request in requests:
            while not request.done:
                answered = session.receive_one(request)
                if answered is request and request.result not in (
                        proto.SUCCESS,) + tuple(proto.RETRYABLE):
                    answered.done = True
                else:
                    session.follow_up(answered)
            if request.result != proto.SUCCESS:
                LOG.warning('The inode of sheepdog VDI %x could not be '
                            'read (%s); left out', vid,
                            proto.result_text(request.result))
                continue
            fields = inode_layout.Fields(buf)
            if fields.vdi_id != vid:
                raise proto.ProtocolError(
                    '%s answered the inode of VDI %x for VDI %x'
                    % (session.where(), fields.vdi_id, vid))
            if not fields.name or fields.snap_ctime:
                continue
            found.append(Image(fields.name.decode('utf-8', 'replace'), vid,
                               fields.vdi_size))
    return found
