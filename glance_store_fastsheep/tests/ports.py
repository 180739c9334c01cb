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
"""A loopback port that refuses connections, for the tests' sheepdog.

Fake and emulated clusters have no sheep, but the driver still connects
to the configured address and port (the object-table check after a
``dog`` upload, the native client). Pointed at sheepdog's default
127.0.0.1:7000, a test would reach whatever listens there, such as a
real sheep on a developer's machine. ``refused_port`` binds an ephemeral
port and never listens on it: while this process holds it, no other
socket can take it, and every connection to it is refused.
"""

import socket
import threading

_lock = threading.Lock()
_held = []


def refused_port():
    """A 127.0.0.1 port that refuses connections for this process's life.

    One socket per process, bound once and kept open (without
    ``listen``), so that tests taking fd snapshots see it before and
    after alike.
    """
    with _lock:
        if not _held:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(('127.0.0.1', 0))
            _held.append(sock)
        return _held[0].getsockname()[1]
