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
"""The session interface: whole requests, whoever carries them.

``Exchange`` is what VDI operations, reads and writes talk to: a
``connection.Connection`` (one sheep) and a ``failover.FailoverSession``
(a gateway, the holders reads go to, and the next sheep when one fails)
both are one. Each gives ``send``, ``receive_one`` (told which request
the caller waits for, so that it reads the connection that request
travels on) and ``follow_up`` (what becomes of an answer: done, sent
again, or raised); this class makes whole calls of them.
"""

from glance_store_fastsheep.native import proto


class Exchange(object):
    """Whole requests over send, receive_one and follow_up."""

    def complete(self, request):
        """Pump responses until request is answered with success.

        Responses of other requests land in their own buffers meanwhile
        (and are followed up: done, retried or raised).
        """
        while not request.done:
            self.follow_up(self.receive_one(request))

    def call(self, request):
        """Send request and return it once answered with success."""
        self.send([request])
        self.complete(request)
        return request

    def call_raw(self, request, retry=True):
        """Send request, return it with whatever final result it got.

        For requests whose failure results the caller interprets itself
        (a lookup answering NO_VDI, STAT_CLUSTER's cluster states).
        Retryable results are retried unless retry is False.
        """
        self.send([request])
        while True:
            answered = self.receive_one(request)
            if answered is request and (
                    not retry or request.result == proto.SUCCESS or
                    request.result not in proto.RETRYABLE):
                request.done = True
                return request
            self.follow_up(answered)
