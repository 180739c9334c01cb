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
"""What one operation sends to sheep, and where its answer goes.

A ``Request`` is a complete description of one operation (what to send,
where the response data goes), independent of the connection and of the
id it travels under: ``connection.Connection.send`` gives it a fresh id
each time, so the same object can be sent again after a retryable
result, or to another sheep after a failover. What the sending left on
it (its result, when its bytes went out, the retry's deadline) is
overwritten by the next send; who decides to send it again is
``retry.Retry`` and ``failover.FailoverSession``.
"""

import collections

from glance_store_fastsheep.native import proto

# What a data object's request is known by (``Request.tag``): the
# object's index, and whether the request holds a slot of the write
# budget (``window``; a removal holds none).
ObjectTag = collections.namedtuple('ObjectTag', 'index slot')
# What an inode record is known by: it sets the entries of the indexes
# first..first+count-1 (``vdi.record``).
RecordTag = collections.namedtuple('RecordTag', 'first count')


class Request(object):
    """One operation: its header fields, data out and data back.

    payload (a list of bytes-like pieces) is sent after the header;
    view receives a success's data, exactly ``expected`` bytes. Nothing
    here depends on the connection: resending is sending again.
    """

    # What to send and where the answer goes: set once, by the caller.
    __slots__ = ('opcode', 'oid', 'offset', 'length', 'view', 'flags',
                 'payload', 'copies', 'copy_policy', 'header_data', 'tag',
                 'vid',
                 # What the last sending left: overwritten when resent.
                 'result', 'response', 'done', 'sent_at',
                 # The retry's (retry.Retry): set at the first retryable
                 # result, kept across resends.
                 'deadline', 'pause')

    def __init__(self, opcode, oid=0, offset=0, length=0, view=None,
                 flags=0, header_data=None, payload=None, copies=0,
                 copy_policy=0, tag=None, vid=None):
        self.opcode = opcode
        # The VDI a request without an object id (an attribute set)
        # changes; object requests name theirs in oid.
        self.vid = vid
        self.oid = oid
        self.offset = offset
        self.length = length
        self.view = view
        self.flags = flags
        self.payload = payload
        self.copies = copies
        self.copy_policy = copy_policy
        # VDI and internal requests: a function of the id giving the
        # header and its data.
        self.header_data = header_data
        # What the caller knows the request by: an ObjectTag or a
        # RecordTag, None when the caller needs nothing.
        self.tag = tag
        self.result = None
        self.response = None
        self.done = False
        # timeutils.now() once its bytes were sent: the stall timeout
        # runs from there.
        self.sent_at = None
        self.deadline = None
        self.pause = None

    def pieces(self, req_id):
        """What goes on the wire for this request under id req_id."""
        if self.header_data is not None:
            return [self.header_data(req_id)]
        length = self.length
        if self.payload is not None:
            length = sum(len(piece) for piece in self.payload)
        header = proto.pack_obj(self.opcode, req_id, self.oid, self.offset,
                                length, self.flags, self.copies,
                                self.copy_policy)
        if self.payload is None:
            return [header]
        return [header] + list(self.payload)

    @property
    def expected(self):
        """Bytes of response data a success carries."""
        if self.opcode == proto.OP_STAT_RECOVERY:
            return proto.RECOVERY_STATE_SIZE
        return self.length if self.opcode in (proto.OP_READ_OBJ,
                                              proto.OP_READ_VDIS) else 0

    @property
    def capacity(self):
        """The most bytes of response data the request has room for."""
        if self.opcode == proto.OP_GET_NODE_LIST:
            if self.view is None:
                return proto.NODE_LIST_BUFFER
            return len(self.view)
        return self.expected

    def accepts(self, data_length):
        """Whether a success may carry data_length bytes.

        GET_NODE_LIST answers as many as the cluster has nodes, within
        the buffer it offered; everything else exactly ``expected``.
        """
        if self.opcode == proto.OP_GET_NODE_LIST:
            return data_length <= self.capacity
        return data_length == self.expected

    def vdi_id(self):
        """The id of the VDI this request changes or reads, else None."""
        if self.vid is not None:
            return self.vid
        if self.opcode in MUTATING_OBJECT_OPS + (proto.OP_READ_OBJ,
                                                 proto.OP_REMOVE_OBJ):
            return proto.oid_vid(self.oid)
        return None

    def mutates(self):
        """Whether a late copy of this request can add to a VDI.

        Object creates and writes (data and inode), attribute sets or
        deletes and NEW_VDI: what could leave an object, an entry, a
        marker or a VDI behind once landing after a removal. Not reads,
        and not REMOVE_OBJ (removing again removes nothing more).
        """
        if self.opcode in MUTATING_OBJECT_OPS + (proto.OP_NEW_VDI,):
            return True
        return (self.opcode == proto.OP_GET_VDI_ATTR and
                bool(self.flags & (proto.FLAG_CMD_CREAT |
                                   proto.FLAG_CMD_DEL)))

    def stand_in(self):
        """A copy to read a late answer into, touching nothing of this one.

        The request itself is resent elsewhere (its buffers, results and
        state are the twin's); an answer to the first copy goes into the
        stand-in, and any data it carries is dropped (no view).
        """
        length = self.length
        if self.payload is not None:
            length = sum(len(piece) for piece in self.payload)
        copy = Request(self.opcode, self.oid, self.offset, length,
                       flags=self.flags, vid=self.vdi_id())
        copy.sent_at = self.sent_at
        return copy

    def reads_inode(self):
        """Whether this reads (part of) a VDI's inode object."""
        return (self.opcode == proto.OP_READ_OBJ and
                bool(self.oid & proto.VDI_BIT))

    def describe(self):
        name = {proto.OP_READ_OBJ: 'READ_OBJ',
                proto.OP_WRITE_OBJ: 'WRITE_OBJ',
                proto.OP_CREATE_AND_WRITE_OBJ: 'CREATE_AND_WRITE_OBJ',
                proto.OP_REMOVE_OBJ: 'REMOVE_OBJ'}.get(self.opcode)
        if name is None:
            return {proto.OP_GET_VDI_INFO: 'GET_VDI_INFO',
                    proto.OP_NEW_VDI: 'NEW_VDI',
                    proto.OP_DEL_VDI: 'DEL_VDI',
                    proto.OP_STAT_CLUSTER: 'STAT_CLUSTER',
                    proto.OP_GET_NODE_LIST: 'GET_NODE_LIST',
                    proto.OP_GET_VDI_ATTR: 'GET_VDI_ATTR'}.get(
                self.opcode, 'opcode 0x%02x' % self.opcode)
        if self.opcode == proto.OP_REMOVE_OBJ:
            return 'REMOVE_OBJ of object %016x' % self.oid
        if self.payload is not None:
            return '%s of %d bytes at %d of object %016x' % (
                name, sum(len(p) for p in self.payload), self.offset,
                self.oid)
        return '%s of %d bytes at %d of object %016x' % (
            name, self.length, self.offset, self.oid)


# Object requests whose late copy can add to a VDI (Request.mutates).
MUTATING_OBJECT_OPS = (proto.OP_CREATE_AND_WRITE_OBJ, proto.OP_WRITE_OBJ)


def vdi_request(opcode, name, snapid=0, tag='', vdi_size=0):
    """A Request for a VDI operation on name (NEW_VDI takes no tag)."""
    if opcode == proto.OP_NEW_VDI:
        tag = None
    return Request(opcode, header_data=lambda req_id: proto.pack_vdi(
        opcode, req_id, name, snapid, tag, vdi_size))
