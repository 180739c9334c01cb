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

import errno
import hashlib
import io
import os
import re

import fixtures
from glance_store import capabilities
from glance_store import exceptions
from glance_store import location
from oslo_config import cfg
from testtools import matchers

from glance_store_fastsheep import hub_safe
from glance_store_fastsheep import opts
from glance_store_fastsheep import store
from glance_store_fastsheep.tests.unit import base

KIB = 1024
MIB = 1024 * 1024
READ = 64 * KIB  # base.StoreTestCase's read size


# A glance image id: what a location serves by default.
IMAGE_ID = '6c1a0e38-3f5b-4a43-9d0e-0c0a2b4d7f11'


def add(sd, name, data, size=None, algo=None, verifier=None):
    """Store.add with the calling convention of the installed version."""
    size = len(data) if size is None else size
    if store.MULTIHASH and algo:
        return sd.add(name, io.BytesIO(data), size, algo, verifier=verifier)
    return sd.add(name, io.BytesIO(data), size, verifier=verifier)


def open_fds():
    return len(os.listdir('/proc/self/fd'))


class RecordingVerifier(object):

    def __init__(self):
        self.pieces = []

    def update(self, piece):
        self.pieces.append(bytes(piece))


class FailingReader(object):
    """A glance-style reader that raises after some bytes (size cap)."""

    class Cap(Exception):
        pass

    def __init__(self, data, fail_at):
        self.data = io.BytesIO(data)
        self.fail_at = fail_at

    def read(self, size):
        if self.data.tell() >= self.fail_at:
            raise self.Cap('image size limit exceeded')
        return self.data.read(size)


class ConfigureTest(base.StoreTestCase):

    def test_schemes_and_capabilities(self):
        sd = self.make_store()
        self.assertEqual(('sheepdog', 'fastsheep'), sd.get_schemes())
        for cap in (capabilities.BitMasks.RW_ACCESS,
                    capabilities.BitMasks.READ_RANDOM,
                    capabilities.BitMasks.DRIVER_REUSABLE):
            self.assertTrue(sd.is_capable(cap))

    def test_url_prefix_claims_existing_locations(self):
        sd = self.make_store(self.make_conf(sheepdog_store_port=7001))
        self.assertEqual('sheepdog://127.0.0.1:7001:', sd._url_prefix)
        if store.MULTIHASH:
            self.assertEqual('sheepdog://127.0.0.1:7001:', sd.url_prefix)

    def test_cli_missing(self):
        self.useFixture(fixtures.EnvironmentVariable('PATH', '/nonexistent'))
        sd = self.make_store(configure=False)
        exc = self.assertRaises(exceptions.BadStoreConfiguration,
                                sd.configure, re_raise_bsc=True)
        self.assertIn("'dog' not found", str(exc))
        self.assertIn('collie', str(exc))

    def test_cli_missing_disables_add_only(self):
        self.useFixture(fixtures.EnvironmentVariable('PATH', '/nonexistent'))
        sd = self.make_store(configure=False)
        sd.configure()
        self.assertFalse(sd.is_capable(capabilities.BitMasks.WRITE_ACCESS))
        self.assertTrue(sd.is_capable(capabilities.BitMasks.READ_ACCESS))
        self.assertRaises(exceptions.StoreAddDisabled, add, sd, 'img', b'x')

    def test_collie_fallback(self):
        os.rename(os.path.join(self.dog.bin_dir, 'dog'),
                  os.path.join(self.dog.bin_dir, 'collie'))
        sd = self.make_store()
        self.assertEqual(os.path.join(self.dog.bin_dir, 'collie'),
                         sd.client.dog.command)

    def test_cluster_down(self):
        # A cluster down is no configuration error (issue 36): a
        # warning with the reason, and nothing disabled.
        log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep',
            format='%(levelname)s %(message)s'))
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_DOWN', '1'))
        sd = self.make_store()
        self.assertIn('WARNING fastsheep store fastsheep: the sheepdog '
                      'cluster does not serve yet', log.output)
        self.assertIn('127.0.0.1:%d' % self.port, log.output)
        self.assertIn('Connection refused', log.output)
        self.assertTrue(sd.is_capable(capabilities.BitMasks.WRITE_ACCESS))

    def test_chunk_size_rounded_to_objects(self):
        sd = self.make_store(self.make_conf(sheepdog_store_chunk_size=6))
        self.assertEqual(8 * MIB, sd.settings.chunk_size)
        self.assertEqual(8 * MIB, sd.WRITE_CHUNKSIZE)

    def test_read_window_rounded_to_objects(self):
        sd = self.make_store(self.make_conf(sheepdog_store_read_window=6,
                                            sheepdog_store_read_concurrency=3))
        self.assertEqual(8 * MIB, sd.settings.read_window)
        self.assertEqual(3, sd.settings.read_concurrency)

    def test_bad_read_size(self):
        conf = self.make_conf()
        self.assertRaises(ValueError, conf.set_override,
                          'sheepdog_store_read_size', 100,
                          group='glance_store')

    def test_options_survive_pike_registration_order(self):
        # Pike registers the in-tree driver's sheepdog options (same
        # names, other help) before stores load.
        conf = cfg.ConfigOpts()
        conf.register_opt(cfg.IntOpt('sheepdog_store_chunk_size', default=64,
                                     help='in-tree'), group='glance_store')
        conf([])
        store.Store(conf)
        self.assertEqual(opts.DEFAULT_READ_SIZE,
                         conf.glance_store.sheepdog_store_read_size)
        self.assertEqual(64, conf.glance_store.sheepdog_store_chunk_size)

    def test_list_opts(self):
        (group, options), = opts.list_opts()
        self.assertEqual('glance_store', group)
        names = set(o.name for o in options)
        for name in ('sheepdog_store_address', 'sheepdog_store_port',
                     'sheepdog_store_chunk_size', 'sheepdog_store_read_size',
                     'sheepdog_store_pipe_size', 'sheepdog_store_command',
                     'sheepdog_store_write_concurrency',
                     'sheepdog_store_write_budget',
                     'sheepdog_store_command_timeout',
                     'sheepdog_store_transfer_timeout',
                     'sheepdog_store_read_concurrency',
                     'sheepdog_store_read_window'):
            self.assertIn(name, names)
        for option in options:
            self.assertTrue(option.help.strip(), option.name)


class RoundTripTest(base.StoreTestCase):

    def setUp(self):
        super(RoundTripTest, self).setUp()
        self.sd = self.make_store()

    def _round_trip(self, size, announce):
        data = os.urandom(size)
        name = 'img-%d-%s' % (size, announce)
        result = add(self.sd, name, data, size if announce else 0)
        # The VDI of this attempt: the image id and a random suffix.
        self.assertThat(result[0], matchers.MatchesRegex(
            r'sheepdog://127\.0\.0\.1:%d:%s\.[0-9a-f]{16}\Z'
            % (self.port, re.escape(name))))
        self.assertEqual(size, result[1])
        self.assertEqual(hashlib.md5(data).hexdigest(), result[2])
        loc = self.location(result[0])
        self.assertEqual(size, self.sd.get_size(loc))
        stream, length = self.sd.get(loc)
        self.assertEqual(size, length)
        pieces = list(stream)
        self.assertEqual(data, b''.join(pieces))
        self.assertTrue(all(0 < len(p) <= READ for p in pieces))
        self.sd.delete(loc)
        self.assertEqual([], self.dog.vdis())

    # The functional tests run every boundary size against the emulator;
    # these are the shapes of the code paths (empty, under one piece, a
    # piece boundary, several chunks), with and without a known size.
    def test_empty(self):
        self._round_trip(0, True)
        self._round_trip(0, False)

    def test_one_byte(self):
        self._round_trip(1, True)
        self._round_trip(1, False)

    def test_read_size_plus_one(self):
        self._round_trip(READ + 1, True)
        self._round_trip(READ + 1, False)

    def test_several_chunks(self):
        self._round_trip(2 * 4 * MIB + READ + 3, True)
        self._round_trip(2 * 4 * MIB + READ + 3, False)

    def test_one_writer_per_chunk_with_explicit_ranges(self):
        add(self.sd, 'img', b'a' * (9 * MIB))
        writes = [c for c in self.dog.calls() if c[1] == 'write']
        self.assertEqual([['0', str(4 * MIB)], [str(4 * MIB), str(4 * MIB)],
                          [str(8 * MIB), str(MIB)]],
                         sorted([c[-2:] for c in writes], key=lambda r:
                                int(r[0])))

    def test_unknown_size_grows_without_shrinking(self):
        add(self.sd, 'img', b'b' * (9 * MIB), size=0)
        calls = [c for c in self.dog.calls()
                 if c[1] in ('create', 'resize')]
        self.assertEqual([['create', str(4 * MIB)],
                          ['resize', str(8 * MIB)],
                          ['resize', str(9 * MIB)]],
                         [[c[1], c[-1]] for c in calls])

    def test_ranges(self):
        data = os.urandom(3 * MIB + 5)
        loc = self.location(add(self.sd, 'img', data)[0])
        for offset, chunk in ((0, 1), (1, READ), (READ - 1, 2),
                              (3 * MIB, None), (3 * MIB + 5, None),
                              (5, 10 * MIB)):
            stream, length = self.sd.get(loc, offset=offset,
                                         chunk_size=chunk)
            want = data[offset:offset + chunk if chunk else None]
            self.assertEqual(len(want), length)
            self.assertEqual(want, b''.join(stream))
        self.assertRaises(exceptions.BackendException, self.sd.get, loc,
                          offset=len(data) + 1)

    def test_result_shape_follows_glance_store(self):
        data = b'shape' * 1000
        result = add(self.sd, 'four', data)
        self.assertEqual(4, len(result))
        self.assertEqual({}, result[3])
        if not store.MULTIHASH:
            self.skipTest('glance_store before 0.26 (Pike, Queens) has no '
                          'hashing_algo; py3 and line-ussuri on run this')
        result = add(self.sd, 'five', data, algo='sha512')
        self.assertEqual(5, len(result))
        self.assertEqual(hashlib.md5(data).hexdigest(), result[2])
        self.assertEqual(hashlib.sha512(data).hexdigest(), result[3])

    def test_verifier_fed_in_order_in_pieces(self):
        data = os.urandom(5 * MIB + 17)
        verifier = RecordingVerifier()
        add(self.sd, 'img', data, verifier=verifier)
        self.assertEqual(data, b''.join(verifier.pieces))
        self.assertLessEqual(max(len(p) for p in verifier.pieces), READ)

    def test_iterator_source(self):
        # Copying between stores hands add() an iterator, not a file.
        data = os.urandom(5 * MIB)
        pieces = [data[i:i + 3 * MIB] for i in range(0, len(data), 3 * MIB)]
        if store.MULTIHASH:
            result = self.sd.add('img', iter(pieces), len(data), 'sha256')
        else:
            result = self.sd.add('img', iter(pieces), len(data))
        stream, _length = self.sd.get(self.location(result[0]))
        self.assertEqual(data, b''.join(stream))


class FaultTest(base.StoreTestCase):

    def setUp(self):
        super(FaultTest, self).setUp()
        self.sd = self.make_store()
        # eventlet's tpool keeps its fds for the life of the process.
        hub_safe.off_hub(lambda: None)
        self.fds = open_fds()

    def assertNothingLeft(self):
        self.assertEqual([], self.dog.vdis())
        self.assertEqual(self.fds, open_fds())
        for action in ('read', 'write'):
            for pid in self.dog.pids(action):
                # Reaped: not even a zombie answers signal 0.
                exc = self.assertRaises(OSError, os.kill, pid, 0)
                self.assertEqual(errno.ESRCH, exc.errno)

    def test_vdi_named_like_the_image_is_left_alone(self):
        # Before per-attempt names this was Duplicate (the VDI was named
        # by the image id); now the upload takes a name of its own and
        # leaves the existing VDI as it was.
        self.dog.put('img', b'old')
        result = add(self.sd, 'img', b'new')
        self.assertEqual(['img', result[0].rsplit(':', 1)[1]],
                         sorted(self.dog.vdis()))
        loc = self.location('sheepdog://127.0.0.1:%d:img' % self.port)
        self.assertEqual(b'old', b''.join(self.sd.get(loc)[0]))

    def test_bad_image_id(self):
        before = self.dog.calls()
        self.assertRaises(exceptions.Invalid, add, self.sd, '-rf', b'x')
        self.assertEqual(before, self.dog.calls())

    def test_not_found(self):
        loc = self.location('sheepdog://127.0.0.1:%d:gone' % self.port)
        self.assertRaises(exceptions.NotFound, self.sd.get, loc)
        self.assertRaises(exceptions.NotFound, self.sd.get_size, loc)
        self.assertRaises(exceptions.NotFound, self.sd.delete, loc)
        # delete checked existence instead of trusting dog's exit 0.
        self.assertNotIn('delete', [c[1] for c in self.dog.calls()])

    def test_failed_write_deletes_partial(self):
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_FAIL_WRITE',
                                                     '1'))
        exc = self.assertRaises(exceptions.BackendException, add, self.sd,
                                'img', os.urandom(9 * MIB))
        self.assertIn('I/O error', str(exc))
        self.assertIn('delete', [c[1] for c in self.dog.calls()])
        self.assertNothingLeft()

    def test_reader_error_propagates_and_deletes(self):
        data = os.urandom(6 * MIB)
        for size in (len(data), 0):
            reader = FailingReader(data, 5 * MIB)
            if store.MULTIHASH:
                call = (self.sd.add, 'img', reader, size, 'md5')
            else:
                call = (self.sd.add, 'img', reader, size)
            self.assertRaises(FailingReader.Cap, *call)
            self.assertNothingLeft()

    def test_less_data_than_announced(self):
        exc = self.assertRaises(exceptions.Invalid, add, self.sd, 'img',
                                b'x' * 100, size=200)
        self.assertIn('100', str(exc))
        self.assertNothingLeft()

    def test_more_data_than_announced(self):
        self.assertRaises(exceptions.Invalid, add, self.sd, 'img',
                          b'x' * 201, size=200)
        self.assertNothingLeft()

    def test_short_read_is_an_error(self):
        data = os.urandom(MIB)
        loc = self.location(add(self.sd, 'img', data)[0])
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_SHORT', '1'))
        stream, _length = self.sd.get(loc)
        exc = self.assertRaises(exceptions.BackendException, b''.join,
                                stream)
        self.assertIn('%d of %d' % (MIB - 1, MIB), str(exc))
        self.sd.delete(loc)
        self.assertNothingLeft()

    def test_early_close_kills_and_reaps(self):
        data = os.urandom(MIB)
        loc = self.location(add(self.sd, 'img', data)[0])
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_HANG',
                                                     str(READ)))
        stream, _length = self.sd.get(loc)
        iterator = iter(stream)
        self.assertEqual(data[:READ], next(iterator))
        self.assertEqual(1, len(self.dog.pids('read')))
        stream.close()
        self.sd.delete(loc)
        self.assertNothingLeft()

    def test_dropped_iterator_kills_and_reaps(self):
        loc = self.location(add(self.sd, 'img', os.urandom(MIB))[0])
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_HANG',
                                                     str(READ)))
        stream, _length = self.sd.get(loc)
        next(iter(stream))
        del stream
        self.sd.delete(loc)
        self.assertNothingLeft()

    def test_stalled_read_times_out(self):
        conf = self.make_conf(sheepdog_store_transfer_timeout=1)
        sd = self.make_store(conf)
        loc = self.location(add(sd, 'img', os.urandom(MIB))[0])
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_HANG', '1'))
        stream, _length = sd.get(loc)
        exc = self.assertRaises(exceptions.BackendException, b''.join,
                                stream)
        self.assertIn('sent nothing', str(exc))
        sd.delete(loc)
        self.assertNothingLeft()

    def test_unread_stream_spawns_nothing(self):
        loc = self.location(add(self.sd, 'img', b'abc')[0])
        stream, _length = self.sd.get(loc)
        stream.close()
        self.assertEqual([], self.dog.pids('read'))


class MultiStoreTest(base.StoreTestCase):
    """Current glance_store: Store(conf, backend), options in [backend]."""

    def setUp(self):
        super(MultiStoreTest, self).setUp()
        if not store.MULTIHASH:
            self.skipTest('glance_store before 0.26 (Pike, Queens) has no '
                          'multi-store backends; py3 and line-ussuri on '
                          'run this test')

    def test_backend_group(self):
        conf = cfg.ConfigOpts()
        conf([])
        sd = store.Store(conf, backend='fast')
        conf.set_override('sheepdog_store_client', 'dog', group='fast')
        conf.set_override('sheepdog_store_port', self.port, group='fast')
        conf.set_override('sheepdog_store_chunk_size', 8, group='fast')
        conf.set_override('sheepdog_store_read_size', 4096, group='fast')
        sd.configure(re_raise_bsc=True)
        self.assertEqual(8 * MIB, sd.settings.chunk_size)
        self.assertEqual(4096, sd.READ_CHUNKSIZE)
        data = os.urandom(100 * KIB)
        # Named like a glance image: this backend group leaves
        # sheepdog_store_serve_any_name at its default.
        result = sd.add(IMAGE_ID, io.BytesIO(data), len(data), 'sha256')
        self.assertEqual({'store': 'fast'}, result[4])
        self.assertEqual(hashlib.sha256(data).hexdigest(), result[3])
        loc = self.location(result[0], conf)
        self.assertEqual(data, b''.join(sd.get(loc)[0]))


class IgnoredSectionTest(base.StoreTestCase):
    """A WARNING for [backend_defaults] where the store never reads it."""

    def configured(self, backend=None):
        group = backend or 'glance_store'
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'glance-api.conf')
        with open(path, 'w') as out:
            out.write('[%s]\nsheepdog_store_client = dog\n'
                      'sheepdog_store_port = %d\n'
                      '[backend_defaults]\nsheepdog_store_read_size = 8192\n'
                      % (group, self.port))
        conf = cfg.ConfigOpts()
        conf(['--config-file', path])
        log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))
        sd = store.Store(conf, backend=backend)
        sd.configure(re_raise_bsc=True)
        return sd, log.output

    def test_single_store_never_reads_it(self):
        sd, output = self.configured()
        self.assertIn('fastsheep store fastsheep: the config has a '
                      '[backend_defaults] section, which a single store '
                      'never reads: set the store\'s options in '
                      '[glance_store]', output)
        self.assertEqual(opts.DEFAULT_READ_SIZE, sd.READ_CHUNKSIZE)

    def test_a_backend_reads_it_from_5_0_0(self):
        try:
            from glance_store import multi_backend  # noqa: F401
        except ImportError:
            self.skipTest('glance_store before 0.26 (Pike, Queens) has no '
                          'backends; py3 and the line-* envs run this test')
        sd, output = self.configured(backend='fast')
        reads = bool(getattr(store.driver, 'SHARED_CONF_GROUP', None))
        # The oracle: what the store then read.
        self.assertEqual(reads, sd.READ_CHUNKSIZE == 8192)
        self.assertEqual(not reads, 'this glance_store (before 5.0.0, '
                         '2025.2) never reads' in output, output)


class BackendDefaultsTest(base.StoreTestCase):
    """``[backend_defaults]`` under ``enabled_backends``, as rbd reads it."""

    def setUp(self):
        super(BackendDefaultsTest, self).setUp()
        if not hasattr(store.driver, 'BackendGroupConfiguration'):
            self.skipTest('this glance_store has no [backend_defaults] '
                          'nor BackendGroupConfiguration (before 5.0.0, '
                          '2025.2); py3 and line-2026.1 run this test')
        self.conf = cfg.ConfigOpts()
        self.conf([])
        self.one = store.Store(self.conf, backend='one')
        self.two = store.Store(self.conf, backend='two')
        # The fake dog's client, for both backends.
        self.conf.set_override('sheepdog_store_client', 'dog',
                               group='backend_defaults')

    def test_unset_values_come_from_backend_defaults(self):
        self.conf.set_override('sheepdog_store_chunk_size', 8,
                               group='backend_defaults')
        self.conf.set_override('sheepdog_store_write_concurrency', 3,
                               group='backend_defaults')
        self.conf.set_override('sheepdog_store_chunk_size', 12, group='two')
        self.one.configure(re_raise_bsc=True)
        self.two.configure(re_raise_bsc=True)
        self.assertEqual(8 * MIB, self.one.settings.chunk_size)
        self.assertEqual(12 * MIB, self.two.settings.chunk_size)
        self.assertEqual(3, self.one.settings.write_concurrency)
        self.assertEqual(3, self.two.settings.write_concurrency)
        # Neither group set it: the option's own default.
        self.assertEqual(opts.DEFAULT_READ_SIZE, self.one.READ_CHUNKSIZE)

    def test_cluster_address_from_backend_defaults(self):
        self.conf.set_override('sheepdog_store_address', '10.9.9.9',
                               group='backend_defaults')
        self.conf.set_override('sheepdog_store_port', 7777,
                               group='backend_defaults')
        self.one.configure(re_raise_bsc=True)
        self.assertEqual('sheepdog://10.9.9.9:7777:', self.one.url_prefix)
        # A pre-Mitaka location names no cluster: the backend's is used.
        loc = location.Location('sheepdog', store.StoreLocation, self.conf,
                                uri='sheepdog://img', backend='one')
        self.assertEqual('sheepdog://10.9.9.9:7777:img',
                         loc.store_location.get_uri())


class BackendGroupAloneTest(base.StoreTestCase):
    """Multi-store before ``BackendGroupConfiguration`` (Rocky to 2023.1).

    Those releases have ``enabled_backends`` but no ``[backend_defaults]``:
    a backend reads its own group and nothing else, as their rbd does.
    """

    def setUp(self):
        super(BackendGroupAloneTest, self).setUp()
        if not store.MULTIHASH:
            self.skipTest('glance_store before 0.26 (Pike, Queens) has no '
                          'multi-store backends; line-ussuri to '
                          'line-2023.1 run this test')
        if hasattr(store.driver, 'BackendGroupConfiguration'):
            self.skipTest('this glance_store reads [backend_defaults] '
                          '(BackendDefaultsTest); line-ussuri to '
                          'line-2023.1 run this test')

    def test_backend_group_alone(self):
        conf = cfg.ConfigOpts()
        conf([])
        one = store.Store(conf, backend='one')
        two = store.Store(conf, backend='two')
        for group in ('one', 'two'):
            conf.set_override('sheepdog_store_client', 'dog', group=group)
            conf.set_override('sheepdog_store_port', self.port, group=group)
        conf.set_override('sheepdog_store_chunk_size', 12, group='two')
        one.configure(re_raise_bsc=True)
        two.configure(re_raise_bsc=True)
        self.assertNotIn('backend_defaults', conf)
        self.assertEqual(12, two.store_conf.sheepdog_store_chunk_size)
        self.assertEqual(opts.DEFAULT_CHUNK_SIZE * MIB,
                         one.settings.chunk_size)
        self.assertEqual(12 * MIB, two.settings.chunk_size)
        data = os.urandom(100 * KIB)
        result = two.add(IMAGE_ID, io.BytesIO(data), len(data), 'md5')
        self.assertEqual({'store': 'two'}, result[4])
        self.assertEqual(hashlib.md5(data).hexdigest(), result[3])
        loc = self.location(result[0], conf)
        self.assertEqual(data, b''.join(two.get(loc)[0]))


class PikeGroupTest(base.StoreTestCase):
    """Pike's single store reads ``[glance_store]`` and nothing else."""

    def test_glance_store_group_only(self):
        conf = self.make_conf(sheepdog_store_chunk_size=8)
        if 'backend_defaults' in conf:
            # Current base classes register it for a single store too;
            # like rbd's, a single store does not read it.
            conf.set_override('sheepdog_store_chunk_size', 12,
                              group='backend_defaults')
        sd = self.make_store(conf)
        self.assertIs(conf.glance_store, sd.store_conf)
        self.assertEqual(8 * MIB, sd.settings.chunk_size)
