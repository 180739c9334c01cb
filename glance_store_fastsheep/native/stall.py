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
"""How long a connection may still wait for the answers in flight.

Every request sent must be answered within the stall timeout of its
sending (a frozen sheep, or a gateway waiting on a frozen peer),
measured with ``timeutils.now()`` (monotonic). ``Stall`` keeps that
account for one ``connection.Connection``, apart from its socket, so
that the rule reads in one place.
"""

from oslo_utils import timeutils

from glance_store_fastsheep.native import errors


def oldest(requests):
    """The request of requests sent longest ago, or None."""
    found = None
    for request in requests:
        if request.sent_at is not None and (
                found is None or request.sent_at < found.sent_at):
            found = request
    return found


class Stall(object):
    """The stall timeout of one connection's requests."""

    def __init__(self, timeout):
        self.timeout = timeout
        # When this client last began waiting for an answer.
        self.wait_start = 0

    def start_wait(self):
        self.wait_start = timeutils.now()

    def budget(self, requests, where):
        """Seconds the next wait may last: the oldest request's stall.

        A request's stall runs from its sending, or from when this
        client began waiting for an answer, whichever is later: time the
        caller spent elsewhere (a slow consumer of a download) while the
        answer sat in the socket is no stall. Raises Stalled once a
        request has waited the whole timeout; where() names the sheep
        (a callable: the name is built only for the error, not on every
        read of a transfer).
        """
        first = oldest(requests)
        if first is None:
            return self.timeout
        since = max(first.sent_at, self.wait_start)
        left = since + self.timeout - timeutils.now()
        if left <= 0:
            raise errors.Stalled('%s left %s unanswered for %ss' % (
                where(), first.describe(), self.timeout))
        return left
