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
"""Moving a transfer between the sheep of a cluster.

Any sheep serves any request as a gateway, so the sheep a transfer
talks to is only where it starts (see ``cluster``).

``FailoverSession`` is an ``exchange.Exchange``, as a connection is. When its
connection fails (``ConnectionLost``: refused, reset, closed, or a
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

Object reads go where a copy is (``route_reads``): which holder each
read goes to is ``routing.ReadRoutes``'s, which holds the vnode ring
over the members (``placement.Ring``); the session sends each read to a
live holder on a connection of its own, and that sheep reads its local
copy. A holder that stalls or fails is treated as failed for the
transfer and its outstanding reads go to the object's other holders.
Everything else (lookups, writes, inode updates) goes to the one
gateway: a write waits on every copy wherever it is sent. With no
placement known (a fake sheep, members without vnodes, a build with
disk vnodes) every request goes to the gateway.

Bounds: at most ``failover_attempts`` failovers per session, gateway
and holders together, none after ``transfer_timeout`` from the first
(``failover_policy.FailoverPolicy``); a node that failed is not tried
again by the same session. Each failover is logged once, as a warning
naming the old node, the new one and the reason.

The nodes to try are ``cluster``'s, the members and who may be
connected to ``membership``'s, the connections given up with requests
in flight ``parking``'s, object placement ``placement``'s.
"""

from oslo_log import log as logging

from glance_store_fastsheep.native import cluster as cluster_mod
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import exchange
from glance_store_fastsheep.native import failover_policy
from glance_store_fastsheep.native import membership
from glance_store_fastsheep.native import parking
from glance_store_fastsheep.native import routing

LOG = logging.getLogger(__name__)


def _of_gateway(attribute):
    """The gateway's attribute, read as a Connection's is."""
    return property(lambda self: getattr(self.session, attribute))


class FailoverSession(exchange.Exchange):
    """A session that moves to another sheep when its connection fails.

    ``session`` is the gateway; ``reads`` (``routing.ReadRoutes``)
    where the reads ``route_reads`` asked to route go, and its
    connections to their holders; ``policy`` the bounds of failing over.
    ``outstanding`` and a bare ``receive_one()`` are the gateway's:
    writes go there.
    """

    def __init__(self, settings, name, first=None, cluster=None):
        self.cluster = cluster or cluster_mod.Cluster(settings, first)
        self.name = name
        self.settings = settings
        self.policy = failover_policy.FailoverPolicy.of(settings)
        self.reads = routing.ReadRoutes(self.cluster.membership,
                                        self.cluster.failed)
        # (lowest, highest) epoch the replies carried: the members
        # changed during the operation when they differ (recovery).
        self.epochs = None
        self.cluster.membership.parking.sweep()
        self.session = self.cluster.connect(name)
        if self.cluster.membership.epoch is None:
            self._ask_members()

    def _ask_members(self):
        """Learn the members, from an entry point only.

        From the gateway if it is one (nothing is in flight on it yet),
        else from an entry point on a connection of their own.
        """
        if self.cluster.membership.is_entry_point(self.session.node,
                                                  self.cluster.resolved):
            try:
                self.cluster.ask_members(self.session)
            except errors.ConnectionLost as exc:
                self._fail_over(exc)
        else:
            self.cluster.refresh(self.name)

    address = _of_gateway('address')
    port = _of_gateway('port')
    sock = _of_gateway('sock')
    outstanding = _of_gateway('outstanding')

    @property
    def failovers(self):
        """How many times this session failed over (``vdi`` compares)."""
        return self.policy.failovers

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
        for route in list(self.reads.connections.values()):
            self._set_aside(route)
        self.reads.clear()

    def _set_aside(self, session):
        """Close session, or park it if a request of it may still land.

        Parked when requests that change a VDI were sent whole and not
        answered (``Parking``), as often as ``policy.park`` allows; past
        that, closed with a warning naming what may still land.
        """
        if session.sock is None:
            return
        vids = self.policy.changed(session)
        if vids is None:
            session.close()
            return
        parked = session.hand_over()
        if not self.policy.park():
            parking.Parked(parked, vids, self.name, 0).give_up(
                'past the %d connections an operation parks' % (
                    self.policy.parked))
            return
        self.cluster.membership.parking.park(
            parked, vids, self.name, self.settings.transfer_timeout)

    # -- routing ------------------------------------------------------------

    def route_reads(self, vid, copies, data=True):
        """Send READ_OBJ of vid's objects to a node holding a copy.

        copies is the VDI's; data False: the inode object only (see
        ``routing.ReadRoutes.route``).
        """
        self.reads.route(vid, copies, data)

    def _dispatch(self, requests):
        """Send each request to its node; failures fail over."""
        for node, batch in self.reads.batches(requests, self.session.node):
            session = (self.session if node is None
                       else self.reads.connections.get(node))
            if session is None:
                try:
                    session = self.cluster.open(node, self.name)
                except errors.Unreachable as exc:
                    self._reroute(node, batch, exc)
                    continue
                self.reads.connections[node] = session
            self.reads.carried(batch, session)
            try:
                session.send(batch)
            except errors.ConnectionLost as exc:
                # send registers the batch first: it is outstanding.
                self._lost(session, exc)

    # -- failing over -----------------------------------------------------

    def _lost(self, session, exc):
        """session's connection failed: move its requests elsewhere."""
        if session is self.session:
            self._fail_over(exc)
            return
        self.reads.connections.pop(session.node, None)
        pending = session.outstanding
        self._set_aside(session)
        self._reroute(session.node, pending, exc)

    def _within_bounds(self, node, exc):
        """node failed: count a failover; raise exc past the bounds."""
        self.cluster.failed.add(node)
        if not self.policy.fail_over():
            LOG.error('Giving up on sheepdog image %s after %d '
                      'failover(s): %s', self.name, self.failovers, exc)
            raise exc

    def _reroute(self, node, pending, exc):
        """A holder failed: resend its reads to other holders."""
        self._within_bounds(node, exc)
        try:
            # Refresh the members from the gateway.
            self.cluster.ask_members(self.session)
        except errors.ConnectionLost as lost:
            self._fail_over(lost)
        self.reads.refresh()
        gateway = self.session.node
        texts = [membership.node_text(self.reads.target(request, gateway)
                                      or gateway) for request in pending]
        LOG.warning('Failing over sheepdog image %s from %s to %s '
                    '(%d request(s) resent): %s', self.name,
                    membership.node_text(node),
                    ', '.join(sorted(set(texts), key=texts.index))
                    or membership.node_text(gateway), len(pending), exc)
        if pending:
            self._dispatch(pending)

    def _fail_over(self, exc, carried=()):
        """Move to the next live gateway and resend what was in flight.

        Raises exc (the failure that ended the last node) when the
        bounds are reached or no node is left.
        """
        old = self.session
        pending = self.policy.resent(old.outstanding, carried)
        # Open while what it carried may still land (see Parking).
        self._set_aside(old)
        self._within_bounds(old.node, exc)
        try:
            new = self.policy.next_gateway(self.cluster, self.name)
        except errors.Unreachable as unreachable:
            LOG.error('No other sheep to fail over to for sheepdog '
                      'image %s: %s', self.name, unreachable)
            raise exc
        self.session = new
        # A holder the gateway moved to is one connection, not two.
        route = self.reads.connections.pop(new.node, None)
        if route is not None:
            pending.extend(route.outstanding)
            self._set_aside(route)
        LOG.warning('Failing over sheepdog image %s from %s to %s '
                    '(%d request(s) resent): %s', self.name,
                    membership.node_text(old.node),
                    membership.node_text(new.node), len(pending), exc)
        try:
            # Refresh the members from a node that answers now.
            self.cluster.ask_members(new)
        except errors.ConnectionLost as again:
            self._fail_over(again, pending)
            return
        self.reads.refresh()
        if pending:
            self._dispatch(pending)

    def _note_epoch(self, epoch):
        lowest, highest = self.epochs or (epoch, epoch)
        self.epochs = (min(lowest, epoch), max(highest, epoch))

    def epoch_moved(self):
        """Whether replies of two epochs reached this session."""
        return self.epochs is not None and self.epochs[0] != self.epochs[1]

    # -- the session interface (exchange.Exchange) -------------------------

    def send(self, requests):
        self._dispatch(list(requests))

    def receive_one(self, waiting=None):
        """One response from the connection waiting travels on.

        Without waiting: the gateway's (writes, drains). A reply of a
        newer epoch than the members' (nodes joined or left) has them
        asked for again, from an entry point, before it is returned.
        """
        while True:
            session = self.reads.carrier(waiting, self.session)
            try:
                answered = session.receive_one()
            except errors.ConnectionLost as exc:
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
                self.reads.refresh()
            return answered

    def follow_up(self, request):
        # A retryable result is resent on the session that answered; if
        # that send fails, the request is outstanding there and _lost
        # resends it: settling again would send it twice.
        session = self.reads.carrier(request, self.session)
        try:
            session.follow_up(request)
        except errors.ConnectionLost as exc:
            self._lost(session, exc)
        if request.response is not None:
            self._note_epoch(request.response.epoch)
        if request.done:
            self.reads.settled(request)
