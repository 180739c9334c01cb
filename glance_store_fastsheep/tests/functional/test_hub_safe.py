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
"""hub_safe under the mode of the pass (threads, or eventlet)."""

import gc
import signal
import subprocess
import time

import fixtures
from oslotest import base as test_base

from glance_store_fastsheep import hub_safe
from glance_store_fastsheep.tests.functional import base


class Boom(Exception):
    pass


def _live_greenthreads():
    if not hub_safe.is_green():
        return 0
    from eventlet import greenthread
    return sum(1 for obj in gc.get_objects()
               if isinstance(obj, greenthread.GreenThread) and not obj.dead)


class InOrderTest(test_base.BaseTestCase):

    def setUp(self):
        super(InOrderTest, self).setUp()
        self.assertEqual(base.expected_mode() ==
                         'eventlet', hub_safe.is_green())
        self.before = _live_greenthreads()

    def test_jobs_run_in_order_and_off_the_hub_when_green(self):
        seen = []
        jobs = hub_safe.InOrder()
        for number in range(50):
            jobs.start(lambda n: seen.append((n, base.os_thread_id())),
                       number)
        jobs.settle()
        self.assertEqual(list(range(50)), [n for n, _thread in seen])
        threads = set(thread for _n, thread in seen)
        if hub_safe.is_green():
            self.assertNotIn(base.os_thread_id(), threads)
        else:
            self.assertEqual({base.os_thread_id()}, threads)
        self.assertEqual(self.before, _live_greenthreads())

    def test_an_error_reaches_the_caller_once_and_ends_the_run(self):
        ran = []

        def job(number):
            ran.append(number)
            if number == 1:
                raise Boom('job 1')

        jobs = hub_safe.InOrder()
        jobs.start(job, 0)
        if hub_safe.is_green():
            # Job 1 fails beside the caller: the next start raises it
            # and does not run job 2.
            jobs.start(job, 1)
            self.assertRaises(Boom, jobs.start, job, 2)
        else:
            self.assertRaises(Boom, jobs.start, job, 1)
        self.assertEqual([0, 1], ran)
        jobs.settle()  # the error was already reported
        self.assertEqual(self.before, _live_greenthreads())
        # The object is usable again after settle.
        jobs.start(job, 3)
        jobs.settle()
        self.assertEqual([0, 1, 3], ran)

    def test_settle_raises_the_last_jobs_error(self):
        def fail():
            raise Boom('last')

        jobs = hub_safe.InOrder()
        if hub_safe.is_green():
            jobs.start(fail)
            self.assertRaises(Boom, jobs.settle)
        else:
            # Inline: the error comes out of start itself.
            self.assertRaises(Boom, jobs.start, fail)
        jobs.settle()
        self.assertEqual(self.before, _live_greenthreads())


def stepping_wall_clock(step):
    """A time.time() that moves by step seconds more at every call.

    A wall clock stepped by NTP or a VM resume, made certain: whatever
    else reads the wall clock meanwhile, any two readings of a waiting
    loop lie more than step apart (ahead for step > 0, behind for < 0).
    """
    real = time.time
    calls = [0]

    def wall():
        calls[0] += 1
        return real() + step * calls[0]
    return wall


class WallClockTest(test_base.BaseTestCase):
    """The waits behind sheepdog_store_transfer_timeout ignore the wall clock.

    A transfer's child is waited on with hub_safe.wait_process (its exit
    after the last byte) and reaped with kill_and_reap; both take their
    deadlines from a monotonic clock. Each test moves the wall clock an
    hour per reading and shows the timeout neither fires early nor late.
    """

    def child(self, seconds):
        proc = subprocess.Popen(['sleep', str(seconds)])
        self.addCleanup(self._reap, proc)
        return proc

    @staticmethod
    def _reap(proc):
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def step_wall_clock(self, step):
        # Added after the children's clean-ups: undone before they run.
        self.useFixture(fixtures.MonkeyPatch('time.time',
                                             stepping_wall_clock(step)))

    def test_wall_clock_ahead_fires_no_early_timeout(self):
        proc = self.child(0.3)
        self.step_wall_clock(3600)
        # A wall-clock deadline would have passed at the first poll.
        self.assertEqual(0, hub_safe.wait_process(proc, timeout=60))

    def test_wall_clock_behind_holds_no_child_open(self):
        # The child outlives the timeout by far; a wall-clock deadline
        # would never come, and the wait would end only with the child,
        # returning its status instead of raising.
        proc = self.child(30)
        self.step_wall_clock(-3600)
        self.assertRaises(hub_safe.Timeout, hub_safe.wait_process, proc,
                          timeout=0.5)
        self.assertIsNone(proc.poll())

    def test_wall_clock_ahead_leaves_the_reaping_to_its_grace(self):
        proc = self.child(30)
        self.step_wall_clock(3600)
        # A wall-clock grace would have ended before the first poll and
        # left the killed child unreaped (None).
        self.assertEqual(-signal.SIGKILL,
                         hub_safe.kill_and_reap(proc, grace=60))
