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
"""Uploads through the process-wide write budget (budget.WRITERS)."""

import errno
import io
import logging
import os
import threading
import time

import fixtures
from glance_store import exceptions

from glance_store_fastsheep import budget as budget_mod
from glance_store_fastsheep.dog import process
from glance_store_fastsheep.dog import write as dog_write
from glance_store_fastsheep import hub_safe
from glance_store_fastsheep import store
from glance_store_fastsheep.tests import green_child
from glance_store_fastsheep.tests.unit import base

MIB = 1024 * 1024
CHUNK = 4 * MIB  # base's chunk size
# Long enough that the writers of several uploads overlap for a sampler.
WRITE_DELAY = '0.3'


def add(sd, name, data, size=None, source=None):
    """Store.add with the calling convention of the installed version."""
    size = len(data) if size is None else size
    source = io.BytesIO(data) if source is None else source
    if store.MULTIHASH:
        return sd.add(name, source, size, 'md5')
    return sd.add(name, source, size)


class RecordingBudget(budget_mod.Budget):
    """A Budget that keeps the most it ever held."""

    def __init__(self):
        super(RecordingBudget, self).__init__()
        self.peak = 0

    def take(self, amount, limit=None):
        taken = super(RecordingBudget, self).take(amount, limit)
        self.peak = max(self.peak, self.held)
        return taken


def writer_children(seen):
    """Pids of this process's ``dog vdi write`` children, zombies too.

    Every pid counted was listed by /proc and then still there when its
    stat was read, so all of them existed at once, when the listing
    ended: a count is never more than the writers alive at one instant.
    A zombie has no command line; it counts if it was seen as a writer.
    """
    me = os.getpid()
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry, 'rb') as stat:
                fields = stat.read().rsplit(b')', 1)[1].split()
            with open('/proc/%s/cmdline' % entry, 'rb') as cmdline:
                argv = cmdline.read().split(b'\0')
        except (IOError, OSError):
            continue
        if int(fields[1]) != me:
            continue
        pid = int(entry)
        if b'vdi' in argv and b'write' in argv:
            seen.add(pid)
        if pid in seen:
            found.append(pid)
    return found


class Peaks(object):
    """Samples the real writer children until stopped; keeps the most."""

    def __init__(self):
        self.children = 0
        self.seen = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self):
        while not self._stop.is_set():
            self.children = max(self.children,
                                len(writer_children(self.seen)))
            time.sleep(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join(30)


def upload_at_once(sd, images):
    """Upload images (name: (data, announced size)) each in its thread.

    Threads are greenthreads under eventlet's monkey-patching. Returns
    the outcome of each (its stored size or the exception) and the
    sampled peak of writer children.
    """
    results = {}

    def upload_one(name):
        data, size = images[name]
        try:
            results[name] = add(sd, name, data, size)[1]
        except Exception as exc:  # reported by the caller
            results[name] = exc

    threads = [threading.Thread(target=upload_one, args=(name,))
               for name in sorted(images)]
    with Peaks() as peaks:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    return results, peaks


def images_of(count, chunks):
    """count images of chunks chunks plus a bit, by name.

    Every other one is uploaded with its size unknown (chunked upload).
    """
    return dict(('img%d' % index,
                 (os.urandom(chunks * CHUNK + 1000 + index),
                  0 if index % 2 else None))
                for index in range(count))


def green_main(count, budget):
    """The eventlet pass: run in a monkey-patched child interpreter.

    The fake dog's environment comes from the parent test.
    """
    writers = budget_mod.WRITERS = RecordingBudget()
    # As UploadBudgetTest.setUp: each VDI named by its image id.
    store.vdi_name = lambda image_id: image_id
    sd = store.Store(base.make_conf(sheepdog_store_write_budget=budget))
    sd.configure(re_raise_bsc=True)
    images = images_of(count, 4)
    results, peaks = upload_at_once(sd, images)
    stored = {}
    for name in images:
        with open(os.path.join(os.environ['FAKE_DOG_DIR'], name),
                  'rb') as vdi:
            stored[name] = vdi.read() == images[name][0]
    return {'results': dict((name, repr(result)
                             if isinstance(result, Exception) else result)
                            for name, result in results.items()),
            'sizes': dict((name, len(data))
                          for name, (data, _size) in images.items()),
            'stored': stored, 'peak': peaks.children,
            'held_peak': writers.peak, 'held': writers.held,
            'left': writer_children(peaks.seen),
            'green': hub_safe.is_green()}


class UploadBudgetTest(base.StoreTestCase):
    """Uploads run extra writers only with slots, and give them back."""

    def setUp(self):
        super(UploadBudgetTest, self).setUp()
        self.writers = RecordingBudget()
        self.useFixture(fixtures.MockPatchObject(budget_mod, 'WRITERS',
                                                 self.writers))
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_WRITE_DELAY',
                                                     WRITE_DELAY))
        # The pid of every writer started, even one killed before the
        # fake dog ran far enough to log its call.
        self.spawned = []
        real_spawn = process.spawn_transfer

        def spawn(*args, **kwargs):
            started = real_spawn(*args, **kwargs)
            self.spawned.append(started[0].pid)
            return started

        self.useFixture(fixtures.MockPatchObject(process,
                                                 'spawn_transfer', spawn))
        # eventlet's tpool keeps its fds for the life of the process.
        hub_safe.off_hub(lambda: None)
        self.fds = len(os.listdir('/proc/self/fd'))
        # Each VDI named by its image id, to find the bytes: these test
        # the budget, test_store_vdi_names the per-attempt names.
        self.useFixture(fixtures.MockPatchObject(
            store, 'vdi_name', lambda image_id: image_id))

    def budget_store(self, budget, **overrides):
        return self.make_store(self.make_conf(
            sheepdog_store_write_budget=budget, **overrides))

    def assertBudgetWholeAndReaped(self, vdis=()):
        self.assertEqual(0, self.writers.held)
        self.assertEqual(sorted(vdis), self.dog.vdis())
        self.assertEqual(self.fds, len(os.listdir('/proc/self/fd')))
        self.assertNotEqual([], self.spawned)
        for pid in self.spawned:
            # Reaped: not even a zombie answers signal 0.
            exc = self.assertRaises(OSError, os.kill, pid, 0)
            self.assertEqual(errno.ESRCH, exc.errno)

    def assertStored(self, images, results):
        self.assertEqual(dict((name, len(data))
                              for name, (data, _size) in images.items()),
                         results)
        for name, (data, _size) in images.items():
            with open(os.path.join(self.dog.vdi_dir, name), 'rb') as vdi:
                self.assertTrue(vdi.read() == data, name)

    def test_concurrent_uploads_share_the_budget(self):
        # Three uploads at once with two extra writers between them: at
        # most five `dog vdi write` at any time, more than one per upload
        # at some point, every image byte-exact, the budget whole after.
        images = images_of(3, 5)
        results, peaks = upload_at_once(self.budget_store(2), images)
        self.assertStored(images, results)
        self.assertEqual(2, self.writers.peak)
        self.assertLessEqual(peaks.children, 3 + 2)
        self.assertGreater(peaks.children, 3)
        self.assertBudgetWholeAndReaped(images)

    def test_no_budget_is_one_writer_per_upload(self):
        images = images_of(2, 3)
        results, peaks = upload_at_once(self.budget_store(0), images)
        self.assertStored(images, results)
        self.assertEqual(0, self.writers.peak)
        self.assertLessEqual(peaks.children, 2)
        self.assertGreater(peaks.children, 0)
        self.assertBudgetWholeAndReaped(images)

    def test_lone_upload_keeps_its_write_concurrency(self):
        # The default budget leaves one upload its concurrency of 8.
        images = {'img': (os.urandom(9 * CHUNK), None)}
        results, peaks = upload_at_once(self.make_store(), images)
        self.assertStored(images, results)
        self.assertEqual(7, self.writers.peak)
        self.assertLessEqual(peaks.children, 8)
        self.assertBudgetWholeAndReaped(images)

    def test_budget_used_up_is_logged_once_per_upload(self):
        logger = self.useFixture(fixtures.FakeLogger(
            name=dog_write.__name__, level=logging.DEBUG))
        add(self.budget_store(0), 'img', os.urandom(3 * CHUNK))
        self.assertEqual(1, logger.output.count('process write budget'))
        self.assertBudgetWholeAndReaped(['img'])

    def test_failed_writer_gives_the_budget_back(self):
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_FAIL_WRITE',
                                                     '1'))
        exc = self.assertRaises(exceptions.BackendException, add,
                                self.budget_store(2), 'img',
                                os.urandom(5 * CHUNK))
        self.assertIn('I/O error', str(exc))
        self.assertEqual(2, self.writers.peak)
        self.assertBudgetWholeAndReaped()

    def _failing_source(self, error):
        data = os.urandom(5 * CHUNK)
        source = io.BytesIO(data)
        real_read = source.read

        def read(size):
            if source.tell() >= 2 * CHUNK + 100:
                raise error
            return real_read(size)

        source.read = read
        return data, source

    def test_source_error_gives_the_budget_back(self):
        data, source = self._failing_source(IOError('client went away'))
        self.assertRaises(IOError, add, self.budget_store(2), 'img', data,
                          source=source)
        self.assertEqual(2, self.writers.peak)
        self.assertBudgetWholeAndReaped()

    def test_killed_upload_gives_the_budget_back(self):
        # What a greenthread killed mid-upload sees (GreenletExit is a
        # BaseException): the store aborts every writer all the same.
        class Killed(BaseException):
            pass

        data, source = self._failing_source(Killed())
        self.assertRaises(Killed, add, self.budget_store(2), 'img', data,
                          source=source)
        self.assertEqual(2, self.writers.peak)
        self.assertBudgetWholeAndReaped()

    def test_size_mismatch_gives_the_budget_back(self):
        sd = self.budget_store(2)
        data = os.urandom(5 * CHUNK)
        exc = self.assertRaises(exceptions.Invalid, add, sd, 'img', data,
                                len(data) + CHUNK)
        self.assertIn('ended after', str(exc))
        self.assertEqual(2, self.writers.peak)
        self.assertBudgetWholeAndReaped()
        exc = self.assertRaises(exceptions.Invalid, add, sd, 'img', data,
                                len(data) - 1)
        self.assertIn('larger than', str(exc))
        self.assertBudgetWholeAndReaped()

    def test_failed_spawn_gives_its_slot_back(self):
        recording_spawn = process.spawn_transfer
        calls = []

        def spawn(*args, **kwargs):
            calls.append(args)
            if len(calls) == 3:
                raise OSError(errno.EMFILE, 'Too many open files')
            return recording_spawn(*args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(process,
                                                 'spawn_transfer', spawn))
        exc = self.assertRaises(OSError, add, self.budget_store(2), 'img',
                                os.urandom(5 * CHUNK))
        self.assertEqual(errno.EMFILE, exc.errno)
        self.assertEqual(2, self.writers.peak)
        self.assertEqual(2, len(self.spawned))
        self.assertBudgetWholeAndReaped()

    def test_green_uploads_share_the_budget(self):
        # The same bound when the uploads are greenthreads of one
        # eventlet-patched process (glance-api's case).
        report = green_child.run(self, __name__, 'green_main', (3, 2),
                                 timeout=300)
        self.assertTrue(report['green'])
        self.assertEqual(report['sizes'], report['results'])
        self.assertEqual(dict((name, True) for name in report['sizes']),
                         report['stored'])
        self.assertEqual(2, report['held_peak'])
        self.assertEqual(0, report['held'])
        self.assertLessEqual(report['peak'], 3 + 2)
        self.assertGreater(report['peak'], 3)
        self.assertEqual([], report['left'])
