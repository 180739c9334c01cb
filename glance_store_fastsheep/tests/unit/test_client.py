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
"""Choosing the client (``sheepdog_store_client``) and what the store asks.

The native client itself is tested with its own modules; here a stub
stands in for it, so these tests show what the store does with whichever
client is chosen, and that with ``native`` nothing looks for ``dog``.
"""

import hashlib
import io
import os
import re

import fixtures
from glance_store import capabilities
from glance_store import exceptions
from oslo_config import cfg

from glance_store_fastsheep import client
from glance_store_fastsheep.dog import client as dog_client
from glance_store_fastsheep.dog import command as dog_command
from glance_store_fastsheep import opts
from glance_store_fastsheep import settings as settings_mod
from glance_store_fastsheep import store
from glance_store_fastsheep.tests.unit import base

KIB = 1024


class Info(object):

    def __init__(self, size):
        self.size = size


class StubNativeClient(client.Client):
    """Images in a dict; every call recorded as (method, args...)."""

    calls = []
    images = {}
    check_error = None

    def check(self):
        self.calls.append(('check',))
        if self.check_error:
            raise client.ClientError(self.check_error)

    def lookup(self, address, port, name):
        self.calls.append(('lookup', address, port, name))
        data = self.images.get(name)
        return None if data is None else Info(len(data))

    def read(self, address, port, name, offset, length):
        self.calls.append(('read', address, port, name, offset, length))
        return iter([self.images[name][offset:offset + length]])

    def vdis(self):
        self.calls.append(('vdis',))
        return sorted((name, len(data)) for name, data in self.images.items())

    def write(self, name, source, digest, image_size, transfer=None):
        self.calls.append(('write', name, image_size))
        if name in self.images:
            raise exceptions.Duplicate(image=name)
        pieces = []
        while True:
            piece = source.read(64 * KIB)
            if not piece:
                break
            digest.update(piece)
            pieces.append(piece)
        self.images[name] = b''.join(pieces)
        return len(self.images[name])

    def delete(self, address, port, name):
        self.calls.append(('delete', address, port, name))
        self.size(address, port, name)
        del self.images[name]


def no_command_lookup(configured):
    raise AssertionError('looked for %r with the native client'
                         % configured)


class NativeSelectedTest(base.StoreTestCase):
    """``sheepdog_store_client = native`` on a host without any ``dog``.

    The stub stands in for the native client.
    """

    def setUp(self):
        super(NativeSelectedTest, self).setUp()
        self.useFixture(fixtures.MockPatchObject(
            client, 'CLIENT_CLASSES',
            dict(client.CLIENT_CLASSES, native='%s.%s' % (
                __name__, StubNativeClient.__name__))))
        StubNativeClient.calls = []
        StubNativeClient.images = {}
        StubNativeClient.check_error = None
        self.useFixture(fixtures.EnvironmentVariable('PATH', '/nonexistent'))
        self.useFixture(fixtures.MockPatchObject(
            dog_command, 'find_command', no_command_lookup))
        self.conf = self.make_conf(sheepdog_store_client='native')

    def test_native_is_the_default(self):
        conf = cfg.ConfigOpts()
        conf.register_opts(opts.SHEEPDOG_OPTS, group='glance_store')
        conf([])
        self.assertEqual('native', conf.glance_store.sheepdog_store_client)
        self.assertEqual(client.NATIVE, opts.DEFAULT_CLIENT)

    def test_settings_need_no_command(self):
        current = settings_mod.Settings(self.conf.glance_store)
        self.assertEqual('native', current.client)
        self.assertIsNone(current.command)
        # The command object is the dog client's (DogClient.dog).
        self.assertFalse(hasattr(current, 'dog'))

    def test_configure_checks_through_the_client(self):
        sd = self.make_store()
        self.assertIsInstance(sd.client, StubNativeClient)
        self.assertEqual([('check',)], StubNativeClient.calls)
        self.assertTrue(sd.is_capable(capabilities.BitMasks.WRITE_ACCESS))

    def test_every_operation_goes_through_the_client(self):
        sd = self.make_store()
        data = os.urandom(100 * KIB + 3)
        if store.MULTIHASH:
            result = sd.add('img', io.BytesIO(data), len(data), 'sha256')
            self.assertEqual(hashlib.sha256(data).hexdigest(), result[3])
        else:
            result = sd.add('img', io.BytesIO(data), len(data))
        # The VDI of this attempt: the image id and a random suffix.
        name = result[0].rsplit(':', 1)[1]
        self.assertIsNotNone(re.match(r'img\.[0-9a-f]{16}\Z', name))
        uri = 'sheepdog://127.0.0.1:%d:%s' % (self.port, name)
        self.assertEqual(uri, result[0])
        self.assertEqual(len(data), result[1])
        self.assertEqual(hashlib.md5(data).hexdigest(), result[2])
        loc = self.location(uri)
        self.assertEqual(len(data), sd.get_size(loc))
        stream, length = sd.get(loc, offset=5, chunk_size=10)
        self.assertEqual(10, length)
        self.assertEqual(data[5:15], b''.join(stream))
        sd.delete(loc)
        self.assertRaises(exceptions.NotFound, sd.get_size, loc)
        where = ('127.0.0.1', self.port, name)
        self.assertEqual([('check',), ('write', name, len(data)),
                          ('lookup',) + where, ('lookup',) + where,
                          ('read',) + where + (5, 10),
                          ('delete',) + where, ('lookup',) + where,
                          ('lookup',) + where],
                         StubNativeClient.calls)
        # Nothing ran dog, not even the fake.
        self.assertEqual([], self.dog.calls())

    def test_unknown_size_is_zero_for_the_client(self):
        sd = self.make_store()
        if store.MULTIHASH:
            uri = sd.add('img', io.BytesIO(b'abc'), 0, 'md5')[0]
        else:
            uri = sd.add('img', io.BytesIO(b'abc'), 0)[0]
        self.assertIn(('write', uri.rsplit(':', 1)[1], 0),
                      StubNativeClient.calls)

    def test_failed_check_disables_nothing(self):
        # Until issue 36 a failed check disabled uploads and deletes for
        # the process's life; it is now a warning, and every operation
        # asks the cluster itself.
        log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep',
            format='%(levelname)s %(message)s'))
        StubNativeClient.check_error = 'cluster at 127.0.0.1:1 is not ready'
        sd = self.make_store(configure=False)
        sd.configure(re_raise_bsc=True)
        self.assertIn('WARNING fastsheep store fastsheep: the sheepdog '
                      'cluster does not serve yet', log.output)
        self.assertIn('cluster at 127.0.0.1:1 is not ready', log.output)
        self.assertTrue(sd.is_capable(capabilities.BitMasks.WRITE_ACCESS))
        self.assertTrue(sd.is_capable(capabilities.BitMasks.READ_ACCESS))
        StubNativeClient.images['img'] = b'kept'
        loc = self.location('sheepdog://127.0.0.1:%d:img' % self.port)
        self.assertEqual(b'kept', b''.join(sd.get(loc)[0]))


class DogSelectedTest(base.StoreTestCase):

    def test_dog_client(self):
        sd = self.make_store()
        self.assertIsInstance(sd.client, dog_client.DogClient)
        self.assertEqual(os.path.join(self.dog.bin_dir, 'dog'),
                         sd.client.dog.command)
        self.assertEqual(['vdi', 'list', '-a', '127.0.0.1', '-p',
                          str(self.port)], self.dog.calls()[0][:6])

    def test_missing_command_names_the_client(self):
        self.useFixture(fixtures.EnvironmentVariable('PATH', '/nonexistent'))
        sd = self.make_store(configure=False)
        exc = self.assertRaises(exceptions.BadStoreConfiguration,
                                sd.configure, re_raise_bsc=True)
        self.assertIn('sheepdog_store_client = dog', str(exc))


class DeprecatedReaderTest(base.StoreTestCase):
    """``sheepdog_store_reader`` (deprecated) still chooses the client."""

    def conf_from_file(self, text, group='glance_store'):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'glance-api.conf')
        with open(path, 'w') as conf_file:
            conf_file.write(text)
        conf = cfg.ConfigOpts()
        conf.register_opts(opts.SHEEPDOG_OPTS, group=group)
        conf(['--config-file', path])
        return getattr(conf, group)

    def test_old_name_and_values(self):
        for value in ('dog', 'native'):
            group = self.conf_from_file(
                '[glance_store]\nsheepdog_store_reader = %s\n' % value)
            self.assertEqual(value, group.sheepdog_store_client)

    def test_old_name_in_a_backend_group(self):
        group = self.conf_from_file('[fast]\nsheepdog_store_reader = dog\n',
                                    group='fast')
        self.assertEqual('dog', group.sheepdog_store_client)

    def test_new_name_wins(self):
        group = self.conf_from_file('[glance_store]\n'
                                    'sheepdog_store_reader = dog\n'
                                    'sheepdog_store_client = native\n')
        self.assertEqual('native', group.sheepdog_store_client)

    def test_old_value_checked(self):
        group = self.conf_from_file(
            '[glance_store]\nsheepdog_store_reader = fast\n')
        self.assertRaises(cfg.ConfigFileValueError, getattr, group,
                          'sheepdog_store_client')

    def test_store_with_old_name_uses_dog(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'glance-api.conf')
        with open(path, 'w') as conf_file:
            conf_file.write('[glance_store]\nsheepdog_store_reader = dog\n'
                            'sheepdog_store_port = %d\n' % self.port)
        conf = cfg.ConfigOpts()
        conf(['--config-file', path])
        sd = store.Store(conf)
        sd.configure(re_raise_bsc=True)
        self.assertIsInstance(sd.client, dog_client.DogClient)
