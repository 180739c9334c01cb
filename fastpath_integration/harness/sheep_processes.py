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
"""The processes of a local sheepdog cluster: its sheep and its namespace.

``Node`` is one ``sheep`` daemon of a ``sheepdog.SheepdogCluster``: it
starts, waits until its port answers, and dies with its logger when
killed, so that a test can kill a node mid-request and know nothing of
it is left. ``LockNamespace`` keeps one cluster's locks its own.

Two clusters at once must not collide. Each cluster has its own
membership file (``-c local:SHMFILE``), store directories and ports, but
the local driver also keeps cluster locks in the fixed directory
``/tmp/sheepdog_locks/`` and purges it whenever a sheep starts, which
would break every other running cluster. So, as root, every cluster gets
a private mount namespace with its own tmpfs on that path: a holder
process made by ``unshare`` owns the namespace, each sheep enters it with
``nsenter``, and the holder ends when its stdin closes, with or without a
clean-up. Without the privilege for that (an operator's non-root run),
clusters fall back to the shared directory, which is safe for one
cluster at a time; the fixture's ``isolated`` says which it got.

These stand apart from the fixture, which formats the cluster and
looks at it through ``dog``, so that each process's life is read in one
place. Like the fixture, the module runs on Python 2.7 and 3 with only
the standard library and the harness's leaf ``host``.
"""

import errno
import os
import signal
import subprocess
import time

from fastpath_integration.harness import host

LOCK_DIR = '/tmp/sheepdog_locks'


class ClusterError(Exception):
    """A sheep would not start, or the cluster would not answer."""


def monotonic():
    """Seconds of a clock for start-up deadlines, on 2.7 as on 3.

    Python 2.7 has no time.monotonic; the fixture only needs coarse
    deadlines, which oslo_utils gives on both.
    """
    from oslo_utils import timeutils
    return timeutils.now()


def _children_of(pid):
    return [child for child, _state in host.children(pid)]


class LockNamespace(object):
    """A private mount namespace with its own tmpfs on LOCK_DIR.

    ``start`` makes it when it can (root, ``unshare`` there) and says
    whether it did; ``wrap`` runs a command in it; ``end`` lets its
    holder go.
    """

    def __init__(self):
        self.holder = None

    @property
    def pid(self):
        """The holder's pid while there is one, else None."""
        return self.holder.pid if self.holder is not None else None

    def start(self):
        if os.geteuid() != 0:
            return False
        script = ('mkdir -p %s && mount -t tmpfs sheepdog-locks %s && '
                  'echo ready && exec cat >/dev/null' % (LOCK_DIR, LOCK_DIR))
        try:
            holder = subprocess.Popen(
                ['unshare', '--mount', '--propagation', 'private', 'sh',
                 '-c', script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, close_fds=True)
        except OSError:
            return False
        if holder.stdout.readline().strip() != b'ready':
            holder.stdin.close()
            holder.wait()
            return False
        self.holder = holder
        return True

    def end(self):
        if self.holder is not None:
            self.holder.stdin.close()
            self.holder.stdout.close()
            self.holder.stderr.close()
            self.holder.wait()
            self.holder = None

    def wrap(self, argv):
        if self.holder is None:
            return argv
        return ['nsenter', '--mount', '--target',
                str(self.holder.pid)] + argv


class Node(object):
    """One sheep: its port, zone, store directory and processes."""

    def __init__(self, cluster, index, port):
        self.cluster = cluster
        self.index = index
        self.port = port
        self.directory = os.path.join(cluster.root, 'node%d' % index)
        self.log_path = os.path.join(self.directory, 'sheep.log')
        self.process = None
        self.logger_pids = []

    @property
    def running(self):
        return self.process is not None and self.process.poll() is None

    def start(self, timeout=30):
        if not os.path.isdir(self.directory):
            os.makedirs(self.directory)
        argv = [os.path.join(self.cluster.prefix, 'sbin', 'sheep')] + (
            self.cluster.foreground_args()) + [
                '-c', 'local:%s' % self.cluster.shm_file,
                '-b', self.cluster.address, '-p', str(self.port),
                '-z', str(self.index), self.directory]
        argv = self.cluster.namespace.wrap(argv)
        with open(os.devnull, 'rb') as null_in:
            with open(os.path.join(self.cluster.root,
                                   'node%d.out' % self.index), 'ab') as out:
                self.process = subprocess.Popen(
                    argv, stdin=null_in, stdout=out, stderr=out,
                    close_fds=True)
        deadline = monotonic() + timeout
        while monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if host.port_open(self.port, self.cluster.address):
                self.logger_pids = _children_of(self.process.pid)
                return
            time.sleep(0.02)
        self.kill()
        raise ClusterError('sheep %d on port %d did not start; the end of '
                           '%s:\n%s' % (self.index, self.port, self.log_path,
                                        self.log_tail()))

    def kill(self, sig=signal.SIGKILL, wait=True):
        """Signal the sheep (SIGKILL: it dies mid-request) and reap it.

        Its forked logger ends with it (a parent-death signal); it is
        waited for too, so no process of the node outlives this call.
        """
        if self.process is None:
            return
        pids = [self.process.pid] + (
            self.logger_pids or _children_of(self.process.pid))
        try:
            os.kill(self.process.pid, sig)
        except OSError as exc:
            if exc.errno != errno.ESRCH:
                raise
        if not wait:
            return
        self.process.wait()
        deadline = monotonic() + 10
        for pid in pids[1:]:
            while host.alive(pid) and monotonic() < deadline:
                time.sleep(0.02)
            if host.alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.process = None

    def log_tail(self, lines=20):
        text = []
        for path in (self.log_path, os.path.join(
                self.cluster.root, 'node%d.out' % self.index)):
            try:
                with open(path) as log:
                    text.extend(log.read().splitlines()[-lines:])
            except (IOError, OSError):
                pass
        return '\n'.join(text) or '(no log)'
