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
"""A TCP proxy in front of one sheep that injects chosen faults.

``FaultProxy`` listens on a loopback port the system chooses and relays
every connection it accepts to one sheep, parsing sheep's framing both
ways with a codec of its own (``proxy_wire``: written from sheepdog's
headers, not taken from the client's ``native/proto.py``, so that an
encoding mistake of the client shows as a request the proxy reads
differently, not as two copies of one mistake agreeing).

What a ``Fault`` can do to the request its predicate picks (by opcode,
object id, offset, VDI name and how many of that opcode came before):

* ``hold(seconds)``: the request and everything after it on that
  connection reach the sheep ``seconds`` later, also when the client has
  closed its side meanwhile. That is what a late copy of a request is:
  sheep executes every request that fully arrived on a connection, even
  after the client went (``sheep/request.c``: only the reply fails), and
  the kernel delivers what was queued before a ``close()``.
* ``delay(seconds)``: the request goes on at once; its response (and the
  responses after it) reach the client ``seconds`` later.
* ``reset()``: the client's connection is reset (RST) when the request
  arrives, with the request dropped or, ``forward=True``, delivered
  first.
* ``forge(result)``: the proxy answers the request itself and never
  forwards it; ``data`` and header ``fields`` forge a whole answer
  (``node_list`` builds a GET_NODE_LIST one).
* ``trigger(callback)``: ``callback(request)`` runs, then the request
  goes on: a moment of the request stream for a fault of another kind
  (a sheep killed or frozen just before that request reaches it), which
  a seed reproduces better than a wall-clock delay.

Everything runs on threads (greenthreads under eventlet, whose
monkey-patching makes ``threading``, ``socket`` and ``time.sleep``
green), each link's held requests on a writer of its own
(``proxy_link``). ``stop()`` closes every socket and joins every
thread; ``wait_quiet()`` returns once nothing is held and every request
delivered was answered (or its sheep closed): only then can a test know
that no late copy is still to land.

Opcodes, results and object id bits are the codec's
(``proxy_wire.NEW_VDI``, ``proxy_wire.EIO``): this module holds the
faults and the proxy that applies them.
"""

import socket
import threading
import time

import fixtures
from oslo_utils import timeutils

from fastpath_integration.harness import proxy_link
from fastpath_integration.harness import proxy_wire


def on(opcode=None, nth=None, test=None, name=None):
    """A predicate: this opcode, its nth of the proxy, test(request)."""
    def match(request):
        if opcode is not None and request.opcode != opcode:
            return False
        if nth is not None and request.nth != nth:
            return False
        if name is not None and request.name != name:
            return False
        return test is None or bool(test(request))
    return match


class Fault(object):
    """What to do to the requests ``match`` picks, ``times`` of them.

    ``times`` None: every request it picks. ``fired`` lists the requests
    it was applied to; ``applied`` is set at the first.
    """

    def __init__(self, action, match, seconds=0.0,
                 result=proxy_wire.SUCCESS, data=b'', fields=None,
                 forward=False, times=1, callback=None):
        self.action = action
        self.callback = callback
        self.match = match
        self.seconds = seconds
        self.result = result
        self.data = data
        self.fields = fields or {}
        self.forward = forward
        self.times = times
        self.fired = []
        self.applied = threading.Event()

    def take(self, request):
        """Whether this fault applies to request (and count it)."""
        if self.times is not None and len(self.fired) >= self.times:
            return False
        if not self.match(request):
            return False
        self.fired.append(request)
        self.applied.set()
        return True

    def __repr__(self):
        return 'Fault(%s, %ss, fired %s)' % (
            self.action, self.seconds,
            [request.describe() for request in self.fired])


def hold(match, seconds, times=1):
    return Fault('hold', match, seconds=seconds, times=times)


def delay(match, seconds, times=1):
    return Fault('delay', match, seconds=seconds, times=times)


def reset(match, forward=False, times=1):
    return Fault('reset', match, forward=forward, times=times)


def forge(match, result=proxy_wire.SUCCESS, data=b'', fields=None,
          times=1):
    return Fault('forge', match, result=result, data=data, fields=fields,
                 times=times)


def trigger(match, callback, times=1):
    return Fault('trigger', match, callback=callback, times=times)


def node_list(nodes, match=None, times=None):
    """A Fault answering GET_NODE_LIST with nodes ((address, port)...)."""
    data = b''.join(proxy_wire.node_entry(address, port, zone=index)
                    for index, (address, port) in enumerate(nodes))
    return forge(match or on(proxy_wire.GET_NODE_LIST), proxy_wire.SUCCESS,
                 data, {'nr_nodes': len(nodes)}, times=times)


class FaultProxy(fixtures.Fixture):
    """A proxy to the sheep at address:port on a loopback port of its own.

    ``port`` is where clients connect; ``accepted`` counts the
    connections made to it; ``log`` lists every request received, in
    order, as ``proxy_wire.Request`` objects whose ``action`` says what
    was done.
    """

    def __init__(self, port, address='127.0.0.1', faults=()):
        super(FaultProxy, self).__init__()
        self.upstream = (address, port)
        self.address = address
        self.faults = list(faults)

    def _setUp(self):
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._counts = {}
        self.links = []
        self.log = []
        self.accepted = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((self.address, 0))
        self.listener.listen(64)
        # accept() wakes up to see stop(), green or not.
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.addCleanup(self.stop)
        self._acceptor = threading.Thread(target=self._accept)
        self._acceptor.daemon = True
        self._acceptor.start()

    def add(self, fault):
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self):
        with self._lock:
            self.faults = []

    def count(self, opcode):
        """How many requests of opcode the proxy received, this one too."""
        with self._lock:
            self._counts[opcode] = self._counts.get(opcode, 0) + 1
            return self._counts[opcode]

    def fault_for(self, request):
        """The first fault that takes request, or None: forward it."""
        with self._lock:
            for fault in self.faults:
                if fault.take(request):
                    return fault
        return None

    def record(self, request):
        """Add request to ``log``, once its action is known."""
        with self._lock:
            self.log.append(request)

    def requests(self, opcode=None):
        with self._lock:
            return [request for request in self.log
                    if opcode is None or request.opcode == opcode]

    def _accept(self):
        while not self.stopping.is_set():
            try:
                client, _peer = self.listener.accept()
            except socket.timeout:
                continue
            except (socket.error, OSError):
                return
            if self.stopping.is_set():
                proxy_wire.close(client)
                return
            try:
                upstream = socket.create_connection(self.upstream, 10)
                upstream.settimeout(None)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY,
                                    1)
            except (socket.error, OSError):
                # The sheep is gone: so is this connection.
                with self._lock:
                    self.accepted += 1
                proxy_wire.close(client, rst=True)
                continue
            client.settimeout(None)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.accepted += 1
                index = len(self.links)
                self.links.append(
                    proxy_link.Link(self, index, client, upstream))

    @property
    def quiet(self):
        with self._lock:
            links = list(self.links)
        return all(link.quiet for link in links)

    def wait_quiet(self, timeout=60):
        """True once nothing is held and every delivered request answered.

        A held request counts until its sheep took it; a request the
        sheep never answers (it died) counts until its link ended.
        """
        deadline = timeutils.now() + timeout
        while timeutils.now() < deadline:
            if self.quiet:
                return True
            time.sleep(0.05)
        return self.quiet

    def stop(self):
        """Close every socket and join every thread of the proxy."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        proxy_wire.close(self.listener)
        self._acceptor.join(10)
        with self._lock:
            links = list(self.links)
        for link in links:
            link.close()
        left = [thread for link in links for thread in link.alive_threads()]
        if self._acceptor.is_alive():
            left.append(self._acceptor)
        if left:
            raise RuntimeError('fault proxy threads still running: %s'
                               % left)
