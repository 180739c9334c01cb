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
"""Which sheep each request of a session goes to, and what carried it.

A gateway asked for an object it does not hold forwards the read to a
random holder (``gateway_replication_read``, sheep/gateway.c) and waits
on it as long as sheep's own timeouts let it, so one frozen holder
stalls reads sent to any live gateway. ``ReadRoutes`` computes the
holders as sheep does (``placement.Ring`` over the members as last
learned) and names, for each object read of a routed VDI, a live holder
to send it to; everything else goes to the gateway. It keeps the
connection to each holder and which connection carried each request,
so that an answer is awaited where it will come from.

It decides and remembers, and sends nothing: opening a holder's
connection, sending and failing over are ``failover.FailoverSession``'s,
which owns one ``ReadRoutes``.
"""

from glance_store_fastsheep.native import placement
from glance_store_fastsheep.native import proto


class ReadRoutes(object):
    """The routes of one session's object reads to their holders.

    membership: the ``membership.Membership`` whose members place the
    objects; failed: the set of nodes the operation gave up on (the
    cluster's, shared: a node it names is never a target).
    """

    def __init__(self, membership, failed):
        self.membership = membership
        self.failed = failed
        self.ring = None
        self._members = None
        # node -> the Connection to that holder.
        self.connections = {}
        # vid -> (copies, data too) of the VDIs whose reads are routed.
        self.routed = {}
        # id(request) -> the Connection the request was last sent on.
        self._carriers = {}

    def route(self, vid, copies, data=True):
        """Route READ_OBJ of vid's objects to a node holding a copy.

        copies is the VDI's. The inode object always; the data objects
        only with data: not those of an erasure-coded VDI, of which a
        node holds a strip and only a gateway rebuilds the data. Without
        a known placement, or copies (0), reads of vid go on to the
        gateway.
        """
        self.refresh()
        if self.ring is not None and copies:
            self.routed[vid] = (copies, data)

    def refresh(self):
        """Rebuild the ring when the members changed since last asked.

        The ring is the members' as last learned: a reply whose epoch
        is newer than theirs has the session ask for them again, and
        refresh. The members are replaced, never changed in place, when
        learned again: the same object is the same members.
        """
        members = self.membership.members
        if members is not self._members:
            self._members = members
            self.ring = placement.Ring.of(members)

    def target(self, request, gateway):
        """The node request is to go to; None for the gateway.

        gateway: the node of the session's gateway. A read whose live
        holders include the gateway goes there: that sheep reads its
        own copy, on the connection every other request uses.
        """
        if request.opcode != proto.OP_READ_OBJ or self.ring is None:
            return None
        copies, data = self.routed.get(proto.oid_vid(request.oid),
                                       (0, False))
        if not copies or not (data or request.oid & proto.VDI_BIT):
            return None
        holders = [node for node in self.ring.holders(request.oid, copies)
                   if node not in self.failed]
        if not holders or gateway in holders:
            # No live holder left: the gateway is the last resort.
            return None
        return holders[0]

    def batches(self, requests, gateway):
        """[(node, its requests)], nodes in the order first needed.

        node None is the gateway. Each batch keeps its requests' order,
        so that a reader's buffers fill as it reads them.
        """
        order = []
        batches = {}
        for request in requests:
            node = self.target(request, gateway)
            if node not in batches:
                batches[node] = []
                order.append(node)
            batches[node].append(request)
        return [(node, batches[node]) for node in order]

    def carried(self, requests, session):
        """requests were sent on session: their answers come from it."""
        for request in requests:
            self._carriers[id(request)] = session

    def carrier(self, request, gateway):
        """The live Connection request was sent on, else gateway.

        request None (a caller draining whatever comes): the gateway.
        """
        if request is None:
            return gateway
        session = self._carriers.get(id(request))
        if session is None or session.sock is None:
            return gateway
        return session

    def settled(self, request):
        """request is done: no answer of it is awaited any more."""
        self._carriers.pop(id(request), None)

    def clear(self):
        """Forget every holder's connection and every carrier."""
        self.connections.clear()
        self._carriers.clear()
