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
"""Waiting that is right under both eventlet and native threads.

glance-api on Pike runs under eventlet with everything monkey-patched;
current glance runs under uWSGI threads without eventlet. A wait that
blocks the OS thread is correct in the second case and freezes every
request in the first (the hub never runs). The decision is made per call,
not at import time, because glance may import this module before it
monkey-patches.

Deadlines are taken from ``oslo_utils.timeutils.now()``, a monotonic
clock on every interpreter (the ``monotonic`` package on Python 2.7, as
in Pike's oslo.utils 3.28.4; ``time.monotonic`` on Python 3), so a step
of the wall clock (NTP, a VM resumed) neither fires a timeout early nor
holds a dead child open. Under Pike's eventlet 0.20.0 the hub's own
timers (``trampoline`` timeouts, ``eventlet.sleep``) still follow the
wall clock; eventlet 0.21.0 moved them to a monotonic clock.
"""

import errno
import select
import sys
import time

from oslo_utils import timeutils


class Timeout(Exception):
    """A pipe or a child stayed idle for longer than allowed."""


def _eventlet():
    return sys.modules.get('eventlet')


def is_green():
    """True when greenthreads share this OS thread (eventlet patched).

    What ``oslo_utils.eventletutils.is_monkey_patched('thread')`` answers,
    asked of eventlet directly: that module imports eventlet as it loads
    (into threaded glance-api processes that never use it), and oslo.utils
    8.1.0 deprecated it for removal, warning on every import.
    """
    eventlet = _eventlet()
    if eventlet is None:
        return False
    try:
        from eventlet import patcher
    except ImportError:
        return False
    return patcher.is_monkey_patched('thread')


def _real_sleep():
    eventlet = _eventlet()
    if eventlet is not None:
        from eventlet import patcher
        return patcher.original('time').sleep
    return time.sleep


def sleep(seconds):
    """Sleep without holding the hub (green) or the GIL (threads)."""
    if is_green():
        import eventlet
        eventlet.sleep(seconds)
    else:
        time.sleep(seconds)


def give_way():
    """One trip through the hub under eventlet; nothing otherwise.

    Called once per piece of work (one read-size piece hashed, written or
    yielded) so that other greenthreads run between pieces even when no
    pipe ever makes us wait.
    """
    if is_green():
        import eventlet
        eventlet.sleep(0)


def off_hub(func, *args, **kwargs):
    """func(*args, **kwargs) on an eventlet tpool thread when green.

    For work that holds its OS thread for milliseconds in C with the GIL
    released (hashing a piece): under eventlet the hub keeps running
    meanwhile; under native threads the calling thread already is the
    right place, and the call is made inline.
    """
    if is_green():
        from eventlet import tpool
        return tpool.execute(func, *args, **kwargs)
    return func(*args, **kwargs)


class InOrder(object):
    """Runs jobs one at a time, in the order given, beside the caller.

    Under eventlet each job runs on a tpool thread while the caller does
    its own hub-side work (a pipe write, the next read). One greenthread
    per run of jobs hands them to tpool, not one per job: a greenthread
    costs the hub a fresh frame stack (a mmap and munmap on Python 3.11)
    and a switch, for each 1 MiB piece of an upload. ``settle`` ends the
    run, so no greenthread outlives it. Without eventlet each job runs
    inline, at once.
    """

    def __init__(self):
        self._todo = None
        self._worker = None
        self._done = None

    def start(self, func, *args):
        """Wait for the previous job (raising its error), then start func."""
        self._wait_previous()
        if not is_green():
            func(*args)
            return
        import eventlet
        from eventlet import event
        if self._todo is None:
            from eventlet import queue
            self._todo = queue.LightQueue()
            self._worker = eventlet.spawn(self._serve, self._todo)
        self._done = event.Event()
        self._todo.put((func, args, self._done))
        # Let the worker hand func to tpool now, not when the caller next
        # yields: the caller's own work is what func should overlap.
        eventlet.sleep(0)

    @staticmethod
    def _serve(todo):
        while True:
            job = todo.get()
            if job is None:
                return
            func, args, done = job
            try:
                result = off_hub(func, *args)
            except BaseException:
                # The caller waits on done: it must hear of every error,
                # and of a GreenletExit that ends this greenthread too.
                error = sys.exc_info()
                done.send_exception(*error)
                if not isinstance(error[1], Exception):
                    raise
            else:
                done.send(result)
            # Not until the next job: its memory is the caller's again.
            job = func = args = result = error = None

    def wait(self):
        """Return once every job given has run; raise the last one's error."""
        self._wait_previous()

    def _wait_previous(self):
        done, self._done = self._done, None
        if done is not None:
            done.wait()

    def settle(self):
        """Return once every job has run; raise the last job's error.

        Also stops the run's greenthread, so call it when done (errors
        included) and before the object is dropped.
        """
        try:
            self._wait_previous()
        finally:
            todo, worker = self._todo, self._worker
            self._todo = self._worker = None
            if todo is not None:
                todo.put(None)
                worker.wait()


def wait_fd(fd, write=False, timeout=None):
    """Wait until fd is readable (or writable); Timeout after timeout s."""
    if is_green():
        from eventlet import hubs
        if write:
            hubs.trampoline(fd, write=True, timeout=timeout,
                            timeout_exc=Timeout)
        else:
            hubs.trampoline(fd, read=True, timeout=timeout,
                            timeout_exc=Timeout)
        return
    poller = select.poll()
    mask = select.POLLOUT if write else select.POLLIN
    poller.register(fd, mask | select.POLLERR | select.POLLHUP)
    millis = None if timeout is None else int(timeout * 1000)
    while True:
        try:
            if poller.poll(millis):
                return
            raise Timeout('fd %d not ready after %ss' % (fd, timeout))
        except (OSError, IOError, select.error) as exc:
            # Python 2.7 does not retry EINTR by itself.
            if getattr(exc, 'errno', exc.args[0]) != errno.EINTR:
                raise


def wait_process(proc, timeout):
    """Wait for a child's exit status without blocking the hub.

    Polls with a growing interval instead of ``Popen.wait(timeout)``:
    Python 2.7's ``wait`` has no timeout and a blocking ``waitpid`` would
    hold the hub. A child that has just closed its pipe is usually gone
    already, so the first poll answers.
    """
    deadline = timeutils.now() + timeout
    interval = 0.0005
    while True:
        status = proc.poll()
        if status is not None:
            return status
        if timeutils.now() >= deadline:
            raise Timeout('process %s still running after %ss'
                          % (proc.pid, timeout))
        sleep(interval)
        interval = min(interval * 2, 0.005)


def kill_and_reap(proc, grace=5.0):
    """SIGKILL a child if it still runs, then collect its exit status.

    Safe from a generator's close() run by the garbage collector: it never
    switches greenthreads (switching from a finalizer can land in the hub
    itself), it only sleeps the OS thread for a millisecond at a time, and
    a SIGKILLed process is gone within a few of them. A child stuck in the
    kernel past ``grace`` is left to subprocess' own reaping and logged by
    the caller through the returned None.
    """
    if proc.poll() is not None:
        return proc.returncode
    try:
        proc.kill()
    except OSError:
        pass
    nap = _real_sleep()
    deadline = timeutils.now() + grace
    while timeutils.now() < deadline:
        status = proc.poll()
        if status is not None:
            return status
        nap(0.001)
    return None
