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
"""The objects of one native upload between read and recorded.

Each in-flight write beyond an upload's first holds a slot of the
process's write budget (``budget.WRITERS``), as a ``dog`` child does.
Memory: at most ``write_concurrency`` objects an upload, the one being
filled and those in flight; the object being filled takes its place in
the window (and its slot) before it is read. So the uploads of a
process hold one object each plus one a slot of the budget. An object
stays in memory until sheep acknowledged it *and* every hash has seen
it, and its slot stays taken until then too: a slot given back at the
acknowledgement would let another upload send an object while this
one's was still being hashed. Hashing runs at most one object behind:
ending an object waits for the hashes of the one before it.

Objects are sent (``CREATE_AND_WRITE_OBJ``), acknowledged, held until
hashed, and recorded in the inode in runs (``vdi.record``) as their
acknowledgements come in; ``write.Writer`` decides what to send and
where the upload ends.
"""

import collections

from glance_store_fastsheep import budget
from glance_store_fastsheep import hub_safe
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import vdi as vdi_ops


class Window(object):
    """The window of one upload: its objects in flight, held, recorded."""

    def __init__(self, session, settings):
        self.session = session
        self.settings = settings
        # The VDI written and the upload's image_data.Digest (begin).
        self.vdi = None
        self.digest = None
        self.created = set()
        self.recorded = set()
        self._acked = []
        # ops.ObjectTag of acknowledged objects not hashed yet: they
        # keep their place in the window, and their slot.
        self._held = []
        self._in_flight = collections.deque()
        self._records = []

    def begin(self, vdi, digest):
        """Objects from now on go to vdi, hashed by digest."""
        self.vdi = vdi
        self.digest = digest

    def finish(self):
        """Return once every object sent was answered and recorded."""
        while self._in_flight:
            self._wait_oldest()
        while self._records:
            self.session.complete(self._records[0])
            self._record_answered()

    def _record_answered(self):
        """Collect answered writes and records; record acked objects."""
        if any(request.done for request in self._in_flight):
            waiting = collections.deque()
            for request in self._in_flight:
                if not request.done:
                    waiting.append(request)
                    continue
                self._held.append(request.tag)
                self._acked.append(request.tag.index)
            self._in_flight = waiting
        self._give_hashed()
        still = []
        for request in self._records:
            if request.done:
                tag = request.tag
                self.recorded.update(range(tag.first, tag.first + tag.count))
            else:
                still.append(request)
        self._records = still
        if self._acked:
            requests = [vdi_ops.record(self.vdi, first, count)
                        for first, count in vdi_ops.runs(self._acked)]
            self._acked = []
            self.session.send(requests)
            self._records.extend(requests)

    def _wait_oldest(self):
        self.session.complete(self._in_flight[0])
        self._record_answered()

    def make_room(self):
        """Wait until the window and budget allow one more object.

        Before the object is read, not once it is: the object being
        filled takes its place in the window (and its slot), so that an
        upload holds at most ``write_concurrency`` objects, and all the
        uploads of the process one each plus the budget's. Returns
        whether it took a slot.
        """
        self._give_hashed()
        while True:
            taken = len(self._in_flight) + len(self._held)
            if not taken:
                return False
            if (taken < self.settings.write_concurrency and
                    budget.WRITERS.take(1, self.settings.write_budget)):
                return True
            if self._in_flight:
                self._wait_oldest()
            else:  # only objects acknowledged but not hashed yet
                self.digest.catch_up()
                self._give_hashed()

    def send(self, index, pieces, slot):
        """Send one object's data in the room make_room made for it."""
        inode = self.vdi.inode
        request = ops.Request(
            proto.OP_CREATE_AND_WRITE_OBJ, proto.data_oid(self.vdi.vid,
                                                          index), 0,
            flags=proto.FLAG_CMD_WRITE | proto.FLAG_CMD_DIRECT,
            payload=pieces, copies=inode.nr_copies,
            copy_policy=inode.copy_policy, tag=ops.ObjectTag(index, slot))
        self.created.add(index)
        self._in_flight.append(request)
        try:
            self.session.send([request])
        except BaseException:
            self._in_flight.pop()
            if slot:
                budget.WRITERS.give(1)
            raise
        hub_safe.give_way()

    def _give_hashed(self):
        """Let go of acknowledged objects already hashed, and their slots."""
        if self._held:
            hashed = self.digest.objects_hashed()
            keep = [tag for tag in self._held if tag.index >= hashed]
            budget.WRITERS.give(sum(1 for tag in self._held
                                    if tag.slot and tag.index < hashed))
            self._held = keep

    def release_slots(self):
        """Give back every slot held: the upload is over, or failed."""
        budget.WRITERS.give(sum(1 for tag in self._held if tag.slot))
        self._held = []
        while self._in_flight:
            request = self._in_flight.popleft()
            if request.tag.slot:
                budget.WRITERS.give(1)
