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
"""This host's loopback ports and process table, for the fixtures.

The leaf that both the sheepdog cluster fixture (``sheepdog``), which
the plugins' tests import on Python 2.7, and the service harness
(``processes``) stand on, so it imports nothing of the project and only
the standard library, in the Python 2.7/3 common subset.
"""

import os
import socket


def free_port():
    """A loopback TCP port nobody listens on right now."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
    finally:
        sock.close()


def port_open(port, host='127.0.0.1', timeout=1):
    """Whether something accepts TCP connections on host:port."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except (socket.error, OSError):
        return False
    sock.close()
    return True


def stat(pid):
    """The fields of /proc/PID/stat after the command; None once gone.

    ``stat(pid)[0]`` is the state (``Z`` for a zombie), ``[1]`` the
    parent's pid, ``[11]`` and ``[12]`` the user and system CPU ticks.
    """
    try:
        with open('/proc/%s/stat' % pid) as source:
            # The command may hold spaces and parentheses: split after
            # its last ')'.
            return source.read().rsplit(')', 1)[1].split()
    except (IOError, OSError, IndexError):
        return None


def cpu_seconds(pids):
    """User + system CPU seconds the processes pids used so far.

    A pid that has gone counts 0.
    """
    ticks = 0
    for pid in pids:
        fields = stat(pid)
        if fields is not None:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / float(os.sysconf('SC_CLK_TCK'))


def alive(pid):
    """Whether pid runs (exists and is no zombie)."""
    fields = stat(pid)
    return fields is not None and fields[0] != 'Z'


def _table():
    """{pid: (parent pid, state)} of every process now."""
    table = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            fields = stat(entry)
            if fields is not None:
                table[int(entry)] = (int(fields[1]), fields[0])
    return table


def children(pid):
    """(pid, state) of the child processes of pid, zombies included."""
    return sorted((child, state) for child, (parent, state)
                  in _table().items() if parent == pid)


def process_tree(pid):
    """pid and all its descendants, from one read of the table."""
    below = {}
    for child, (parent, _state) in _table().items():
        below.setdefault(parent, []).append(child)
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(below.get(current, []))
    return tree
