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

import mmap
import os

from oslotest import base
import six

from glance_store_fastsheep.dog import fetch
from glance_store_fastsheep.dog import readahead
from glance_store_fastsheep.dog import readplan


class WindowsTest(base.BaseTestCase):

    def test_inner_boundaries_on_multiples(self):
        self.assertEqual([(3, 5), (8, 8), (16, 2)],
                         list(readplan.windows(3, 15, 8)))
        self.assertEqual([(0, 8)], list(readplan.windows(0, 8, 8)))
        self.assertEqual([], list(readplan.windows(5, 0, 8)))


class _Settings(object):
    read_window = 4 << 20
    read_concurrency = 4
    read_size = 1 << 20


class PlanTest(base.BaseTestCase):
    """A download's plan costs the same whatever the image size."""

    def test_count_windows_is_what_windows_yields(self):
        for offset in (0, 1, 7, 8, 9):
            for length in (0, 1, 7, 8, 9, 15, 16, 17, 40):
                self.assertEqual(
                    len(list(readplan.windows(offset, length, 8))),
                    readplan.count_windows(offset, length, 8))

    def test_plan_yields_the_windows(self):
        plan = readplan.Plan(3, 18, 8)
        self.assertEqual(3, len(plan))
        got = []
        while plan:
            got.append(plan.popleft())
        self.assertEqual(list(readplan.windows(3, 15, 8)), got)
        self.assertEqual(0, len(plan))

    def test_plan_of_the_rest_as_one_range(self):
        plan = readplan.Plan(3, 18, 8)
        plan.popleft()
        plan.whole()
        self.assertEqual(1, len(plan))
        self.assertEqual((8, 10), plan.popleft())
        self.assertFalse(plan)

    def test_image_of_2_64_bytes(self):
        # The size comes from the cluster: a sheep may say 2^64 - 1.
        # Planning 2^42 windows of 4 MiB must not list them.
        length = (1 << 64) - 1
        download = readahead._Download(
            None, _Settings(), '127.0.0.1', 7000, 'img', 0, length,
            lambda most: readplan.ReaderRamp(most, start=most))
        self.addCleanup(download.close)
        self.assertEqual(_Settings.read_concurrency, download.ramp.level)
        self.assertEqual(1 << 42, len(download.plan))
        self.assertEqual((0, _Settings.read_window), download.plan.popleft())
        download.one_reader_for_the_rest()
        self.assertEqual([(_Settings.read_window,
                           length - _Settings.read_window)],
                         [download.plan.popleft()])
        self.assertFalse(download.plan)


class BufferPoolTest(base.BaseTestCase):

    def test_buffers_are_reused(self):
        pool = fetch.BufferPool(4096)
        first = pool.get()
        pool.put(first)
        self.assertIs(first, pool.get())
        self.assertIsNot(first, pool.get())

    def test_buffers_take_reads_and_give_bytes(self):
        pool = fetch.BufferPool(16)
        buffer = pool.get()
        self.assertEqual(16, len(buffer))
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        os.write(write_fd, b'0123456789')
        os.close(write_fd)
        with os.fdopen(os.dup(read_fd), 'rb', 0) as source:
            count = source.readinto(memoryview(buffer)[:12])
        self.assertEqual(10, count)
        self.assertEqual(b'0123456789', memoryview(buffer)[:count].tobytes())

    def test_python3_buffers_are_mappings_of_their_own(self):
        # Not malloc blocks: those of short-lived worker threads stay in
        # per-thread arenas after the transfer frees them.
        buffer = fetch.BufferPool(1 << 20).get()
        if six.PY3:
            self.assertIsInstance(buffer, mmap.mmap)
        else:
            self.assertIsInstance(buffer, bytearray)


class _Clock(object):

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class ReaderRampTest(base.BaseTestCase):
    """Readers are added only while the consumer waits and a reader pays."""

    MIB = 1 << 20

    def setUp(self):
        super(ReaderRampTest, self).setUp()
        self.clock = _Clock()
        self.received = 0
        self.waited = 0.0
        self.idle = 0.0

    def run_sample(self, ramp, rate_mib_s, starved, seconds=0.1,
                   idle=None, others=0):
        """One sample at rate MiB/s; returns the level the ramp chose.

        The consumer waits for bytes a fraction ``starved`` of the time,
        each reader waits on its ``dog`` a fraction ``idle`` (default: the
        same); the other downloads run ``others`` readers.
        """
        idle = starved if idle is None else idle
        ramp.sample(self.received, self.waited, self.idle, others=others)
        self.clock.now += seconds
        self.received += int(rate_mib_s * self.MIB * seconds)
        self.waited += starved * seconds
        self.idle += idle * seconds * ramp.level
        return ramp.sample(self.received, self.waited, self.idle,
                           others=others)

    def test_one_reader_when_the_consumer_sets_the_pace(self):
        ramp = readplan.ReaderRamp(4, clock=self.clock)
        self.assertEqual(1, self.run_sample(ramp, 600, 0.05))
        self.assertTrue(ramp.settled)
        # Settled: no later sample changes it.
        self.assertEqual(1, self.run_sample(ramp, 100, 0.9))

    def test_one_reader_when_this_process_sets_the_pace(self):
        # The consumer waits, but the reader never waits on its dog: the
        # CPU of this process, not dog, is the limit (a hot cache).
        ramp = readplan.ReaderRamp(4, clock=self.clock)
        self.assertEqual(1, self.run_sample(ramp, 900, 0.6, idle=0.02))
        self.assertTrue(ramp.settled)

    def test_adds_readers_while_each_raises_the_rate(self):
        ramp = readplan.ReaderRamp(8, clock=self.clock)
        # One reader waiting on dog 60% of the time: 2.5 would be busy.
        self.assertEqual(3, self.run_sample(ramp, 300, 0.6))
        self.assertEqual(7, self.run_sample(ramp, 550, 0.6, idle=0.55))
        # Never beyond the configured maximum.
        self.assertEqual(8, self.run_sample(ramp, 800, 0.6))
        self.assertFalse(ramp.settled)
        self.assertEqual(8, self.run_sample(ramp, 1000, 0.6))
        self.assertTrue(ramp.settled)

    def test_as_many_readers_as_keep_dog_busy_at_once(self):
        # Waiting on dog 70% of the time: 3.3 readers would be busy.
        ramp = readplan.ReaderRamp(8, clock=self.clock)
        self.assertEqual(4, self.run_sample(ramp, 300, 0.7))
        ramp = readplan.ReaderRamp(3, clock=self.clock)
        self.assertEqual(3, self.run_sample(ramp, 300, 0.7))

    def test_readers_that_do_not_pay_are_given_back(self):
        ramp = readplan.ReaderRamp(8, clock=self.clock)
        self.assertEqual(3, self.run_sample(ramp, 300, 0.6))
        self.assertEqual(7, self.run_sample(ramp, 500, 0.6, idle=0.55))
        # The last four readers added under 20%: back to three, for good.
        self.assertEqual(3, self.run_sample(ramp, 560, 0.6))
        self.assertTrue(ramp.settled)
        self.assertEqual(3, self.run_sample(ramp, 100, 0.9))

    def test_short_samples_decide_nothing(self):
        # Too short in time; too few bytes.
        for rate, seconds in ((2000, 0.01), (10, 0.5)):
            ramp = readplan.ReaderRamp(4, clock=self.clock)
            self.assertEqual(1, self.run_sample(ramp, rate, 0.9, seconds))
            self.assertFalse(ramp.settled)

    def test_start_up_is_not_sampled(self):
        ramp = readplan.ReaderRamp(4, clock=self.clock)
        # Readers not all sending yet: no sample starts.
        ramp.sample(0, 0.0, 0.0, ready=False)
        self.clock.now += 1.0
        self.assertEqual(1, ramp.sample(0, 0.9, 0.9, ready=False))
        self.assertEqual(3, self.run_sample(ramp, 300, 0.6))

    def test_a_maximum_of_one_is_settled(self):
        ramp = readplan.ReaderRamp(1, clock=self.clock)
        self.assertTrue(ramp.settled)
        self.assertEqual(1, self.run_sample(ramp, 10, 1.0))

    def test_start_at_the_maximum_is_every_reader_settled(self):
        ramp = readplan.ReaderRamp(4, clock=self.clock, start=4)
        self.assertEqual((4, True), (ramp.level, ramp.settled))
        # Nothing the download does moves it: a fixed read-ahead.
        self.assertEqual(4, self.run_sample(ramp, 10, 1.0))
        self.assertEqual(4, self.run_sample(ramp, 300, 0.0))

    def test_start_is_at_most_the_maximum_and_at_least_one(self):
        for start, level in ((9, 3), (0, 1)):
            ramp = readplan.ReaderRamp(3, clock=self.clock, start=start)
            self.assertEqual(level, ramp.level)
            self.assertEqual(level == 3, ramp.settled)

    def test_a_start_below_the_maximum_still_ramps(self):
        ramp = readplan.ReaderRamp(8, clock=self.clock, start=2)
        self.assertFalse(ramp.settled)
        # Two readers waiting 70% of the time: 2 / 0.3 = 6.7 keep dog
        # busy.
        self.assertEqual(7, self.run_sample(ramp, 300, 0.7))

    def test_hold_settles_where_readers_run(self):
        ramp = readplan.ReaderRamp(4, clock=self.clock)
        self.assertEqual(3, self.run_sample(ramp, 300, 0.6))
        ramp.hold(1)
        self.assertTrue(ramp.settled)
        self.assertEqual(1, self.run_sample(ramp, 100, 0.9))

    def test_no_reader_while_other_downloads_keep_the_cluster_busy(self):
        busy = readplan.ReaderRamp.BUSY_READERS
        ramp = readplan.ReaderRamp(4, clock=self.clock)
        # What would add two readers on an idle cluster (see above).
        self.assertEqual(1, self.run_sample(ramp, 300, 0.6, others=busy))
        self.assertTrue(ramp.settled)

    def test_no_more_readers_once_others_keep_it_busy(self):
        busy = readplan.ReaderRamp.BUSY_READERS
        ramp = readplan.ReaderRamp(8, clock=self.clock)
        self.assertEqual(3, self.run_sample(ramp, 300, 0.6,
                                            others=busy - 1))
        # Other downloads started readers meanwhile: keep the three.
        self.assertEqual(3, self.run_sample(ramp, 550, 0.6, idle=0.55,
                                            others=busy))
        self.assertTrue(ramp.settled)
