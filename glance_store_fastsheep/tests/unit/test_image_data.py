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
"""image_data: what glance hands an upload (Source) and its hashes (Digest)."""

import hashlib
import io
import os
import threading

from oslotest import base

from glance_store_fastsheep import image_data
from glance_store_fastsheep.tests import green_child


class SourceTest(base.BaseTestCase):
    """image_data.Source: an iterator's items as pieces of at most size."""

    def _pieces(self, items, size):
        source = image_data.Source(iter(items))
        pieces = []
        for piece in iter(lambda: source.read(size), b''):
            pieces.append(piece)
        self.assertEqual(b'', source.read(size))
        return pieces

    def test_items_are_cut_in_order(self):
        data = os.urandom(10 * 1000 + 7)
        items = [data[:1], b'', data[1:9999], data[9999:]]
        pieces = self._pieces(items, 1000)
        self.assertEqual(data, b''.join(pieces))
        self.assertTrue(all(0 < len(piece) <= 1000 for piece in pieces))
        # Cut where an item ends, never joined across two items.
        self.assertEqual([1, 1000, 1000], [len(p) for p in pieces[:3]])

    def test_an_item_that_fits_is_passed_on_as_is(self):
        item = os.urandom(100)
        self.assertIs(item, self._pieces([item], 1000)[0])

    def test_a_file_is_read_as_it_answers(self):
        source = image_data.Source(io.BytesIO(b'abcdef'))
        self.assertEqual([b'abcd', b'ef', b''],
                         [source.read(4) for _ in range(3)])


class Recording(object):
    """A hash that notes what it was given and on which thread."""

    def __init__(self, algo):
        self.hasher = hashlib.new(algo)
        self.pieces = []
        self.threads = set()

    def update(self, piece):
        self.threads.add(threading.current_thread().name)
        self.pieces.append(piece)
        self.hasher.update(piece)


class Broken(object):
    def update(self, piece):
        raise ValueError('verifier refused the data')


class DigestWorkersTest(base.BaseTestCase):
    """Digest.feed: a worker per hash, an object at a time (threads)."""

    def _objects(self, count, pieces=3):
        return [[os.urandom(1000 + index) for index in range(pieces)]
                for _ in range(count)]

    def test_every_hash_sees_every_piece_in_order(self):
        hashers = [Recording('md5'), Recording('sha512')]
        verifier = Recording('sha256')
        digest = image_data.Digest(hashers, verifier)
        objects = self._objects(4)
        for pieces in objects:
            for piece in pieces:
                digest.feed(piece)
            digest.end_object()
        digest.settle()
        data = b''.join(b''.join(pieces) for pieces in objects)
        for hasher, algo in zip(hashers + [verifier],
                                ('md5', 'sha512', 'sha256')):
            self.assertEqual(hashlib.new(algo, data).hexdigest(),
                             hasher.hasher.hexdigest())
        # One thread each, none of them the feeder's.
        threads = [hasher.threads for hasher in hashers + [verifier]]
        self.assertEqual([1, 1, 1], [len(names) for names in threads])
        self.assertEqual(3, len(set.union(*threads)))
        self.assertNotIn(threading.current_thread().name,
                         set.union(*threads))

    def test_hashing_runs_at_most_one_object_behind(self):
        hasher = Recording('md5')
        digest = image_data.Digest([hasher], None)
        objects = self._objects(3)
        for number, pieces in enumerate(objects, 1):
            for piece in pieces:
                digest.feed(piece)
            digest.end_object()
            # Every object but the last is hashed once it is ended.
            self.assertEqual(number - 1, digest.objects_hashed())
            done = sum(len(p) for p in objects[:number - 1])
            self.assertGreaterEqual(len(hasher.pieces), done)
        digest.catch_up()
        self.assertEqual(3, digest.objects_hashed())
        self.assertEqual(9, len(hasher.pieces))
        digest.settle()
        self.assertEqual(3, digest.objects_hashed())

    def test_no_hash_means_every_object_is_hashed(self):
        digest = image_data.Digest([], None)
        digest.feed(b'x')
        digest.end_object()
        self.assertEqual(1, digest.objects_hashed())
        digest.settle()

    def test_a_hash_error_is_raised_by_settle_and_ends_the_threads(self):
        before = set(threading.enumerate())
        digest = image_data.Digest([hashlib.md5()], Broken())
        for piece in self._objects(1)[0]:
            digest.feed(piece)
        digest.end_object()
        workers = set(threading.enumerate()) - before
        self.assertEqual(2, len(workers))
        exc = self.assertRaises(ValueError, digest.settle)
        self.assertIn('verifier refused', str(exc))
        self.assertEqual([], [t for t in workers if t.is_alive()])


def _live_greenlets():
    import gc

    import greenlet
    return len([thing for thing in gc.get_objects()
                if isinstance(thing, greenlet.greenlet) and thing
                and not thing.dead])


def green_digest():
    """DigestGreenTest's digest, in a monkey-patched child (green_child)."""
    from eventlet import patcher
    real_thread = patcher.original('threading')
    hub_thread = real_thread.current_thread().ident
    threads = set()

    class Noting(object):
        def __init__(self, algo):
            self.hasher = hashlib.new(algo)

        def update(self, piece):
            threads.add(real_thread.current_thread().ident)
            self.hasher.update(piece)

    md5, sha512 = Noting('md5'), Noting('sha512')
    digest = image_data.Digest([md5, sha512], None)
    pieces = [os.urandom(1000 + index) for index in range(12)]
    ticker = green_child.Ticker()
    behind = []
    for number in range(1, 5):
        for piece in pieces[3 * (number - 1):3 * number]:
            digest.feed(piece)
        digest.end_object()
        behind.append(number - digest.objects_hashed())
    digest.settle()
    ticks = ticker.stop()
    data = b''.join(pieces)
    live = _live_greenlets()
    failing = image_data.Digest([hashlib.md5()], Broken())
    failing.feed(b'x')
    failing.end_object()
    # Its last object starts after the error of the one before.
    failing.feed(b'y')
    try:
        failing.settle()
        error = None
    except ValueError as exc:
        error = str(exc)
    ended = _live_greenlets() == live
    return {'md5': md5.hasher.hexdigest() == hashlib.md5(data).hexdigest(),
            'sha512': (sha512.hasher.hexdigest() ==
                       hashlib.sha512(data).hexdigest()),
            'off_hub': hub_thread not in threads and bool(threads),
            'behind': behind, 'hashed': digest.objects_hashed(),
            'error': error, 'ended': ended, 'ticks': ticks}


class DigestGreenTest(base.BaseTestCase):

    def test_tpool_workers_hash_off_the_hub_in_order(self):
        """Under eventlet each hash runs on tpool, an object at a time."""
        report = green_child.run(self, __name__, 'green_digest')
        self.assertEqual(
            {'md5': True, 'sha512': True, 'off_hub': True,
             'behind': [1, 1, 1, 1], 'hashed': 4,
             'error': 'verifier refused the data', 'ended': True},
            dict((key, report[key]) for key in (
                'md5', 'sha512', 'off_hub', 'behind', 'hashed', 'error',
                'ended')))
        self.assertGreater(report['ticks'], 0)
