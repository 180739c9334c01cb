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
"""The members of a cluster, as its entry points name them.

The driver talks only to the entry points and to the members
they named (``Membership``). A location's address is where to start
only when it is one of those (``Membership.knows``, checked by the
store before anything connects); nodes are compared by the addresses
their names resolve to, so a host name and its IP address are one node.
The members are asked for from an entry point only, never from a sheep
a location or a failover led to: a sheep that is no entry point cannot
change where later operations go. They are kept per cluster (one
``Membership`` per set of entry points, shared by every operation and
backend of the process), asked for on the first operation, and again
whenever a reply carries an epoch newer than that of the list: sheep
puts its current epoch in every response it sends a client
(``rsp.epoch = sys->cinfo.epoch`` in ``tx_work``, sheep/request.c of
0.9.5, 1.0.1 and master), and the epoch changes exactly when nodes
join or leave.
"""

from oslo_log import log as logging

from glance_store_fastsheep.native import connection
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import node_list
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import parking
from glance_store_fastsheep.native import proto
from glance_store_fastsheep import nodes

LOG = logging.getLogger(__name__)


def node_text(node):
    """``address:port`` of a node, for messages."""
    return '%s:%s' % (node[0], node[1])


def entry_points(settings, first=None):
    """The nodes to try, in order, without repeats.

    first (a location's node), then the configured entry points
    (``settings.addresses``, the configured sheep first).
    """
    found = []
    for node in [first] + list(settings.addresses):
        if node is not None and node not in found:
            found.append(node)
    return found


class Membership(object):
    """The entry points of one cluster and the members they named.

    One per set of entry points and process (``membership``): every
    operation and every backend configured with them shares what was
    learned. ``members`` is replaced whole, never changed in place, so
    that an operation reading it meanwhile sees one list or the other.
    """

    def __init__(self, entry_points):
        self.entry_points = tuple(entry_points)
        # [node_list.Node] an entry point last named, and the epoch of that
        # answer (None: never asked).
        self.members = ()
        self.epoch = None
        # Every (address, port) the entry points named since the process
        # started: a member that left (killed, replaced) is still where
        # locations may point, and was never anyone else's choice.
        self.named = frozenset()
        # The epoch the last refresh was started for: a sheep whose
        # epoch runs ahead of the entry points' costs one refresh per
        # epoch it reports, not one per reply, and does not keep the
        # next real epoch from asking.
        self.asked = None
        # The SD_SHEEP_PROTO_VER a sheep of the cluster last accepted in
        # an internal request (node list, attributes, recovery state):
        # tried first by the next one, the others after it, so that a
        # sheep upgraded meanwhile is still understood.
        self.sheep_version = None
        # Connections given up with requests that may still land.
        self.parking = parking.Parking()

    def is_entry_point(self, node, cache=None):
        return any(nodes.same_node(node, entry, cache)
                   for entry in self.entry_points)

    def knows(self, node, cache=None):
        """Whether node is an entry point or a node they ever named."""
        return self.is_entry_point(node, cache) or any(
            nodes.same_node(node, member, cache)
            for member in self.named)

    def stale(self, epoch):
        """Whether a reply of epoch calls for asking the members again."""
        if self.epoch is None or epoch <= self.epoch or epoch == self.asked:
            return False
        self.asked = epoch
        return True

    def versions(self):
        """The internal protocol versions to try, the accepted one first."""
        versions = sorted(proto.SHEEP_VERSIONS, reverse=True)
        if self.sheep_version in versions:
            versions.remove(self.sheep_version)
            versions.insert(0, self.sheep_version)
        return versions

    def ask_members(self, session):
        """Ask session's sheep, an entry point, for the members.

        Returns the internal protocol version the sheep accepted (None
        when it accepted none). Best effort: a sheep that refuses the
        request, or a fake that does not know it, leaves the members as
        they were. A lost connection is the caller's (ConnectionLost
        propagates).
        """
        buf = bytearray(proto.NODE_LIST_BUFFER)
        for version in self.versions():
            request = ops.Request(
                proto.OP_GET_NODE_LIST, view=memoryview(buf),
                header_data=lambda req_id, v=version:
                    proto.pack_node_list(req_id, v))
            try:
                answer = session.call_raw(request, retry=False)
            except errors.ConnectionLost:
                raise
            except Exception as exc:
                LOG.debug('No node list from %s: %s', session.where(), exc)
                return None
            if answer.result == proto.VER_MISMATCH:
                continue
            self.sheep_version = version
            if answer.result != proto.SUCCESS:
                LOG.debug('No node list from %s: %s', session.where(),
                          proto.result_text(answer.result))
                return version
            try:
                members = node_list.unpack(
                    buf[:answer.response.data_length],
                    answer.response.nr_nodes)
            except proto.ProtocolError as exc:
                LOG.debug('No node list from %s: %s', session.where(), exc)
                return version
            self.members = tuple(members)
            self.named = self.named | frozenset(
                (member[0], member[1]) for member in members)
            self.epoch = answer.response.epoch
            return version
        return None

    def refresh(self, settings, name, skip=()):
        """Ask the entry points in turn for the members.

        On a connection of this call's own: an operation's may have
        requests in flight. skip: nodes the caller saw fail. Best
        effort: the members stay as they were when no entry point
        answers.
        """
        for node in self.entry_points:
            if node in skip:
                continue
            try:
                session = connection.Connection(
                    node[0], node[1], name, settings.command_timeout,
                    settings.transfer_timeout, settings.stall_timeout)
            except errors.Unreachable as exc:
                LOG.debug('No node list from %s: %s', node_text(node), exc)
                continue
            try:
                self.ask_members(session)
            except errors.ConnectionLost as exc:
                LOG.debug('No node list from %s: %s', node_text(node), exc)
                continue
            finally:
                session.close()
            if self.epoch is not None:
                return


# One Membership per set of entry points: the process's knowledge of
# each cluster it is configured for (not the Settings', which are
# rebuilt on every configure).
MEMBERSHIPS = {}


def of(settings):
    """The Membership of the cluster settings' entry points name."""
    key = tuple(settings.addresses)
    found = MEMBERSHIPS.get(key)
    if found is None:
        found = MEMBERSHIPS.setdefault(key, Membership(key))
    return found
