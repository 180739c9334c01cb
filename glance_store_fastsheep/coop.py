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
"""

import errno
import select
import sys
import time


class Timeout(Exception):
    """A pipe or a child stayed idle for longer than allowed."""


def _eventlet():
    return sys.modules.get('eventlet')


def is_green():
    """True when greenthreads share this OS thread (eventlet patched)."""
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


class _Done(object):
    """The already finished job ``beside`` returns under native threads."""

    def wait(self):
        return None


DONE = _Done()


def beside(func, *args):
    """Start func(*args) off the hub; ``.wait()`` on the result joins it.

    Lets the caller do its own hub-side work (a pipe write) while func
    runs on a tpool thread. Without eventlet func runs inline, now.
    """
    if is_green():
        import eventlet
        job = eventlet.spawn(off_hub, func, *args)
        # Hand func to the tpool thread now, not when the caller next
        # yields: the caller's own work is what func should overlap.
        eventlet.sleep(0)
        return job
    func(*args)
    return DONE


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
    deadline = time.time() + timeout
    interval = 0.0005
    while True:
        status = proc.poll()
        if status is not None:
            return status
        if time.time() >= deadline:
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
    deadline = time.time() + grace
    while time.time() < deadline:
        status = proc.poll()
        if status is not None:
            return status
        nap(0.001)
    return None
