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
"""Whether two ``(address, port)`` name one sheep.

Addresses come from the options, from locations and from sheep's own
node lists (always IP addresses): one sheep may be written
``sheep1:7000`` in one place and ``10.0.0.1:7000`` in another. Every
comparison that decides whom the driver connects to goes by the
addresses the names resolve to, never by their text alone.
"""

import socket


def resolve(node, cache=None):
    """The (IP address, port) pairs node's address names: a frozenset.

    Empty when the name does not resolve. An IP address resolves to
    itself without a DNS query; a host name costs one lookup, remembered
    in cache (a dict) when one is given.
    """
    key = (node[0], node[1])
    if cache is not None and key in cache:
        return cache[key]
    try:
        infos = socket.getaddrinfo(node[0], node[1], 0, socket.SOCK_STREAM)
    except (socket.error, UnicodeError, ValueError):
        infos = []
    found = frozenset((info[4][0], info[4][1]) for info in infos)
    if cache is not None:
        cache[key] = found
    return found


def same_node(one, other, cache=None):
    """Whether two (address, port) name one sheep.

    The same text, or names that resolve to a common address with the
    same port: ``sheep1:7000`` and ``10.0.0.1:7000`` are one node when
    sheep1 resolves to 10.0.0.1.
    """
    if one[0] == other[0] and one[1] == other[1]:
        return True
    if one[1] != other[1]:
        return False
    return bool(resolve(one, cache) & resolve(other, cache))
