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

import eventlet
import testtools

from ceilometer_metriccache import memo


class TestBoundedMemo(testtools.TestCase):

    def test_never_holds_more_than_maxsize(self):
        m = memo.BoundedMemo(8)
        for i in range(1000):
            m.put('name%d' % i, i)
            self.assertLessEqual(len(m), 8)
        self.assertEqual(['name%d' % i for i in range(992, 1000)], m.keys())

    def test_evicts_least_recently_used_one_at_a_time(self):
        m = memo.BoundedMemo(3)
        for key in 'abc':
            m.put(key, key.upper())
        self.assertEqual('A', m.get('a'))   # a is now the most recent
        m.put('d', 'D')                    # evicts b only, not everything
        self.assertEqual(['c', 'a', 'd'], m.keys())
        self.assertIsNone(m.get('b'))
        self.assertEqual('C', m.get('c'))

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

    def test_name_set_first_check_claims_the_name(self):
        """Upstream checks, warns, then adds: one warning per name.

        The real agent's threads raced between the check and the add and
        warned twice; the first check now claims the name.
        """
        names = memo.BoundedNameSet(5)
        barrier = threading.Barrier(8)
        missing = []

        def check():
            barrier.wait()
            if 'metric.x' not in names:
                missing.append(1)
            names.add('metric.x')

        threads = [threading.Thread(target=check) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([1], missing)
        self.assertIn('metric.x', names)

    def _hammer(self, spawn, join, m, workers=8, rounds=2000):
        errors = []

        def worker(offset):
            try:
                for i in range(rounds):
                    key = 'k%d' % ((i * 7 + offset) % 50)
                    got = m.get(key)
                    if got is None:
                        got = m.put(key, key.upper())
                    if got != key.upper():
                        errors.append((key, got))
                    if len(m) > m.maxsize:
                        errors.append(('size', len(m)))
                    if i % 100 == 0:
                        eventlet.sleep(0) if join is None else None
            except Exception as exc:  # report, do not hide
                errors.append(exc)
        handles = [spawn(worker, n) for n in range(workers)]
        for handle in handles:
            (join or (lambda h: h.wait()))(handle)
        return errors

    def test_thread_safe(self):
        m = memo.BoundedMemo(20)

        def spawn(fn, arg):
            t = threading.Thread(target=fn, args=(arg,))
            t.start()
            return t
        errors = self._hammer(spawn, lambda t: t.join(), m)
        self.assertEqual([], errors)
        self.assertEqual(20, len(m))

    def test_greenthread_safe(self):
        m = memo.BoundedMemo(20)
        errors = self._hammer(eventlet.spawn, None, m)
        self.assertEqual([], errors)
        self.assertEqual(20, len(m))
