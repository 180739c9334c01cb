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
"""The bounded counts that every transfer of this process shares.

One class, three instances, each serving every transfer of the process,
green or native, of every fastsheep backend and of both clients:

``WRITERS``
    Extra writers of the uploads. An upload's first writer (a ``dog vdi
    write`` child, or the native client's first connection) takes
    nothing; each further one it runs at once holds one, taken against
    its own store's sheepdog_store_write_budget before it starts and
    given back once it is gone. Without it, U uploads would run U x
    write_concurrency writers, each with its memory, pipe or socket, for
    no more throughput once sheep has the CPU.
``READ_MEMORY``
    Bytes of read-ahead memory the ``dog`` client's downloads hold,
    taken window by window against each store's
    sheepdog_store_readahead_budget and given back when a window's
    reader is done.
``READERS``
    ``dog vdi read`` children running, counted and never refused: the
    read-ahead ramp weighs them (the cluster those children keep busy is
    shared too).

Nothing ever waits here: a take that does not fit is refused at once,
and the transfer goes on with what it holds (at least its first writer,
or the plain one-reader stream). The lock guards integer arithmetic
only, with no switch, I/O or logging inside, so that no greenthread can
be switched out while holding it and a plain lock is right whether or
not eventlet patched threading.
"""

import threading


class Budget(object):
    """A count held by many transfers at once, each within its limit."""

    def __init__(self):
        self.held = 0
        self._lock = threading.Lock()

    def take(self, amount, limit=None):
        """Take amount if all held stays within limit; whether taken.

        limit is the caller's own (each store has its option); None
        counts without a bound.
        """
        with self._lock:
            if limit is not None and self.held + amount > limit:
                return False
            self.held += amount
            return True

    def give(self, amount):
        with self._lock:
            self.held -= amount


WRITERS = Budget()
READ_MEMORY = Budget()
READERS = Budget()
