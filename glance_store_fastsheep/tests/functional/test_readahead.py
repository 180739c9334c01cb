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
"""Parallel, object-aligned read-ahead (sheepdog_store_read_concurrency)."""

import os
import sys
import threading
import time

import fixtures
from glance_store import exceptions

from glance_store_fastsheep import budget
from glance_store_fastsheep.dog import fetch
from glance_store_fastsheep.dog import readahead
from glance_store_fastsheep.dog import readplan
from glance_store_fastsheep import stream as stream_mod
from glance_store_fastsheep.tests.functional import base
from glance_store_fastsheep.tests.unit import base as unit_base

OBJECT = 4 * base.MIB
WINDOW = 2 * OBJECT  # sheepdog_store_read_window = 8 (MiB)


class _AllReaders(readplan.ReaderRamp):
    """The configured maximum from the start: the windows, not timing."""

    def __init__(self, maximum, clock=None):
        super(_AllReaders, self).__init__(maximum, start=maximum)


class _OneReader(readplan.ReaderRamp):
    """Settled at one reader from the start, as on a hot cache."""

    def __init__(self, maximum, clock=None):
        super(_OneReader, self).__init__(maximum)
        self.settled = True


class _SecondReaderAtOnce(readplan.ReaderRamp):
    """Two readers from the first sample on: the first reader is cut."""

    def sample(self, received, waited, idle, ready=True, others=0):
        self.level, self.settled = 2, True
        return self.level


def _hold_budget(test, size):
    """Hold size bytes of the budget, as another download would.

    Returns the function that gives them back (also run at cleanup, once).
    """
    test.assertTrue(budget.READ_MEMORY.take(size, size))
    held = [size]

    def give_back():
        while held:
            budget.READ_MEMORY.give(held.pop())
    test.addCleanup(give_back)
    return give_back


def _other_readers(test, count):
    """Count readers of another download; returns their end (run once)."""
    running = []
    for _reader in range(count):
        budget.READERS.take(1)
        running.append(1)

    def done():
        while running:
            running.pop()
            budget.READERS.give(1)
    test.addCleanup(done)
    return done


class _Base(base.FunctionalTestCase):

    READ_SIZE = 256 * base.KIB
    RAMP = None

    def make_conf(self, **overrides):
        overrides.setdefault('sheepdog_store_read_concurrency', 3)
        overrides.setdefault('sheepdog_store_read_window', 8)
        return super(_Base, self).make_conf(**overrides)

    def setUp(self):
        super(_Base, self).setUp()
        if self.RAMP is not None:
            self.useFixture(fixtures.MockPatchObject(readplan, 'ReaderRamp',
                                                     self.RAMP))
        self.data = os.urandom(5 * WINDOW + OBJECT + 12345)
        self.sheep.create_vdi('img', self.data)

    def wrapped_dog(self, name, prelude):
        """A `dog` that runs prelude (os, random, sys, time imported)."""
        return unit_base.write_script(
            os.path.join(self.sheep.root, name),
            '#!%s\nimport os, random, sys, time\n%s'
            'os.execv(%r, [%r] + sys.argv[1:])\n'
            % (sys.executable, prelude, self.sheep.dog_path,
               self.sheep.dog_path))

    def reads(self):
        return [(int(c[-2]), int(c[-1])) for c in self.sheep.calls('read')]

    def assertNothingLeft(self, vdis=()):
        """Nothing left (see base), and the read-ahead budget whole."""
        super(_Base, self).assertNothingLeft(vdis)
        self.assertEqual((0, 0), (budget.READ_MEMORY.held,
                                  budget.READERS.held))


class ReadAheadTest(_Base):
    """The window machinery, with every configured reader from the start."""

    RAMP = _AllReaders

    def test_windows_helper(self):
        self.assertEqual([(3, 8 - 3), (8, 8), (16, 2)],
                         list(readplan.windows(3, 15, 8)))
        self.assertEqual([(0, 8)], list(readplan.windows(0, 8, 8)))
        self.assertEqual([], list(readplan.windows(5, 0, 8)))

    def test_whole_image_in_order(self):
        stream, length = self.sd.get(self.location('img'))
        self.assertIs(readahead.pieces, stream.pieces)
        self.assertEqual(self.data, b''.join(stream))
        self.assertEqual(len(self.data), length)
        reads = sorted(self.reads())
        # Object-aligned windows, each asked for exactly its bytes.
        self.assertEqual(list(readplan.windows(0, len(self.data), WINDOW)),
                         reads)
        for offset, _length in reads:
            self.assertEqual(0, offset % OBJECT)
        self.assertNothingLeft(['img'])

    def test_ranges_inside_objects(self):
        for offset, length in ((OBJECT + 3, 2 * WINDOW + 5),
                               (WINDOW - 1, WINDOW + 2),
                               (7, len(self.data) - 9)):
            self.assertEqual(self.data[offset:offset + length],
                             self.read_all('img', offset, length))
        self.assertNothingLeft(['img'])

    def test_more_readers_than_windows(self):
        sd = self.make_store(self.make_conf(
            sheepdog_store_read_concurrency=50))
        stream, _length = sd.get(self.location('img'), offset=5,
                                 chunk_size=2 * WINDOW)
        self.assertEqual(self.data[5:5 + 2 * WINDOW], b''.join(stream))
        self.assertEqual(3, len(self.reads()))
        self.assertNothingLeft(['img'])

    def test_order_under_random_window_delays(self):
        # Each CLI call sleeps a random 0-60 ms before it starts, so the
        # windows finish out of order.
        jitter = self.wrapped_dog('jittery-dog',
                                  'time.sleep(random.uniform(0, 0.06))\n')
        sd = self.make_store(self.make_conf(
            sheepdog_store_command=jitter,
            sheepdog_store_read_concurrency=4))
        for _attempt in range(3):
            self.assertEqual(self.data, b''.join(
                sd.get(self.location('img'))[0]))
        self.assertNothingLeft(['img'])

    def test_failure_in_a_middle_window(self):
        bad = 2 * WINDOW + OBJECT + 100
        self.sheep.set_knobs(fail_at_offset=bad)
        stream, _length = self.sd.get(self.location('img'))
        received = []
        exc = self.assertRaises(exceptions.BackendException,
                                lambda: received.extend(stream))
        self.assertIn('I/O error', str(exc))
        got = b''.join(received)
        # In order and correct up to the failure, never a byte past it.
        self.assertLessEqual(len(got), bad)
        self.assertEqual(self.data[:len(got)], got)
        self.assertNothingLeft(['img'])

    def test_short_window_fails(self):
        self.sheep.set_knobs(short_bytes=WINDOW - 1)
        stream, _length = self.sd.get(self.location('img'))
        exc = self.assertRaises(exceptions.BackendException, b''.join,
                                stream)
        self.assertIn('%d of %d' % (WINDOW - 1, WINDOW), str(exc))
        self.assertNothingLeft(['img'])

    def test_early_close_kills_every_child(self):
        # Every window but the first takes 30 s to start: they are all
        # still running when the consumer goes away.
        slow = self.wrapped_dog(
            'slow-dog', 'if "read" in sys.argv and sys.argv[-2] != "0":\n'
                        '    time.sleep(30)\n')
        sd = self.make_store(self.make_conf(sheepdog_store_command=slow))
        stream, _length = sd.get(self.location('img'))
        # Should an assertion fail first, the children must not outlive
        # this test and leak into the next one's checks.
        self.addCleanup(stream.close)
        iterator = iter(stream)
        self.assertEqual(self.data[:self.READ_SIZE], next(iterator))
        # The two slow windows at least (the head's child may be done).
        self.assertLessEqual(2, len(base.children()))
        stream.close()
        self.assertNothingLeft(['img'])

    def test_dropped_iterator_kills_every_child(self):
        stream, _length = self.sd.get(self.location('img'))
        next(iter(stream))
        del stream
        self.assertNothingLeft(['img'])

    def test_single_reader_is_the_plain_stream(self):
        sd = self.make_store(self.make_conf(
            sheepdog_store_read_concurrency=1))
        stream, _length = sd.get(self.location('img'))
        self.assertIsNot(readahead.pieces, stream.pieces)
        self.assertEqual(self.data, b''.join(stream))
        self.assertEqual([(0, len(self.data))], self.reads())
        self.assertNothingLeft(['img'])


class OneReaderTest(_Base):
    """Once one reader is enough, one process reads the rest."""

    RAMP = _OneReader

    def test_one_process_for_the_rest(self):
        stream, _length = self.sd.get(self.location('img'))
        self.assertIs(readahead.pieces, stream.pieces)
        self.assertEqual(self.data, b''.join(stream))
        # Settled before the first window: one process for all of it.
        self.assertEqual([(0, len(self.data))], self.reads())
        self.assertNothingLeft(['img'])

    def test_one_reader_reads_in_the_consumers_thread(self):
        stream, _length = self.sd.get(self.location('img'))
        self.addCleanup(stream.close)
        iterator = iter(stream)
        got = [next(iterator)]
        # The consumer stalls: nothing reads ahead of it (no worker, no
        # queue), so what was read from the pipe is what was yielded.
        time.sleep(0.2)
        head = stream._gen.gi_frame.f_locals['download'].fetches[0]
        self.assertIsInstance(head, fetch.InlineFetch)
        self.assertEqual(len(self.data), head.length)
        self.assertEqual(len(got[0]), head.delivered)
        self.assertEqual([], [t.name for t in threading.enumerate()
                              if t.name.startswith('fastsheep-window')])
        got.extend(iterator)
        self.assertEqual(self.data, b''.join(got))
        self.assertNothingLeft(['img'])


class RampTest(_Base):
    """The real ramp, where each object costs the readers 40 ms."""

    def test_readers_added_while_the_consumer_waits(self):
        self.sheep.set_knobs(object_service_ms=40)
        stream, _length = self.sd.get(self.location('img'))
        self.assertEqual(self.data, b''.join(stream))
        reads = sorted(self.reads())
        # One reader for the whole range first; once a second one paid,
        # it was cut at a window boundary and the windows after it went
        # to one process each.
        self.assertEqual((0, len(self.data)), reads[0])
        cut = reads[1][0]
        self.assertEqual(0, cut % WINDOW)
        self.assertEqual(list(readplan.windows(cut, len(self.data) - cut,
                                               WINDOW)), reads[1:])
        self.assertLessEqual(2, len(reads[1:]))
        self.assertNothingLeft(['img'])


class RampArgumentTest(_Base):
    """readahead.pieces' make_ramp argument, where Store.get is not used."""

    def stream(self, ramp=None):
        return stream_mod.Stream(
            readahead.pieces, self.sd.client.dog, self.sd.settings,
            self.sheep.address, self.sheep.port, 'img', 0, len(self.data),
            ramp)

    def window_offsets(self, stream):
        fetches = stream._gen.gi_frame.f_locals['download'].fetches
        return [(type(f).__name__, f.offset) for f in fetches]

    def test_every_reader_from_the_start(self):
        stream = self.stream(
            lambda most: readplan.ReaderRamp(most, start=most))
        self.addCleanup(stream.close)
        iterator = iter(stream)
        got = [next(iterator)]
        # Before the first piece was yielded: the three configured
        # readers, one window each, with no sample taken.
        self.assertEqual([('WindowFetch', 0), ('WindowFetch', WINDOW),
                          ('WindowFetch', 2 * WINDOW)],
                         self.window_offsets(stream))
        got.extend(iterator)
        self.assertEqual(self.data, b''.join(got))
        self.assertEqual(list(readplan.windows(0, len(self.data), WINDOW)),
                         sorted(self.reads()))
        self.assertNothingLeft(['img'])

    def test_the_default_starts_with_one_reader(self):
        stream = self.stream()
        self.addCleanup(stream.close)
        iterator = iter(stream)
        got = [next(iterator)]
        self.assertEqual([('InlineFetch', 0)], self.window_offsets(stream))
        got.extend(iterator)
        self.assertEqual(self.data, b''.join(got))
        self.assertNothingLeft(['img'])

    def test_the_ramp_is_given_the_most_readers(self):
        asked = []

        def ramp(most):
            asked.append(most)
            return readplan.ReaderRamp(most, start=2)
        stream = stream_mod.Stream(
            readahead.pieces, self.sd.client.dog, self.sd.settings,
            self.sheep.address, self.sheep.port, 'img', 0, 2 * WINDOW, ramp)
        self.assertEqual(self.data[:2 * WINDOW], b''.join(stream))
        # Three configured, but two windows: at most two readers.
        self.assertEqual([2], asked)
        self.assertEqual([(0, WINDOW), (WINDOW, WINDOW)],
                         sorted(self.reads()))
        self.assertNothingLeft(['img'])


class CutTest(_Base):
    """The whole-range reader is cut at a window boundary for a second."""

    RAMP = _SecondReaderAtOnce

    def test_cut_then_windows_in_order(self):
        stream, _length = self.sd.get(self.location('img'))
        self.assertEqual(self.data, b''.join(stream))
        reads = sorted(self.reads())
        self.assertEqual((0, len(self.data)), reads[0])
        cut = reads[1][0]
        self.assertEqual(WINDOW, cut)
        self.assertEqual(list(readplan.windows(cut, len(self.data) - cut,
                                               WINDOW)), reads[1:])
        self.assertNothingLeft(['img'])

    def test_short_output_before_the_cut_fails(self):
        # Every dog ends silently after half a window: the first reader
        # stops short of its cut, which must fail, not leave a gap.
        self.sheep.set_knobs(short_bytes=WINDOW // 2)
        stream, _length = self.sd.get(self.location('img'))
        received = []
        self.assertRaises(exceptions.BackendException,
                          lambda: received.extend(stream))
        got = b''.join(received)
        self.assertLessEqual(len(got), WINDOW // 2)
        self.assertEqual(self.data[:len(got)], got)
        self.assertNothingLeft(['img'])

    def test_no_cut_without_a_whole_window_after_it(self):
        # Less than a window past the first boundary: a second reader
        # could not pay for its start, so the first reads it all.
        data = os.urandom(WINDOW + OBJECT)
        self.sheep.create_vdi('short', data)
        stream, _length = self.sd.get(self.location('short'))
        self.assertIs(readahead.pieces, stream.pieces)
        self.assertEqual(data, b''.join(stream))
        self.assertEqual([(0, len(data))], self.reads())
        self.assertNothingLeft(['img', 'short'])


class BudgetTest(_Base):
    """Windows come from the process's budget, which comes back whole."""

    RAMP = _AllReaders

    def budget_conf(self, mib, **overrides):
        return self.make_store(self.make_conf(
            sheepdog_store_readahead_budget=mib, **overrides))

    def read_checking_budget(self, sd, limit, name='img'):
        """The image, checking the budget's holdings after every piece."""
        got = []
        held = []
        for piece in sd.get(self.location(name))[0]:
            got.append(piece)
            held.append(budget.READ_MEMORY.held)
            self.assertLessEqual(budget.READ_MEMORY.held, limit)
        return b''.join(got), held

    def test_end_of_image_gives_the_budget_back(self):
        got, held = self.read_checking_budget(self.sd, 256 * base.MIB)
        self.assertEqual(self.data, got)
        # Three windows in flight (read concurrency 3).
        self.assertEqual(3 * WINDOW, max(held))
        self.assertNothingLeft(['img'])

    def test_windows_only_from_the_budget(self):
        # Two windows' worth: never a third window in flight.
        sd = self.budget_conf(2 * WINDOW // base.MIB)
        got, held = self.read_checking_budget(sd, 2 * WINDOW)
        self.assertEqual(self.data, got)
        self.assertEqual(2 * WINDOW, max(held))
        self.assertEqual(list(readplan.windows(0, len(self.data), WINDOW)),
                         sorted(self.reads()))
        self.assertNothingLeft(['img'])

    def test_no_budget_is_the_plain_stream(self):
        # Less than a window: every download reads as the plain stream,
        # in the consumer's thread, without waiting for budget.
        sd = self.budget_conf(WINDOW // base.MIB - 1)
        stream, _length = sd.get(self.location('img'))
        iterator = iter(stream)
        got = [next(iterator)]
        head = stream._gen.gi_frame.f_locals['download'].fetches[0]
        self.assertIsInstance(head, fetch.InlineFetch)
        got.extend(iterator)
        self.assertEqual(self.data, b''.join(got))
        self.assertEqual([(0, len(self.data))], self.reads())
        self.assertNothingLeft(['img'])

    def test_budget_used_by_others_is_the_plain_stream(self):
        # Another download holds it all: this one neither waits nor
        # fails, and takes nothing.
        limit = 256 * base.MIB
        give_back = _hold_budget(self, limit)
        got, held = self.read_checking_budget(self.sd, limit)
        self.assertEqual(self.data, got)
        self.assertEqual({limit}, set(held))
        self.assertEqual([(0, len(self.data))], self.reads())
        give_back()
        self.assertNothingLeft(['img'])

    def test_one_window_of_budget_then_one_reader(self):
        # The budget runs out after the first window: that window is
        # read, then one reader reads the rest.
        sd = self.budget_conf(WINDOW // base.MIB)
        got, held = self.read_checking_budget(sd, WINDOW)
        self.assertEqual(self.data, got)
        reads = sorted(self.reads())
        self.assertEqual((0, WINDOW), reads[0])
        self.assertEqual((WINDOW, len(self.data) - WINDOW), reads[1])
        self.assertEqual(2, len(reads))
        self.assertNothingLeft(['img'])

    def test_error_gives_the_budget_back(self):
        self.sheep.set_knobs(fail_at_offset=2 * WINDOW + 100)
        stream, _length = self.sd.get(self.location('img'))
        self.assertRaises(exceptions.BackendException, b''.join, stream)
        self.assertNothingLeft(['img'])

    def test_close_after_the_first_piece_gives_the_budget_back(self):
        # glance closes the generator when its client hangs up.
        stream, _length = self.sd.get(self.location('img'))
        self.addCleanup(stream.close)
        iterator = iter(stream)
        self.assertEqual(self.data[:self.READ_SIZE], next(iterator))
        self.assertEqual(3 * WINDOW, budget.READ_MEMORY.held)
        self.assertLessEqual(1, budget.READERS.held)
        stream.close()
        self.assertNothingLeft(['img'])

    def test_dropped_iterator_gives_the_budget_back(self):
        stream, _length = self.sd.get(self.location('img'))
        next(iter(stream))
        del stream
        self.assertNothingLeft(['img'])

    def test_timeout_gives_the_budget_back(self):
        # Every window but the first sends nothing for longer than the
        # transfer timeout.
        stall = self.wrapped_dog(
            'stalling-dog', 'if "read" in sys.argv and sys.argv[-2] != "0":\n'
                            '    time.sleep(30)\n')
        sd = self.make_store(self.make_conf(
            sheepdog_store_command=stall,
            sheepdog_store_transfer_timeout=1))
        stream, _length = sd.get(self.location('img'))
        exc = self.assertRaises(exceptions.BackendException, b''.join,
                                stream)
        self.assertIn('sent nothing for 1', str(exc))
        self.assertNothingLeft(['img'])

    def test_concurrent_downloads_share_the_budget(self):
        # Five downloads at once (threads, or greenthreads under
        # eventlet) with room for three windows between them: each is
        # byte-exact, the budget is never exceeded, and it comes back.
        limit = 3 * WINDOW
        sd = self.budget_conf(limit // base.MIB)
        results = {}

        def download_one(index):
            try:
                results[index] = self.read_checking_budget(sd, limit)[0]
            except Exception as exc:  # reported below, in the test
                results[index] = exc

        threads = [threading.Thread(target=download_one, args=(index,))
                   for index in range(5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual([self.data] * 5,
                         [results.get(index) for index in range(5)])
        self.assertNothingLeft(['img'])


class BusyClusterTest(_Base):
    """The real ramp adds no reader while other downloads keep it busy."""

    def test_no_second_reader_beside_busy_readers(self):
        self.sheep.set_knobs(object_service_ms=40)
        # The readers of other downloads of this process, as counted.
        others = _other_readers(self, readplan.ReaderRamp.BUSY_READERS)
        stream, _length = self.sd.get(self.location('img'))
        self.assertEqual(self.data, b''.join(stream))
        # What RampTest shows cut into windows stays one reader here.
        self.assertEqual([(0, len(self.data))], self.reads())
        others()
        self.assertNothingLeft(['img'])
