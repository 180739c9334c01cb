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
"""The lazy iterable that every download returns, whichever client reads.

glance iterates what ``Store.get`` returns and, when its client hangs up
(WSGI servers call it), calls ``close()``; a half-read iterable may also
just be dropped. Both clients' downloads are generators of pieces, each
releasing what it holds (a ``dog`` child, a socket) when closed; this
class defers starting one until the first piece is asked for, and hands
``close()`` on to it.
"""


class Stream(object):
    """``pieces(*args)``, started at the first iteration; has ``close()``.

    ``pieces`` is a module-level generator function: the plain ``dog``
    read (``dog.read.pieces``), its read-ahead (``dog.readahead.pieces``)
    or the native read (``native.read.pieces``). Nothing is spawned or
    connected before the first item is asked for. ``close()`` and
    garbage collection of a half-read stream close the generator, which
    kills and reaps its children or closes its socket.
    """

    def __init__(self, pieces, *args):
        self.pieces = pieces
        self._args = args
        self._gen = None

    def __iter__(self):
        if self._gen is None:
            # A module-level generator, not a method: a generator holding
            # self while self holds it is a cycle that only the cyclic GC
            # breaks, which would keep a dropped child alive until then.
            self._gen = self.pieces(*self._args)
        return self._gen

    def close(self):
        if self._gen is not None:
            self._gen.close()
