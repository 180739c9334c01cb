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
"""Connections given up with requests that may still land.

A connection given up (a failover, or the end of an operation)
with requests in flight that change a VDI (``Request.mutates``: object
creates and writes, inode writes, attribute sets) is not closed: sheep
would still carry out every one that fully arrived, and the client
would never know when. It is parked (``Parking``, one per cluster,
beside its ``membership.Membership``) under the ids of the VDIs those requests
change and the operation's image name, still open, its requests
replaced by stand-ins the late answers are read into. Whatever removes
a VDI's objects (a failed upload's clean-up, ``deletion.delete``) first
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

import socket
import threading

from oslo_log import log as logging
from oslo_utils import timeutils

from glance_store_fastsheep import hub_safe

LOG = logging.getLogger(__name__)


# Seconds a probe of a cut connection's sheep waits for its accept.
PROBE_TIMEOUT = 2.0


class Parked(object):
    """One parked connection: its Connection, what it changes, its bound."""

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
