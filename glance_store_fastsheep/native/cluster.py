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
"""The sheep one operation may use, and which of them failed.

Sheepdog keeps every object on ``copies`` nodes and any sheep serves any
request as a gateway, so the sheep a transfer talks to is only where it
starts: a location's address, then the configured entry points
(``sheepdog_store_address`` and ``sheepdog_store_addresses``), then the
members the cluster itself names (``GET_NODE_LIST``). A ``Cluster``
holds them in that order for one operation, refuses a node it may not
connect to, and opens connections; moving a transfer between them is
``failover``'s. The members and who may be connected to are
``membership``'s.
"""

from glance_store import exceptions

from glance_store_fastsheep.native import connection
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import membership
from glance_store_fastsheep import nodes


class Refused(exceptions.BackendException):
    """A location names a sheep this store does not trust."""


class Cluster(object):
    """The nodes one operation may use, and which of them failed."""

    def __init__(self, settings, first=None):
        self.settings = settings
        self.membership = membership.of(settings)
        # Host names resolved once per operation.
        self.resolved = {}
        self.failed = set()
        if first is not None and not self.admits(first):
            raise Refused(
                'sheep at %s is neither an entry point of this store '
                '(sheepdog_store_address, sheepdog_store_addresses) nor a '
                'member they name: not connecting to it'
                % membership.node_text(first))
        self.nodes = []
        for node in membership.entry_points(settings, first) + list(
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
        """A Connection to node (Unreachable when it refuses).

        stall_timeout: the longest a request waits for its answer (the
        configured stall timeout unless given).
        """
        settings = self.settings
        if stall_timeout is None:
            stall_timeout = settings.stall_timeout
        return connection.Connection(node[0], node[1], name,
                                     settings.command_timeout,
                                     settings.transfer_timeout,
                                     stall_timeout)

    def connect(self, name, skip_failed=True, stall_timeout=None):
        """A Connection to the first node that accepts one.

        Unreachable when none does: the node's own error if only one
        was tried, else one naming every node tried.
        """
        failures = []
        for node in list(self.nodes):
            if skip_failed and node in self.failed:
                continue
            try:
                return self.open(node, name, stall_timeout)
            except errors.Unreachable as exc:
                self.failed.add(node)
                failures.append(exc)
        if len(failures) == 1:
            raise failures[0]
        if not failures:
            raise errors.Unreachable(
                'no sheep left to connect to for %s (failed: %s)' % (
                    name, ', '.join(membership.node_text(node)
                                    for node in self.nodes)))
        raise errors.Unreachable(
            'no sheep of the cluster accepts a connection for %s: %s' % (
                name, '; '.join(str(exc) for exc in failures)))

    def ask_members(self, session):
        """Learn the members from session's sheep if it is an entry point.

        Any other sheep (a member, or where a location pointed) is never
        asked: what it would name is not trusted. With nothing in flight
        on session, the entry point is asked there; the members it names
        join the nodes to try. A lost connection is the caller's
        (ConnectionLost propagates).
        """
        if not self.membership.is_entry_point(session.node, self.resolved):
            return
        self.membership.ask_members(session)
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
