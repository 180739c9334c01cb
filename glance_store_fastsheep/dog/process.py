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

One class, DogProcess, starts, watches, reaps and kills both: a child
is spawned on one end of a pipe and owned by the range reader
(``dog.read``) or chunk writer (``dog.write``) that streams through our
end with a ``dog.pipe`` reader or writer. Its exit is checked the same
way in both directions: a bounded wait, then sheep's error mapped from
what ``dog`` printed on stderr.
"""

import os
import subprocess
import tempfile

from glance_store import exceptions
from oslo_log import log as logging

from glance_store_fastsheep.dog import command
from glance_store_fastsheep.dog import pipe
from glance_store_fastsheep import hub_safe

LOG = logging.getLogger(__name__)


def spawn_transfer(argv, pipe_size, child_reads):
    """Start a `vdi read` or `vdi write` child on one end of a new pipe.

    The child gets the pipe as its stdin (child_reads) or its stdout,
    /dev/null as the other stream and a temporary file as stderr, so
    that its error message survives without a second pipe to drain.
    Returns (proc, our end's fd, stderr file); the caller owns both.
    When any step fails (no fd left for the pipe or /dev/null, no
    process), nothing is left open: the BackendException says which.
    """
    stderr = tempfile.TemporaryFile()
    ours = theirs = devnull = None
    step = 'open a pipe for'
    try:
        read_fd, write_fd = os.pipe()
        if child_reads:
            ours, theirs = write_fd, read_fd
        else:
            ours, theirs = read_fd, write_fd
        pipe.set_pipe_size(ours, pipe_size)
        step = 'open %s for' % os.devnull
        devnull = open(os.devnull, 'wb' if child_reads else 'rb')
        streams = ({'stdin': theirs, 'stdout': devnull} if child_reads
                   else {'stdin': devnull, 'stdout': theirs})
        step = 'run'
        proc = subprocess.Popen(argv, stderr=stderr, close_fds=True,
                                **streams)
    except BaseException as exc:
        if ours is not None:
            os.close(ours)
        stderr.close()
        if isinstance(exc, (IOError, OSError)):
            # IOError: Python 2's open().
            raise exceptions.BackendException(
                'cannot %s %s: %s' % (step, argv[0], exc))
        raise
    finally:
        if theirs is not None:
            os.close(theirs)
        if devnull is not None:
            devnull.close()
    return proc, ours, stderr


class DogProcess(object):
    """One `dog vdi read|write NAME OFFSET LENGTH` child of a transfer.

    ``fd`` is our end of the pipe (the child's stdout for ``read``, its
    stdin for ``write``); the owner reads or writes it and closes it.
    The child's stderr goes to a temporary file, read back only when its
    exit status is not 0. ``kill`` may be called from any thread: it
    kills and reaps, and the owner's next read or write ends.
    """

    def __init__(self, dog, settings, action, address, port, name, offset,
                 length):
        self.action = action
        self.name = name
        self.offset = offset
        self.length = length
        self.idle_timeout = settings.transfer_timeout
        self.child_reads = action == 'write'
        argv = dog.argv(action, address, port, name, offset, length)
        self.proc, self.fd, self._stderr = spawn_transfer(
            argv, settings.pipe_size, child_reads=self.child_reads)
        LOG.debug('Started `%s` (pid %s)', ' '.join(argv), self.proc.pid)

    def done(self):
        """Whether the child has exited."""
        return self.proc.poll() is not None

    def check_exit(self):
        """Wait for the exit, up to the idle timeout; raise if it failed.

        Called once our end of the pipe has ended (the child's input) or
        was read to its end (its output).
        """
        try:
            status = hub_safe.wait_process(self.proc, self.idle_timeout)
        except hub_safe.Timeout:
            if self.child_reads:
                what = ('sheepdog `vdi write` of %s at offset %d'
                        % (self.name, self.offset))
            else:
                what = 'sheepdog `vdi read` of %s' % self.name
            raise exceptions.BackendException(
                '%s did not exit %ss after its %s ended'
                % (what, self.idle_timeout,
                   'input' if self.child_reads else 'output'))
        if status != 0:
            self._stderr.seek(0)
            raise command.error_for(self.action, self.name, status,
                                    self._stderr.read())

    def kill(self):
        """Kill and reap the child, unless it has exited; any thread."""
        if hub_safe.kill_and_reap(self.proc) is None:
            LOG.warning('`dog vdi %s` pid %s of %s survived SIGKILL; left '
                        'to be reaped later', self.action, self.proc.pid,
                        self.name)

    def close(self, kill=True):
        """Release the stderr file; kill and reap the child first."""
        if kill:
            self.kill()
        self._stderr.close()
