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
(``sheepdog_store_addresses``), then the members the cluster itself
names (``GET_NODE_LIST``). The members are asked for once per store
(kept in ``settings.members``: one request on the first operation) and
again on every failover, from the node the operation moved to, so that
the list follows nodes joining and leaving.

``FailoverSession`` has a ``Session``'s interface. When its connection
fails (``connection.ConnectionLost``: refused, reset, closed, or a
request unanswered for the stall timeout) it connects to the next
member and resends every request that was sent and not answered, each
under a new id into its own buffer: a reader's requests land in the
buffers the reader yields from in order, a writer's unacknowledged
object writes and inode updates are written again. Resending is safe
for these: sheep writes a ``CREATE_AND_WRITE_OBJ`` to a temporary file
and renames it, and a ``WRITE_OBJ`` of the inode writes the same bytes
at the same offset. ``NEW_VDI`` and ``DEL_VDI`` are not idempotent;
``vdi`` looks the name up when one of them was resent (``failovers``
changed). Results that sheep answered are never a reason to fail over:
another gateway would answer the same.

Bounds: at most ``failover_attempts`` failovers per session, none after
``transfer_timeout`` from the first; a node that failed is not tried
again by the same session. Each failover is logged once, as a warning
naming the old node, the new one and the reason.
"""

from oslo_log import log as logging
from oslo_utils import timeutils

from glance_store_fastsheep.native import connection
from glance_store_fastsheep.native import proto

LOG = logging.getLogger(__name__)


def entry_points(settings, first=None):
    """The nodes to try, in order, without repeats.

    first (a location's node), then the configured entry points
    (``settings.addresses``, the configured sheep first).
    """
    nodes = []
    for node in [first] + list(settings.addresses):
        if node is not None and node not in nodes:
            nodes.append(node)
    return nodes


class Cluster(object):
    """The nodes one operation may use, and which of them failed."""

    def __init__(self, settings, first=None):
        self.settings = settings
        self.nodes = entry_points(settings, first)
        for node in settings.members:
            if node not in self.nodes:
                self.nodes.append(node)
        self.failed = set()
        # SD_SHEEP_PROTO_VER of the cluster once a sheep accepted an
        # internal request (learn, vdi's attribute requests).
        self.sheep_version = None

    def _session(self, node, name):
        settings = self.settings
        return connection.Session(node[0], node[1], name,
                                  settings.command_timeout,
                                  settings.transfer_timeout,
                                  settings.stall_timeout)

    def connect(self, name, skip_failed=True):
        """A Session to the first node that accepts a connection.

        Unreachable when none does: the node's own error if only one
        was tried, else one naming every node tried.
        """
        errors = []
        for node in list(self.nodes):
            if skip_failed and node in self.failed:
                continue
            try:
                return self._session(node, name)
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
        """Add the members session's sheep names to the nodes to try.

        Best effort: a sheep that refuses the request, or a fake that
        does not know it, leaves the list as it was. A lost connection
        is the caller's (ConnectionLost propagates).
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
                return
            if answer.result == proto.VER_MISMATCH:
                continue
            self.sheep_version = version
            if answer.result != proto.SUCCESS:
                LOG.debug('No node list from %s: %s', session.where(),
                          proto.result_text(answer.result))
                return
            try:
                members = proto.unpack_node_list(
                    buf[:answer.response.data_length],
                    answer.response.nr_nodes)
            except proto.ProtocolError as exc:
                LOG.debug('No node list from %s: %s', session.where(), exc)
                return
            for node in members:
                if node not in self.nodes:
                    self.nodes.append(node)
            # Replaced whole: other operations read it meanwhile.
            self.settings.members = members
            return


def _text(node):
    return '%s:%s' % node


class FailoverSession(object):
    """A Session that moves to another sheep when its connection fails."""

    def __init__(self, settings, name, first=None, cluster=None):
        self.cluster = cluster or Cluster(settings, first)
        self.name = name
        self.settings = settings
        self.failovers = 0
        self.deadline = None
        self.session = self.cluster.connect(name)
        if not settings.members:
            try:
                self.cluster.learn(self.session)
            except connection.ConnectionLost as exc:
                self._fail_over(exc)

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

    def close(self):
        self.session.close()

    # -- failing over -----------------------------------------------------

    def _fail_over(self, exc):
        """Move to the next live node and resend what was in flight.

        Raises exc (the failure that ended the last node) when the
        bounds are reached or no node is left.
        """
        while True:
            old = self.session
            pending = old.outstanding
            old.close()
            self.cluster.failed.add(old.node)
            now = timeutils.now()
            if self.deadline is None:
                self.deadline = now + self.settings.transfer_timeout
            if (self.failovers >= self.settings.failover_attempts or
                    now >= self.deadline):
                LOG.error('Giving up on sheepdog image %s after %d '
                          'failover(s): %s', self.name, self.failovers, exc)
                raise exc
            try:
                new = self.cluster.connect(self.name)
            except connection.Unreachable as unreachable:
                LOG.error('No other sheep to fail over to for sheepdog '
                          'image %s: %s', self.name, unreachable)
                raise exc
            self.failovers += 1
            self.session = new
            LOG.warning('Failing over sheepdog image %s from %s to %s '
                        '(%d request(s) resent): %s', self.name,
                        _text(old.node), _text(new.node), len(pending),
                        exc)
            try:
                # Refresh the members from a node that answers now.
                self.cluster.learn(new)
                if pending:
                    new.send(pending)
                return
            except connection.ConnectionLost as again:
                # The new node failed too: its own outstanding now holds
                # the pending requests; go on with the next.
                exc = again

    def _retrying(self, operation, *args):
        while True:
            try:
                return operation(*args)
            except connection.ConnectionLost as exc:
                self._fail_over(exc)

    # -- the Session interface ----------------------------------------------

    def send(self, requests):
        requests = list(requests)
        try:
            self.session.send(requests)
        except connection.ConnectionLost as exc:
            # Every request is outstanding on the lost session (send
            # registers a batch first): _fail_over resends them all.
            self._fail_over(exc)

    def receive_one(self):
        return self._retrying(lambda: self.session.receive_one())

    def settle(self, request):
        # A retryable result is resent on the current session; if that
        # send fails, the request is outstanding there and _fail_over
        # resends it: settling again would send it twice.
        try:
            self.session.settle(request)
        except connection.ConnectionLost as exc:
            self._fail_over(exc)

    def complete(self, request):
        while not request.done:
            self.settle(self.receive_one())

    def call(self, request):
        self.send([request])
        self.complete(request)
        return request

    def call_raw(self, request, retry=True):
        self.send([request])
        while True:
            answered = self.receive_one()
            if answered is request and (
                    not retry or request.result == proto.SUCCESS or
                    request.result not in proto.RETRYABLE):
                request.done = True
                return request
            self.settle(answered)
