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
"""A connection given up with requests in flight that may still land.

A ``connection.Connection`` sends and receives for a live session.
Once the session gives it up with requests its sheep took whole and did
not answer, the connection is handed over (``Connection.hand_over``) to
a ``GivenUp``: nothing is sent on it any more, its late answers are read
into stand-ins (``Request.stand_in``) until they are all in, the far
side ends it, or its bound passes (``parking.Parking``).
"""

import select

from oslo_log import log as logging
from oslo_utils import timeutils

from glance_store_fastsheep import hub_safe
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import proto

LOG = logging.getLogger(__name__)


def unanswered(connection):
    """The requests in flight on connection whose bytes all went out.

    Sheep carries out a request only once all of it arrived; one cut
    off mid-way is never completed on a connection nobody sends on.
    """
    return [request for request in connection.outstanding
            if request.sent_at is not None]


class GivenUp(object):
    """A connection nothing is sent on, read for its late answers.

    connection is the Connection holding the socket, its outstanding
    requests stand-ins.
    """

    # Whether the far side ended the connection (EOF or reset) while
    # requests were in flight (read_late): nothing more is read there,
    # but what that sheep already took may still be carried out.
    cut = False

    def __init__(self, connection):
        self.connection = connection

    @property
    def sock(self):
        return self.connection.sock

    @property
    def node(self):
        return self.connection.node

    def close(self):
        self.connection.close()

    def where(self):
        return self.connection.where()

    def unanswered(self):
        """The requests in flight whose bytes all went out."""
        return unanswered(self.connection)

    def read_late(self, deadline):
        """Read answers of what is in flight until deadline (monotonic).

        Returns the requests still unanswered (``unanswered``). A
        deadline already passed reads only what has arrived, without
        waiting. Once the far side ended the connection (EOF or reset)
        it is closed and ``cut``: nothing more is read from it, but a
        request that sheep took whole may still be carried out (sheep
        finishes what it queued whatever becomes of the connection;
        a network that drops the connection does not stop it either).
        A stream that cannot be read (garbled, cut off mid-answer, or no
        answer within the stall timeout once it began) is closed too,
        not cut: the caller sees ``sock`` None with requests left.
        """
        while True:
            due = self.unanswered()
            if not due or self.sock is None:
                return due
            if not _readable(self.sock, deadline - timeutils.now()):
                return due
            try:
                self.connection.receive_one()
            except errors.Stalled as exc:
                LOG.debug('Late answers of %s cut off: %s', self.where(),
                          exc)
                self.close()
            except errors.ConnectionLost:
                self.cut = True
                self.close()
            except (proto.ProtocolError, errors.Unsupported) as exc:
                LOG.debug('Late answers of %s unreadable: %s',
                          self.where(), exc)
                self.close()


def _readable(sock, timeout):
    """Whether sock has something to read (or its end) within timeout.

    timeout <= 0: only what is there now, without yielding to a hub
    (the original select, harmless under eventlet as it never blocks).
    """
    if timeout <= 0:
        if hub_safe.is_green():
            from eventlet import patcher
            poll = patcher.original('select').select
        else:
            poll = select.select
        try:
            return bool(poll([sock.fileno()], [], [], 0)[0])
        except (OSError, IOError, ValueError, select.error):
            return True  # let the read say what happened
    try:
        hub_safe.wait_fd(sock.fileno(), timeout=timeout)
    except hub_safe.Timeout:
        return False
    except (OSError, IOError, ValueError, select.error):
        return True
    return True
