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
"""How far a session fails over, and what it sends again when it does.

Apart from the session that moves, as ``retry.Retry`` is apart from the
connection that resends: ``failover.FailoverSession`` asks
``FailoverPolicy`` whether one more failover is in bounds, which sheep
is the next gateway, which of a lost gateway's requests go to it, and
whether a connection set aside is parked (what it may still change,
and whether one more may be). Deadlines are ``timeutils.now()`` values
(monotonic).
"""

from oslo_utils import timeutils

from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import given_up
from glance_store_fastsheep.native import proto


class FailoverPolicy(object):
    """The bounds of one session's failovers.

    At most attempts failovers, gateway and holders together, none
    after timeout seconds from the first; at most attempts + 1
    connections parked (each failover's gateway and the last one).
    """

    def __init__(self, attempts, timeout):
        self.attempts = attempts
        self.timeout = timeout
        self.failovers = 0
        self.deadline = None
        self.parked = 0

    @classmethod
    def of(cls, settings):
        """The policy of settings' failover_attempts, transfer_timeout."""
        return cls(settings.failover_attempts, settings.transfer_timeout)

    def fail_over(self):
        """Count one more failover; False when the bounds are reached.

        The deadline starts at the first failover, not at the session's
        start: a long transfer that never failed still gets the whole
        timeout to move.
        """
        now = timeutils.now()
        if self.deadline is None:
            self.deadline = now + self.timeout
        if self.failovers >= self.attempts or now >= self.deadline:
            return False
        self.failovers += 1
        return True

    @staticmethod
    def next_gateway(cluster, name):
        """A Connection to the gateway a lost one's requests go to.

        cluster's next node not failed yet; with none left, members may
        have joined since they were learned, with no reply to tell yet:
        the entry points are asked, failed ones included (a reset is not
        a death), once per failover, and their members tried. Raises
        the last ``Unreachable`` when no node accepts.
        """
        try:
            return cluster.connect(name)
        except errors.Unreachable as unreachable:
            if not cluster.refresh(name, skip=()):
                raise unreachable
        return cluster.connect(name)

    @staticmethod
    def changed(session):
        """The VDIs a set-aside session's requests may still change.

        A set of vdi ids (empty when none is known) if requests that
        change a VDI were sent whole and not answered, the session is
        then parked; None when none was, or when its stream is garbled
        (no late answer could be read): it is closed.
        """
        mutating = [request for request in given_up.unanswered(session)
                    if request.mutates()]
        if not mutating or session.garbled:
            return None
        vids = set(request.vdi_id() for request in mutating)
        vids.discard(None)
        return vids

    def park(self):
        """Count one more connection parked; False past the bound.

        An operation parks each failover's gateway and the last one;
        past that, the session closes the connection instead, with a
        warning naming what may still land.
        """
        if self.parked > self.attempts:
            return False
        self.parked += 1
        return True

    @staticmethod
    def resent(outstanding, carried=()):
        """What goes to the next gateway: carried, then outstanding.

        carried: what a failover that failed itself had to resend. A
        node-list request is the session's own (``ask_members``), not
        the caller's: it is asked again of the new gateway, not resent.
        """
        return list(carried) + [
            request for request in outstanding
            if request.opcode != proto.OP_GET_NODE_LIST]
