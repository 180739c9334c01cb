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
"""The sheep of a cluster, and moving a transfer between them.

Sheepdog keeps every object on ``copies`` nodes and any sheep serves any
request as a gateway, so the sheep a transfer talks to is only where it
starts: a location's address, then the configured entry points
(``sheepdog_store_address`` and ``sheepdog_store_addresses``), then the
members the cluster itself names (``GET_NODE_LIST``).

Trust: the driver talks only to the entry points and to the members
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

``FailoverSession`` has a ``Session``'s interface. When its connection
fails (``connection.ConnectionLost``: refused, reset, closed, or a
request unanswered for the stall timeout) it connects to the next
known node and resends every request that was sent and not answered, each
under a new id into its own buffer: a reader's requests land in the
buffers the reader yields from in order, a writer's unacknowledged
object writes and inode updates are written again. Resending is safe
for these: sheep writes a ``CREATE_AND_WRITE_OBJ`` to a temporary file
and renames it, and a ``WRITE_OBJ`` of the inode writes the same bytes
at the same offset. ``NEW_VDI`` and ``DEL_VDI`` are not idempotent;
``vdi`` looks the name up when one of them was resent (``failovers``
changed). Results that sheep answered are never a reason to fail over:
another gateway would answer the same.

Object reads go where a copy is (``route_reads``): a gateway asked
for an object it does not hold forwards the read to a random holder
(``gateway_replication_read``, sheep/gateway.c) and waits on it as long
as sheep's own timeouts let it, so one frozen holder stalls reads sent
to any live gateway. The client computes the holders as sheep does
(``Ring``: the vnode ring over the members, ``oid_to_vnodes``) and
sends each read to a live holder on a connection of its own; that sheep
reads its local copy. A holder that stalls or fails is treated as
failed for the transfer and its outstanding reads go to the object's
other holders. Everything else (lookups, writes, inode updates) goes to
the one gateway: a write waits on every copy wherever it is sent. With
no placement known (a fake sheep, members without vnodes, a build with
disk vnodes) every request goes to the gateway, as before.

Bounds: at most ``failover_attempts`` failovers per session, gateway
and holders together, none after ``transfer_timeout`` from the first; a
node that failed is not tried again by the same session. Each failover
is logged once, as a warning naming the old node, the new one and the
reason.

Parking. A connection given up (a failover, or the end of an operation)
with requests in flight that change a VDI (``Request.mutates``: object
creates and writes, inode writes, attribute sets) is not closed: sheep
would still carry out every one that fully arrived, and the client
would never know when. It is parked (``Parking``, one per cluster,
beside its ``Membership``) under the ids of the VDIs those requests
change and the operation's image name, still open, its requests
replaced by stand-ins the late answers are read into. Whatever removes
a VDI's objects (a failed upload's clean-up, ``vdi.delete``) first
settles the VDI's parked connections: reads each until every request
it carried was answered, or ``transfer_timeout`` passed since it was
parked (the bound after which the native client gives up on a sheep
that answers nothing). A connection its far side ended (EOF, reset)
tells nothing more: what that sheep took whole may still be carried
out (sheep finishes a queued request whatever becomes of the
connection), so it waits for the rest of its bound, unless the sheep
is gone (its port refuses a connection: a killed sheep carries nothing
out). What is still unanswered then is logged as a warning naming the
VDI and each object that may still land, and the connection closed.
A successful upload does not wait (a frozen sheep must not hold it):
it collects the answers already there and closes what they settle.
Every access to the registry closes the entries past their bound, and
an operation parks at most ``failover_attempts`` + 1
connections (one per failover and its last gateway), so parked
connections hold a bounded number of fds for a bounded time.
"""

import bisect
import socket
import threading

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import timeutils

from glance_store_fastsheep import hub_safe
from glance_store_fastsheep.native import connection
from glance_store_fastsheep.native import proto
from glance_store_fastsheep import nodes

LOG = logging.getLogger(__name__)


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
        # [proto.Node] an entry point last named, and the epoch of that
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
        # Connections given up with requests that may still land.
        self.parking = Parking()

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

    def learn(self, session):
        """Ask session's sheep, an entry point, for the members.

        Returns the internal protocol version the sheep accepted (None
        when it accepted none). Best effort: a sheep that refuses the
        request, or a fake that does not know it, leaves the members as
        they were. A lost connection is the caller's (ConnectionLost
        propagates).
        """
        buf = bytearray(proto.NODE_LIST_BUFFER)
        for version in sorted(proto.SHEEP_VERSIONS, reverse=True):
            request = connection.Request(
                proto.OP_GET_NODE_LIST, view=memoryview(buf),
                header_data=lambda req_id, v=version:
                    proto.pack_node_list(req_id, v))
            try:
                answer = session.call_raw(request, retry=False)
            except connection.ConnectionLost:
                raise
            except Exception as exc:
                LOG.debug('No node list from %s: %s', session.where(), exc)
                return None
            if answer.result == proto.VER_MISMATCH:
                continue
            if answer.result != proto.SUCCESS:
                LOG.debug('No node list from %s: %s', session.where(),
                          proto.result_text(answer.result))
                return version
            try:
                members = proto.unpack_node_list(
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
                session = connection.Session(
                    node[0], node[1], name, settings.command_timeout,
                    settings.transfer_timeout, settings.stall_timeout)
            except connection.Unreachable as exc:
                LOG.debug('No node list from %s: %s', _text(node), exc)
                continue
            try:
                self.learn(session)
            except connection.ConnectionLost as exc:
                LOG.debug('No node list from %s: %s', _text(node), exc)
                continue
            finally:
                session.close()
            if self.epoch is not None:
                return


# One Membership per set of entry points: the process's knowledge of
# each cluster it is configured for (not the Settings', which are
# rebuilt on every configure).
MEMBERSHIPS = {}


def membership(settings):
    """The Membership of the cluster settings' entry points name."""
    key = tuple(settings.addresses)
    found = MEMBERSHIPS.get(key)
    if found is None:
        found = MEMBERSHIPS.setdefault(key, Membership(key))
    return found


# Seconds a probe of a cut connection's sheep waits for its accept.
PROBE_TIMEOUT = 2.0


class Parked(object):
    """One parked connection: its Session, what it changes, its bound."""

    def __init__(self, session, vids, name, bound):
        self.session = session
        self.vids = frozenset(vids)
        self.name = name
        self.bound = bound
        self.deadline = timeutils.now() + bound
        self.gone = None

    def sheep_gone(self):
        """Whether the sheep of a cut connection refuses connections.

        A sheep that is gone (killed: its port refuses) carries nothing
        out any more; one that accepts may still be doing what it took.
        Asked once.
        """
        if self.gone is None:
            node = self.session.node
            try:
                probe = socket.create_connection(node, PROBE_TIMEOUT)
            except (socket.error, OSError):
                self.gone = True
            else:
                probe.close()
                self.gone = False
        return self.gone

    def concerns(self, vid, name):
        return ((vid is None and name is None) or vid in self.vids or
                (name is not None and name == self.name))

    def give_up(self, why):
        """Close, warning of every request that may still land."""
        left = self.session.unanswered()
        self.session.close()
        if left:
            LOG.warning(
                'Sheepdog image %s (vdi %s): %d request(s) left '
                'unanswered by %s %s and may still be carried out by that '
                'sheep, leaving what no inode or marker of a deleted image '
                'accounts for: %s', self.name,
                ', '.join('%x' % vid for vid in sorted(self.vids)) or
                'not known yet',
                len(left), self.session.where(), why,
                '; '.join(request.describe() for request in left))


class Parking(object):
    """The parked connections of one cluster, by VDI id and image name.

    Thread- and eventlet-safe: the lock guards only the list (taken or
    put back whole), never a read, which runs on the entries a caller
    took out: the caller alone reads them.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._entries = []

    def __len__(self):
        with self._lock:
            return len(self._entries)

    def park(self, session, vids, name, bound):
        """Keep session open for bound seconds under vids and name."""
        entry = Parked(session, vids, name, bound)
        with self._lock:
            expired = self._expired()
            self._entries.append(entry)
        self._end(expired)

    def _expired(self):
        """Take the entries past their bound out (under the lock)."""
        now = timeutils.now()
        expired = [entry for entry in self._entries if entry.deadline <= now]
        if expired:
            self._entries = [entry for entry in self._entries
                             if entry.deadline > now]
        return expired

    @staticmethod
    def _end(expired):
        for entry in expired:
            # What arrived meanwhile counts.
            entry.session.read_late(0)
            entry.give_up('in the %ss since it was given up' % entry.bound)

    def settle(self, vid=None, name=None, wait=True):
        """Settle the connections parked for vid or name (None: all).

        wait: read each until every request it carried was answered, its
        sheep closed it, or its bound passed, then close it (warning of
        what is left). Without wait only the answers already there are
        read; an entry they settle is closed, the others stay parked.
        Returns the number of requests given up on.
        """
        with self._lock:
            expired = self._expired()
            taken = [entry for entry in self._entries
                     if entry.concerns(vid, name)]
            self._entries = [entry for entry in self._entries
                             if not entry.concerns(vid, name)]
        self._end(expired)
        given_up = sum(len(entry.session.unanswered()) for entry in expired)
        kept = []
        for entry in taken:
            session = entry.session
            left = session.read_late(
                entry.deadline if wait else timeutils.now())
            if left and session.cut and entry.sheep_gone():
                left = []
            if not left:
                session.close()
            elif session.sock is None and not session.cut:
                given_up += len(left)
                entry.give_up('in an answer that could not be read')
            elif wait:
                if session.cut:
                    # Nothing to read: what that sheep took gets its
                    # bound to land before anything is removed.
                    hub_safe.sleep(max(0.0, entry.deadline -
                                       timeutils.now()))
                given_up += len(left)
                entry.give_up('in the %ss since it was given up'
                              % entry.bound)
            else:
                kept.append(entry)
        if kept:
            with self._lock:
                self._entries.extend(kept)
        return given_up

    def sweep(self):
        """Close entries past their bound and those already answered."""
        if len(self):
            self.settle(wait=False)

    def clear(self):
        """Close every entry now, warning of what may still land."""
        with self._lock:
            entries, self._entries = self._entries, []
        for entry in entries:
            entry.session.read_late(0)
            entry.give_up('when the registry was cleared')


def parking_of(session):
    """The Parking of session's cluster (None for a plain Session)."""
    found = getattr(session, 'cluster', None)
    if found is None:
        return None
    return found.membership.parking


class Refused(exceptions.BackendException):
    """A location names a sheep this store does not trust."""


class Cluster(object):
    """The nodes one operation may use, and which of them failed."""

    def __init__(self, settings, first=None):
        self.settings = settings
        self.membership = membership(settings)
        # Host names resolved once per operation.
        self.resolved = {}
        self.failed = set()
        # SD_SHEEP_PROTO_VER of the cluster once a sheep accepted an
        # internal request (learn, vdi's attribute requests).
        self.sheep_version = None
        if first is not None and not self.admits(first):
            raise Refused(
                'sheep at %s is neither an entry point of this store '
                '(sheepdog_store_address, sheepdog_store_addresses) nor a '
                'member they name: not connecting to it' % _text(first))
        self.nodes = []
        for node in entry_points(settings, first) + list(
                self.membership.members):
            self._add(node)

    def admits(self, node):
        """Whether this driver may connect to node.

        Only an entry point or a member the entry points named. Before
        the members were ever learned, the entry points (they alone) are
        asked first; a node neither names is refused without any
        connection to it.
        """
        if self.membership.knows(node, self.resolved):
            return True
        if self.membership.epoch is None:
            self.membership.refresh(self.settings, 'the member list')
            return self.membership.knows(node, self.resolved)
        return False

    def _add(self, node):
        if not any(nodes.same_node(node, known, self.resolved)
                   for known in self.nodes):
            self.nodes.append(node)

    def open(self, node, name, stall_timeout=None):
        """A Session to node (Unreachable when it refuses).

        stall_timeout: the longest a request waits for its answer (the
        configured stall timeout unless given).
        """
        settings = self.settings
        if stall_timeout is None:
            stall_timeout = settings.stall_timeout
        return connection.Session(node[0], node[1], name,
                                  settings.command_timeout,
                                  settings.transfer_timeout,
                                  stall_timeout)

    def connect(self, name, skip_failed=True, stall_timeout=None):
        """A Session to the first node that accepts a connection.

        Unreachable when none does: the node's own error if only one
        was tried, else one naming every node tried.
        """
        errors = []
        for node in list(self.nodes):
            if skip_failed and node in self.failed:
                continue
            try:
                return self.open(node, name, stall_timeout)
            except connection.Unreachable as exc:
                self.failed.add(node)
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        if not errors:
            raise connection.Unreachable(
                'no sheep left to connect to for %s (failed: %s)' % (
                    name, ', '.join(_text(node) for node in self.nodes)))
        raise connection.Unreachable(
            'no sheep of the cluster accepts a connection for %s: %s' % (
                name, '; '.join(str(exc) for exc in errors)))

    def learn(self, session):
        """Learn the members from session's sheep if it is an entry point.

        Any other sheep (a member, or where a location pointed) is never
        asked: what it would name is not trusted. With nothing in flight
        on session, the entry point is asked there; the members it names
        join the nodes to try. A lost connection is the caller's
        (ConnectionLost propagates).
        """
        if not self.membership.is_entry_point(session.node, self.resolved):
            return
        version = self.membership.learn(session)
        if version is not None:
            self.sheep_version = version
        self._add_members()

    def refresh(self, name, skip=None):
        """Ask an entry point for the members on a connection of its own.

        skip: the nodes not to ask (by default those that failed this
        operation). Returns whether nodes to try were added.
        """
        known = len(self.nodes)
        self.membership.refresh(self.settings, name,
                                self.failed if skip is None else skip)
        self._add_members()
        return len(self.nodes) > known

    def _add_members(self):
        for node in self.membership.members:
            self._add(node)


def _text(node):
    return '%s:%s' % (node[0], node[1])


# 64-bit FNV-1a, as sheep hashes nodes and objects (include/sheepdog_proto.h
# of 0.9.5, 1.0.1 and master alike).
FNV1A_64_INIT = 0xcbf29ce484222325
FNV_64_PRIME = 0x100000001b3
_MASK = (1 << 64) - 1


def fnv_64a(data, hval=FNV1A_64_INIT):
    """FNV-1a of a byte string, continuing from hval."""
    for byte in bytearray(data):
        hval = ((hval ^ byte) * FNV_64_PRIME) & _MASK
    return hval


def fnv_64a_64(value, hval):
    """FNV-1a of value's 8 little-endian bytes (sheep's fnv_64a_64)."""
    for shift in range(0, 64, 8):
        hval = ((hval ^ ((value >> shift) & 0xff)) * FNV_64_PRIME) & _MASK
    return hval


def hash_next(hval):
    """The next vnode's hash after hval (sd_hash_next)."""
    return fnv_64a_64(hval, hval)


def oid_hash(oid):
    """Where an object id falls on the ring (sd_hash_oid)."""
    return hash_next(fnv_64a_64(oid, FNV1A_64_INIT))


def node_hash(node_id):
    """The seed of a node's vnode hashes: sd_hash of address and port."""
    return hash_next(fnv_64a(node_id))


# The most vnodes a Ring is built of. Sheep gives each node 1 to 65535
# (``sheep -V``, 16 bits in struct sd_node) and a cluster up to
# SD_MAX_NODES members (internal_proto.h), so one GET_NODE_LIST answer
# can name 400 million: minutes of hashing and tens of GiB here. With
# automatic vnodes (the default) sheep gives a node SD_DEFAULT_VNODES
# (128) weighted by its free space, about 128 a node in all
# (recalculate_vnodes, sheep/group.c): this bound is a 1024-node
# cluster's ring, built in well under a second. A larger one is not
# built: reads then go through the gateway, as without a placement.
MAX_RING_VNODES = 128 * 1024
# The vnode counts over MAX_RING_VNODES already warned of.
_TOO_LARGE = set()


class Ring(object):
    """The vnode ring sheep places objects on, built from the members.

    Each member contributes ``nr_vnodes`` points, the successive
    ``hash_next`` of its ``node_hash`` (node_to_vnodes); an object's
    first copy is on the first point at or after its ``oid_hash``,
    wrapping round, and each further copy on the next point of a zone
    not used yet (oid_to_vnodes, include/sheep.h). Sheep builds the
    ring from GET_NODE_LIST's own entries, whose nr_vnodes already has
    any automatic weighting applied.
    """

    def __init__(self, nodes):
        points = []
        for node in nodes:
            hval = node_hash(node.node_id)
            for _count in range(node.nr_vnodes):
                hval = hash_next(hval)
                points.append((hval, node.zone, node))
        points.sort(key=lambda point: point[0])
        self.hashes = [point[0] for point in points]
        self.points = [(point[2], point[1]) for point in points]
        # Gateway-only members (no vnodes) add no zone (sheep/group.c).
        self.nr_zones = len(set(node.zone for node in nodes
                                if node.nr_vnodes))

    @classmethod
    def of(cls, nodes):
        """The ring of nodes, or None where placement is not known.

        Unknown: no members, an entry without what placement needs (a
        fake sheep), a build with disk vnodes (placed by disk), or more
        vnodes than MAX_RING_VNODES.
        """
        if not nodes or any(getattr(node, 'node_id', None) is None or
                            node.disks for node in nodes):
            return None
        total = sum(node.nr_vnodes for node in nodes)
        if not total:
            return None
        if total > MAX_RING_VNODES:
            # Once per size of member list, not once per transfer.
            log = LOG.debug if total in _TOO_LARGE else LOG.warning
            _TOO_LARGE.add(total)
            log('The sheepdog members name %d vnodes on %d nodes, more '
                'than the %d this client places objects over: reads go '
                'through the gateway', total, len(nodes), MAX_RING_VNODES)
            return None
        return cls(nodes)

    def holders(self, oid, copies):
        """The nodes holding oid's copies, first copy first.

        copies is the VDI's; sheep keeps no more than there are zones.
        """
        copies = min(copies, self.nr_zones)
        count = len(self.points)
        first = bisect.bisect_left(self.hashes, oid_hash(oid)) % count
        node, zone = self.points[first]
        nodes, zones = [node], set([zone])
        index = first
        while len(nodes) < copies:
            index = (index + 1) % count
            if index == first:
                break
            node, zone = self.points[index]
            if zone not in zones:
                nodes.append(node)
                zones.add(zone)
        return nodes


class FailoverSession(connection.Calls):
    """A Session that moves to another sheep when its connection fails.

    ``session`` is the gateway; ``routes`` the connections to nodes
    holding the objects ``route_reads`` asked to route. ``outstanding``
    and a bare ``receive_one()`` are the gateway's: writes go there.
    """

    def __init__(self, settings, name, first=None, cluster=None):
        self.cluster = cluster or Cluster(settings, first)
        self.name = name
        self.settings = settings
        self.failovers = 0
        self.deadline = None
        self.routes = {}
        self.ring = None
        self._members = None
        # vid -> (copies, data too) of the VDIs whose reads are routed.
        self._routed = {}
        # id(request) -> the Session the request was last sent on.
        self._carriers = {}
        # Connections this session parked (see Parking).
        self.parked = 0
        # (lowest, highest) epoch the replies carried: the members
        # changed during the operation when they differ (recovery).
        self.epochs = None
        self.cluster.membership.parking.sweep()
        self.session = self.cluster.connect(name)
        if self.cluster.membership.epoch is None:
            self._learn()

    def _learn(self):
        """Learn the members, from an entry point only.

        From the gateway if it is one (nothing is in flight on it yet),
        else from an entry point on a connection of their own.
        """
        if self.cluster.membership.is_entry_point(self.session.node,
                                                  self.cluster.resolved):
            try:
                self.cluster.learn(self.session)
            except connection.ConnectionLost as exc:
                self._fail_over(exc)
        else:
            self.cluster.refresh(self.name)

    # The Session attributes callers read.
    @property
    def address(self):
        return self.session.address

    @property
    def port(self):
        return self.session.port

    @property
    def sock(self):
        return self.session.sock

    @property
    def outstanding(self):
        return self.session.outstanding

    def where(self):
        return self.session.where()

    def close(self, park=True):
        """Close every connection; park those with changes in flight.

        park False: close them all, for a stream that can no longer be
        read (a ProtocolError): its late answers could not be either.
        """
        if park:
            self._set_aside(self.session)
        else:
            self.session.close()
        for route in list(self.routes.values()):
            self._set_aside(route)
        self.routes.clear()
        self._carriers.clear()

    def _set_aside(self, session):
        """Close session, or park it if a request of it may still land.

        Parked when requests that change a VDI were sent whole and not
        answered (``Parking``), at most failover_attempts + 1 times per
        operation (each failover's gateway and the last one); past
        that, closed with a warning naming what may still land.
        """
        if session.sock is None:
            return
        mutating = [request for request in session.unanswered()
                    if request.mutates()]
        if not mutating or session.garbled:
            session.close()
            return
        vids = set(request.vdi_id() for request in mutating)
        vids.discard(None)
        parked = session.hand_over()
        if self.parked > self.settings.failover_attempts:
            Parked(parked, vids, self.name, 0).give_up(
                'past the %d connections an operation parks' % (
                    self.parked))
            return
        self.parked += 1
        self.cluster.membership.parking.park(
            parked, vids, self.name, self.settings.transfer_timeout)

    # -- routing ------------------------------------------------------------

    def route_reads(self, vid, copies, data=True):
        """Send READ_OBJ of vid's objects to a node holding a copy.

        copies is the VDI's. The inode object always; the data objects
        only with data: not those of an erasure-coded VDI, of which a
        node holds a strip and only a gateway rebuilds the data. Without
        a known placement, or copies (0), this does nothing.

        The ring is the members' as last learned: a reply whose epoch
        is newer than theirs made ``receive_one`` ask for them again.
        """
        self._refresh_ring()
        if self.ring is not None and copies:
            self._routed[vid] = (copies, data)

    def _refresh_ring(self):
        members = self.cluster.membership.members
        if members is not self._members:
            self._members = members
            self.ring = Ring.of(members)

    def _target(self, request):
        """The node request is to go to; None for the gateway."""
        if request.opcode != proto.OP_READ_OBJ or self.ring is None:
            return None
        copies, data = self._routed.get(proto.oid_vid(request.oid),
                                        (0, False))
        if not copies or not (data or request.oid & proto.VDI_BIT):
            return None
        failed = self.cluster.failed
        holders = [node for node in self.ring.holders(request.oid, copies)
                   if node not in failed]
        if not holders or self.session.node in holders:
            # No live holder left: the gateway is the last resort.
            return None
        return holders[0]

    def _carrier(self, request):
        """The live Session request was sent on (else the gateway)."""
        if request is None:
            return self.session
        session = self._carriers.get(id(request))
        if session is None or session.sock is None:
            return self.session
        return session

    def _dispatch(self, requests):
        """Send each request to its node; failures fail over."""
        order = []
        batches = {}
        for request in requests:
            node = self._target(request)
            if node not in batches:
                batches[node] = []
                order.append(node)
            batches[node].append(request)
        for node in order:
            batch = batches[node]
            if node is None:
                session = self.session
            else:
                session = self.routes.get(node)
            if session is None:
                try:
                    session = self.cluster.open(node, self.name)
                except connection.Unreachable as exc:
                    self._reroute(node, batch, exc)
                    continue
                self.routes[node] = session
            for request in batch:
                self._carriers[id(request)] = session
            try:
                session.send(batch)
            except connection.ConnectionLost as exc:
                # send registers the batch first: it is outstanding.
                self._lost(session, exc)

    # -- failing over -----------------------------------------------------

    def _lost(self, session, exc):
        """session's connection failed: move its requests elsewhere."""
        if session is self.session:
            self._fail_over(exc)
            return
        self.routes.pop(session.node, None)
        pending = session.outstanding
        self._set_aside(session)
        self._reroute(session.node, pending, exc)

    def _within_bounds(self, exc):
        """Count a failover; raise exc when the bounds are reached."""
        now = timeutils.now()
        if self.deadline is None:
            self.deadline = now + self.settings.transfer_timeout
        if (self.failovers >= self.settings.failover_attempts or
                now >= self.deadline):
            LOG.error('Giving up on sheepdog image %s after %d '
                      'failover(s): %s', self.name, self.failovers, exc)
            raise exc
        self.failovers += 1

    def _reroute(self, node, pending, exc):
        """A holder failed: resend its reads to other holders."""
        self.cluster.failed.add(node)
        self._within_bounds(exc)
        try:
            # Refresh the members from the gateway.
            self.cluster.learn(self.session)
        except connection.ConnectionLost as lost:
            self._fail_over(lost)
        self._refresh_ring()
        targets = []
        for request in pending:
            target = _text(self._target(request) or self.session.node)
            if target not in targets:
                targets.append(target)
        LOG.warning('Failing over sheepdog image %s from %s to %s '
                    '(%d request(s) resent): %s', self.name, _text(node),
                    ', '.join(targets) or _text(self.session.node),
                    len(pending), exc)
        if pending:
            self._dispatch(pending)

    def _fail_over(self, exc, carried=()):
        """Move to the next live gateway and resend what was in flight.

        Raises exc (the failure that ended the last node) when the
        bounds are reached or no node is left.
        """
        old = self.session
        # A node-list request of learn() is not the caller's: not resent.
        pending = list(carried) + [
            request for request in old.outstanding
            if request.opcode != proto.OP_GET_NODE_LIST]
        # Open while what it carried may still land (see Parking).
        self._set_aside(old)
        self.cluster.failed.add(old.node)
        self._within_bounds(exc)
        try:
            new = self.cluster.connect(self.name)
        except connection.Unreachable as unreachable:
            # No node left that this operation knows: members may have
            # joined since they were learned, with no reply to tell yet.
            # The entry points are asked, failed ones included (a reset
            # is not a death), once per failover.
            new = None
            if self.cluster.refresh(self.name, skip=()):
                try:
                    new = self.cluster.connect(self.name)
                except connection.Unreachable as again:
                    unreachable = again
            if new is None:
                LOG.error('No other sheep to fail over to for sheepdog '
                          'image %s: %s', self.name, unreachable)
                raise exc
        self.session = new
        # A holder the gateway moved to is one connection, not two.
        route = self.routes.pop(new.node, None)
        if route is not None:
            pending.extend(route.outstanding)
            self._set_aside(route)
        LOG.warning('Failing over sheepdog image %s from %s to %s '
                    '(%d request(s) resent): %s', self.name,
                    _text(old.node), _text(new.node), len(pending), exc)
        try:
            # Refresh the members from a node that answers now.
            self.cluster.learn(new)
        except connection.ConnectionLost as again:
            self._fail_over(again, pending)
            return
        self._refresh_ring()
        if pending:
            self._dispatch(pending)

    def _note_epoch(self, epoch):
        if self.epochs is None:
            self.epochs = (epoch, epoch)
        else:
            self.epochs = (min(self.epochs[0], epoch),
                           max(self.epochs[1], epoch))

    def epoch_moved(self):
        """Whether replies of two epochs reached this session."""
        return self.epochs is not None and self.epochs[0] != self.epochs[1]

    # -- the Session interface ----------------------------------------------

    def send(self, requests):
        self._dispatch(list(requests))

    def receive_one(self, waiting=None):
        """One response from the connection waiting travels on.

        Without waiting: the gateway's (writes, drains). A reply of a
        newer epoch than the members' (nodes joined or left) has them
        asked for again, from an entry point, before it is returned.
        """
        while True:
            session = self._carrier(waiting)
            try:
                answered = session.receive_one()
            except connection.ConnectionLost as exc:
                self._lost(session, exc)
                continue
            response = answered.response
            if response is not None:
                self._note_epoch(response.epoch)
            if response is not None and self.cluster.membership.stale(
                    response.epoch):
                LOG.info('Sheepdog epoch %d answered by %s: asking the '
                         'entry points for the members again',
                         response.epoch, session.where())
                self.cluster.refresh(self.name)
                self._refresh_ring()
            return answered

    def settle(self, request):
        # A retryable result is resent on the session that answered; if
        # that send fails, the request is outstanding there and _lost
        # resends it: settling again would send it twice.
        session = self._carrier(request)
        try:
            session.settle(request)
        except connection.ConnectionLost as exc:
            self._lost(session, exc)
        if request.response is not None:
            self._note_epoch(request.response.epoch)
        if request.done:
            self._carriers.pop(id(request), None)
