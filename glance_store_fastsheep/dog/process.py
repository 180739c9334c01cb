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
"""The ``dog vdi read`` and ``dog vdi write`` children of a transfer.

A transfer child is spawned on one end of a pipe and owned by the reader
(``dog.read``) or writer (``dog.write``) that streams through it.
"""

import os
import subprocess
import tempfile

from glance_store import exceptions

from glance_store_fastsheep.dog import pipe


def spawn_transfer(argv, pipe_size, child_reads):
    """Start a `vdi read` or `vdi write` child on one end of a new pipe.

    The child gets the pipe as its stdin (child_reads) or its stdout,
    /dev/null as the other stream and a temporary file as stderr, so
    that its error message survives without a second pipe to drain.
    Returns (proc, our end's fd, stderr file); the caller owns both.
    """
    stderr = tempfile.TemporaryFile()
    read_fd, write_fd = os.pipe()
    if child_reads:
        ours, theirs = write_fd, read_fd
    else:
        ours, theirs = read_fd, write_fd
    pipe.set_pipe_size(ours, pipe_size)
    devnull = open(os.devnull, 'wb' if child_reads else 'rb')
    streams = ({'stdin': theirs, 'stdout': devnull} if child_reads
               else {'stdin': devnull, 'stdout': theirs})
    try:
        proc = subprocess.Popen(argv, stderr=stderr, close_fds=True,
                                **streams)
    except OSError as exc:
        os.close(ours)
        stderr.close()
        raise exceptions.BackendException(
            'cannot run %s: %s' % (argv[0], exc))
    finally:
        os.close(theirs)
        devnull.close()
    return proc, ours, stderr
