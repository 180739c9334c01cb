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
import threading

import cachetools
import fixtures
import testtools

from ceilometer_metriccache import memo

# How long the first thread stays inside the cache waiting for a second
# one, once that one is on its way. Without the memo's lock the second
# one is there within a few bytecodes; with it the wait runs out.
HOLD = 1.0


class Crossing(object):
    """Counts the threads inside one LRUCache at a time.

    The thread set as ``holder`` stops inside its first cache operation
    until a second thread enters one too, or HOLD seconds after that
    thread said it was on its way (``coming``). A thread re-entering
    (an eviction's pop inside a set) counts once.
    """

    def __init__(self):
        self.holder = None
        self.coming = threading.Event()
        self.held = threading.Event()
        self.joined = threading.Event()
        self.most = 0
        self._depth = {}
        self._guard = threading.Lock()

    def enter(self):
        me = threading.current_thread()
        with self._guard:
            self._depth[me] = self._depth.get(me, 0) + 1
            inside = len(self._depth)
            self.most = max(self.most, inside)
            if inside > 1:
                self.joined.set()
            hold = me is self.holder and not self.held.is_set()
        if hold:
            self.held.set()
            self.coming.wait(60)
            self.joined.wait(HOLD)

    def leave(self):
        me = threading.current_thread()
        with self._guard:
            self._depth[me] -= 1
            if not self._depth[me]:
                del self._depth[me]


def crossing_lru(crossing):
    """An LRUCache class whose every operation is seen by crossing."""
    base = cachetools.LRUCache

    class CrossingLRU(base):
        def __contains__(self, key):
            crossing.enter()
            try:
                return super(CrossingLRU, self).__contains__(key)
            finally:
                crossing.leave()

        def __getitem__(self, key):
            crossing.enter()
            try:
                return super(CrossingLRU, self).__getitem__(key)
            finally:
                crossing.leave()

        def __setitem__(self, key, value):
            crossing.enter()
            try:
                super(CrossingLRU, self).__setitem__(key, value)
            finally:
                crossing.leave()

    return CrossingLRU


class TestBoundedMemo(testtools.TestCase):

    def test_never_holds_more_than_maxsize(self):
        m = memo.BoundedMemo(8)
        for i in range(1000):
            m.put('name%d' % i, i)
            self.assertLessEqual(len(m), 8)
        self.assertEqual(list(range(992, 1000)),
                         [m.get('name%d' % i) for i in range(992, 1000)])
        self.assertIsNone(m.get('name991'))

    def test_evicts_least_recently_used_one_at_a_time(self):
        m = memo.BoundedMemo(3)
        for key in 'abc':
            m.put(key, key.upper())
        self.assertEqual('A', m.get('a'))   # a is now the most recent
        m.put('d', 'D')                    # evicts b only, not everything
        self.assertEqual(3, len(m))
        self.assertIsNone(m.get('b'))
        self.assertEqual(['A', 'C', 'D'], [m.get(k) for k in 'acd'])

    def test_membership_is_not_a_use(self):
        m = memo.BoundedMemo(2)
        m.put('a', 1)
        m.put('b', 2)
        self.assertIn('a', m)
        m.put('c', 3)                      # a is still the oldest
        self.assertNotIn('a', m)
        self.assertEqual([2, 3], [m.get('b'), m.get('c')])

    def test_put_keeps_first_value(self):
        m = memo.BoundedMemo(4)
        first = {'unit': 'B'}
        self.assertIs(first, m.put('x', first))
        self.assertIs(first, m.put('x', {'unit': 'other'}))
        self.assertIs(first, m.get('x'))

    def test_get_default(self):
        m = memo.BoundedMemo(1)
        sentinel = object()
        self.assertIs(sentinel, m.get('missing', sentinel))

    def test_rejects_empty_bound(self):
        self.assertRaises(ValueError, memo.BoundedMemo, 0)

    def test_name_set_is_bounded_and_remembers_recent(self):
        names = memo.BoundedNameSet(5)
        for i in range(100):
            names.add('n%d' % i)
        self.assertEqual(5, len(names))
        self.assertIn('n99', names)
        self.assertNotIn('n0', names)

    def test_name_set_check_claims_the_name(self):
        """The first ``in`` sees a name missing; every later one sees it."""
        names = memo.BoundedNameSet(5)
        self.assertNotIn('metric.x', names)
        self.assertIn('metric.x', names)
        self.assertEqual(1, len(names))
        names.add('metric.x')
        self.assertIn('metric.x', names)
        self.assertEqual(1, len(names))

    def test_name_set_one_thread_sees_a_new_name_missing(self):
        """Upstream warns where ``in`` says missing: once, across threads."""
        names = memo.BoundedNameSet(50)
        missing = []

        def worker():
            for i in range(200):
                name = 'metric.%d' % (i % 40)
                if name not in names:
                    missing.append(name)
                    names.add(name)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(sorted('metric.%d' % i for i in range(40)),
                         sorted(missing))

    def most_threads_inside(self, operation):
        """Most threads at once in the cache: operation against a put."""
        crossing = Crossing()
        self.useFixture(fixtures.MonkeyPatch('cachetools.LRUCache',
                                             crossing_lru(crossing)))
        m = memo.BoundedMemo(4)
        m.put('a', 1)
        first = threading.Thread(target=operation, args=(m,))
        crossing.holder = first
        first.start()
        self.assertTrue(crossing.held.wait(60))

        def put():
            crossing.coming.set()
            m.put('b', 2)
        second = threading.Thread(target=put)
        second.start()
        first.join()
        second.join()
        return crossing.most

    def test_one_thread_at_a_time_in_the_cache(self):
        """Each operation holds the cache alone while a put waits.

        The first thread is stopped inside the LRUCache (a read reorders
        it, so no operation is harmless) while a second thread puts:
        with the lock the put waits outside; without it both are inside
        at once, every time, whatever the scheduler does.
        """
        for name, operation in (('get', lambda m: m.get('a')),
                                ('put', lambda m: m.put('c', 3)),
                                ('in', lambda m: 'a' in m)):
            self.assertEqual(1, self.most_threads_inside(operation), name)

    def test_thread_safe(self):
        m = memo.BoundedMemo(20)
        errors = []

        def worker(offset):
            try:
                for i in range(2000):
                    key = 'k%d' % ((i * 7 + offset) % 50)
                    got = m.get(key)
                    if got is None:
                        got = m.put(key, key.upper())
                    if got != key.upper():
                        errors.append((key, got))
                    if len(m) > m.maxsize:
                        errors.append(('size', len(m)))
            except Exception as exc:  # report, do not hide
                errors.append(exc)
        threads = [threading.Thread(target=worker, args=(n,))
                   for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        self.assertEqual(20, len(m))
