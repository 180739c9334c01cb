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
"""Whether, and when, a request sheep answered is sent again.

Apart from the connection that sends it, as kazoo's ``KazooRetry`` and
redis-py's ``Retry`` keep theirs: ``connection.Connection`` asks
``Retry.pause`` what to do with a result other than success, and sends
the request again after the pause it gets. A result is retried only
when sheep says the same request may succeed later (``RETRYABLE``: a
node is recovering, a peer was unreachable) and only until the
transfer timeout from its first such answer. Every other result is
final and raised; where a request goes after its connection failed is
``failover.FailoverSession``'s, not this.
"""

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import timeutils

from glance_store_fastsheep import hub_safe
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import proto

LOG = logging.getLogger(__name__)

# Pause before the first retry of a retryable result, doubled up to
# MAX_PAUSE.
FIRST_PAUSE = 0.02
MAX_PAUSE = 1.0


class Retry(object):
    """The retry of retryable results, for at most timeout seconds."""

    def __init__(self, timeout):
        self.timeout = timeout

    def pause(self, request, where, name):
        """Seconds to wait before sending request again; else raise.

        request was answered with a result other than success. Its
        deadline and pause are kept on it, so that a resend on another
        connection (after a failover) goes on from where they were.
        """
        result = request.result
        if result == proto.VER_MISMATCH or result not in proto.RESULTS:
            raise errors.Unsupported('%s answered %s to %s: %s' % (
                where, proto.result_text(result), request.describe(),
                errors.USE_DOG))
        if result not in proto.RETRYABLE:
            raise errors.error_for(result, where, request.describe(), name)
        now = timeutils.now()
        if request.deadline is None:
            request.deadline = now + self.timeout
            request.pause = FIRST_PAUSE
        if now >= request.deadline:
            raise exceptions.BackendException(
                '%s kept answering %s to %s for %ss' % (
                    where, proto.result_text(result), request.describe(),
                    self.timeout))
        pause = request.pause
        request.pause = min(pause * 2, MAX_PAUSE)
        return pause

    def follow_up(self, request, session, name):
        """Mark a success done; resend a retryable result on session.

        session (a ``connection.Connection``) answered request; after
        the ``pause`` its result asks for, it sends the request again.
        Other results raise as ``pause`` says.
        """
        if request.result == proto.SUCCESS:
            request.done = True
            return
        pause = self.pause(request, session.where(), name)
        LOG.warning('%s answered %s to %s; retrying in %.2fs',
                    session.where(), proto.result_text(request.result),
                    request.describe(), pause)
        hub_safe.sleep(pause)
        session.send([request])
