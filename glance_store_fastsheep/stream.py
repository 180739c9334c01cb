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

Each download also logs one INFO line when it ends, however it ends
(``Transfer``): the line an operator greps for, beside the upload's
``Stored image`` line of the store.
"""

from oslo_log import log as logging
from oslo_utils import timeutils

LOG = logging.getLogger(__name__)


class Transfer(object):
    """One download, for the INFO line that says how it went.

    The client that reads fills in what only it knows: ``failovers``
    (the native client's moves to another sheep).
    """

    def __init__(self, client, address, port, name, length):
        self.client = client
        self.address = address
        self.port = port
        self.name = name
        self.length = length
        self.failovers = 0

    def log(self, outcome, delivered, elapsed):
        """One INFO line: outcome is sent, stopped or failed."""
        what = {'sent': 'Sent', 'stopped': 'Stopped sending',
                'failed': 'Failed sending'}[outcome]
        LOG.info('%s sheepdog image %s from %s:%d (%s client): %d of %d '
                 'bytes in %.2fs (%.1f MB/s), %d failover(s)', what,
                 self.name, self.address, self.port, self.client,
                 delivered, self.length, elapsed,
                 delivered / max(elapsed, 1e-6) / 1e6, self.failovers)


def _logged(pieces, transfer):
    """pieces, passed on; transfer's line logged when they end."""
    started = timeutils.now()
    delivered = 0
    outcome = 'failed'
    try:
        for piece in pieces:
            delivered += len(piece)
            yield piece
        outcome = 'sent'
    except GeneratorExit:
        outcome = 'stopped'
        raise
    finally:
        pieces.close()
        transfer.log(outcome, delivered, timeutils.now() - started)


class Stream(object):
    """``pieces(*args)``, started at the first iteration; has ``close()``.

    ``pieces`` is a module-level generator function: the plain ``dog``
    read (``dog.read.pieces``), its read-ahead (``dog.readahead.pieces``)
    or the native read (``native.read.pieces``). Nothing is spawned or
    connected before the first item is asked for. ``close()`` and
    garbage collection of a half-read stream close the generator, which
    kills and reaps its children or closes its socket.

    With ``transfer`` (a Transfer), pieces is also given it, as the
    keyword ``transfer``, and its line is logged when the stream ends.
    """

    def __init__(self, pieces, *args, **kwargs):
        self.pieces = pieces
        self._args = args
        self.transfer = kwargs.pop('transfer', None)
        if kwargs:
            raise TypeError('unexpected arguments %s' % sorted(kwargs))
        # The pieces generator, and what iterating gives (the same, or
        # the same logged).
        self._gen = None
        self._iter = None

    def __iter__(self):
        if self._iter is None:
            # Module-level generators, not methods: a generator holding
            # self while self holds it is a cycle that only the cyclic GC
            # breaks, which would keep a dropped child alive until then.
            if self.transfer is None:
                self._gen = self._iter = self.pieces(*self._args)
            else:
                self._gen = self.pieces(*self._args, transfer=self.transfer)
                self._iter = _logged(self._gen, self.transfer)
        return self._iter

    def close(self):
        if self._iter is not None:
            self._iter.close()
            # Never started, the logging generator closes nothing.
            self._gen.close()
