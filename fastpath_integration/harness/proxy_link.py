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
"""One client connection through the fault proxy, and its threads.

A ``Link`` pairs a client's connection with its own connection to the
sheep and runs three threads on them: one reads the client's requests
and applies the fault the proxy picks for each, one delivers them to the
sheep (later, for a held request and all after it), one relays the
sheep's answers (later, for a delayed one). A held request stays on its
link's queue until it is delivered, also when the client has gone: that
is what a late copy is, and why a link outlives its client until every
answer due came or ``ANSWER_WAIT`` passed.

The link asks its proxy (``FaultProxy``) for what the proxy keeps over
all links: ``stopping``, ``count(opcode)``, ``fault_for(request)`` and
``record(request)``; it imports nothing of it.
"""

import socket
import threading
import time

from oslo_utils import timeutils
from six.moves import queue

from fastpath_integration.harness import proxy_wire

# How long a link keeps its sheep connection for answers still due once
# everything was delivered and the client is gone.
ANSWER_WAIT = 30.0


class Link(object):
    """One client connection and its own connection to the sheep.

    ``index`` is its place in the proxy's ``links``; ``finished`` is set
    once the sheep's side ended and both sockets are closed.
    """

    def __init__(self, proxy, index, client, upstream):
        self.proxy = proxy
        self.index = index
        self.client = client
        self.upstream = upstream
        self.client_lock = threading.Lock()
        self.client_alive = True
        self.queue = queue.Queue()
        self.lock = threading.Lock()
        # Ids delivered to the sheep and not answered yet.
        self.due = set()
        self.hold_until = 0.0
        self.answer_after = {}
        self.delay_until = 0.0
        self.held = 0
        self.finished = threading.Event()
        self.counts = {}
        self.threads = [threading.Thread(target=self._read_requests),
                        threading.Thread(target=self._deliver),
                        threading.Thread(target=self._read_responses)]
        for thread in self.threads:
            thread.daemon = True
            thread.start()

    @property
    def quiet(self):
        """Nothing held, and nothing due that the sheep may still answer.

        Once the sheep's side ended (it closed, or died), nothing more
        is answered: what it took was executed or never will be.
        """
        with self.lock:
            return not self.held and (not self.due or
                                      self.finished.is_set())

    def _send_client(self, data):
        with self.client_lock:
            if not self.client_alive:
                return
            try:
                self.client.sendall(data)
            except (socket.error, OSError):
                self.client_alive = False

    def reset_client(self):
        with self.client_lock:
            if self.client_alive:
                self.client_alive = False
                proxy_wire.close(self.client, rst=True)

    def _read_requests(self):
        while not self.proxy.stopping.is_set():
            header = proxy_wire.receive(self.client,
                                        proxy_wire.HEADER_SIZE)
            if header is None:
                break
            length = proxy_wire.request_data_length(header)
            data = b''
            if length:
                data = proxy_wire.receive(self.client, length)
                if data is None:
                    # A request cut off: sheep would drop it too.
                    break
            opcode = bytearray(header)[1]
            self.counts[opcode] = self.counts.get(opcode, 0) + 1
            request = proxy_wire.Request(self, header, data,
                                         self.proxy.count(opcode),
                                         self.counts[opcode])
            fault = self.proxy.fault_for(request)
            if fault is not None:
                request.action = fault.action
            self.proxy.record(request)
            if fault is None:
                self._enqueue(request)
                continue
            if fault.action == 'trigger':
                fault.callback(request)
                self._enqueue(request)
                continue
            if fault.action == 'forge':
                self._send_client(proxy_wire.response(
                    request, fault.result, fault.data, fault.fields))
            elif fault.action == 'reset':
                if fault.forward:
                    self._enqueue(request)
                self.reset_client()
                break
            elif fault.action == 'hold':
                with self.lock:
                    self.hold_until = max(self.hold_until,
                                          timeutils.now() + fault.seconds)
                self._enqueue(request)
            elif fault.action == 'delay':
                with self.lock:
                    self.answer_after[request.id] = fault.seconds
                self._enqueue(request)
        # The client is gone: what was queued is still delivered.
        self.queue.put(None)

    def _enqueue(self, request):
        with self.lock:
            self.held += 1
            deliver_at = self.hold_until
        self.queue.put((deliver_at, request))

    def _sleep_until(self, when):
        while not self.proxy.stopping.is_set():
            left = when - timeutils.now()
            if left <= 0:
                return True
            time.sleep(min(left, 0.05))
        return False

    def _deliver(self):
        try:
            while True:
                item = self.queue.get()
                if item is None:
                    break
                deliver_at, request = item
                if not self._sleep_until(deliver_at):
                    return
                with self.lock:
                    self.due.add(request.id)
                try:
                    self.upstream.sendall(request.header + request.data)
                except (socket.error, OSError):
                    with self.lock:
                        self.due.discard(request.id)
                        self.held = 0
                    return
                finally:
                    with self.lock:
                        self.held = max(0, self.held - 1)
            # Everything delivered: wait for the answers still due, so
            # that quiet means landed, then let the sheep go.
            deadline = timeutils.now() + ANSWER_WAIT
            while timeutils.now() < deadline and not (
                    self.proxy.stopping.is_set() or
                    self.finished.is_set()):
                with self.lock:
                    if not self.due:
                        break
                time.sleep(0.02)
        finally:
            with self.lock:
                self.held = 0
            try:
                self.upstream.shutdown(socket.SHUT_WR)
            except (socket.error, OSError):
                pass

    def _read_responses(self):
        try:
            while True:
                header = proxy_wire.receive(self.upstream,
                                            proxy_wire.HEADER_SIZE)
                if header is None:
                    break
                req_id, length = proxy_wire.response_id_and_length(header)
                data = b''
                if length:
                    data = proxy_wire.receive(self.upstream, length)
                    if data is None:
                        break
                with self.lock:
                    self.due.discard(req_id)
                    pause = self.answer_after.pop(req_id, None)
                    if pause is not None:
                        self.delay_until = max(self.delay_until,
                                               timeutils.now() + pause)
                    delay_until = self.delay_until
                if not self._sleep_until(delay_until):
                    break
                self._send_client(header + data)
        finally:
            # The sheep closed or went: so does the client's side, and
            # the link's sockets are closed (a test counts its fds).
            with self.client_lock:
                self.client_alive = False
                proxy_wire.close(self.client)
            # Closed before finished is set: a test that waits for it
            # then counts its fds.
            proxy_wire.close(self.upstream)
            self.finished.set()

    def close(self):
        with self.client_lock:
            self.client_alive = False
            proxy_wire.close(self.client)
        proxy_wire.close(self.upstream)
        self.queue.put(None)
        for thread in self.threads:
            thread.join(10)

    def alive_threads(self):
        return [thread for thread in self.threads if thread.is_alive()]
