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

import os
import sys

import fixtures
from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep.dog import command as dog_command
from glance_store_fastsheep.tests.unit import base as test_base


class ErrorMapTest(base.BaseTestCase):

    def test_not_found(self):
        exc = dog_command.error_for(
            'read', 'img', 1, b'Failed to open VDI img '
            b'(snapshot id: 0 snapshot tag: ): No VDI found')
        self.assertIsInstance(exc, exceptions.NotFound)
        self.assertIn('No VDI found', str(exc))

    def test_duplicate(self):
        exc = dog_command.error_for(
            'create', 'img', 1,
            b'Failed to create VDI img: VDI exists already')
        self.assertIsInstance(exc, exceptions.Duplicate)

    def test_no_space(self):
        exc = dog_command.error_for(
            'write', 'img', 1,
            b'Failed to write object: Server has no space '
            b'for new objects')
        self.assertIsInstance(exc, exceptions.StorageFull)

    def test_every_mapped_result(self):
        # dog prints sheep's sd_strerror text (sheepdog 1.0.1's
        # include/sheep.h) after its own words.
        for text, wanted in (
                (b'Failed to create VDI img: Maximum number of VDIs '
                 b'reached', exceptions.StorageFull),
                (b'Failed to open VDI img (snapshot id: 0 snapshot tag: '
                 b'x): Failed to find requested tag', exceptions.NotFound),
                (b'Failed to delete img: VDI is already locked',
                 exceptions.InUseByStore),
                (b'Failed to write object 800d27580000000a: Object is '
                 b'read-only', exceptions.Forbidden),
                (b'Failed to read object d2758400000001 I/O error',
                 exceptions.BackendException)):
            exc = dog_command.error_for('write', 'img', 1, text)
            self.assertIs(wanted, type(exc), text)
            self.assertIn(text.decode('ascii'), str(exc))

    def test_other(self):
        exc = dog_command.error_for(
            'list', 'img', 2, b'failed to connect to '
            b'127.0.0.1:7000: Connection refused')
        self.assertIsInstance(exc, exceptions.BackendException)
        self.assertIn('exit 2', str(exc))
        self.assertIn('Connection refused', str(exc))


class FindCommandTest(base.BaseTestCase):

    def setUp(self):
        super(FindCommandTest, self).setUp()
        self.bin = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('PATH', self.bin))

    def _tool(self, name):
        return test_base.write_script(os.path.join(self.bin, name),
                                      '#!/bin/sh\nexit 0\n')

    def test_dog_preferred(self):
        dog = self._tool('dog')
        self._tool('collie')
        self.assertEqual(dog, dog_command.find_command('dog'))

    def test_collie_fallback(self):
        collie = self._tool('collie')
        self.assertEqual(collie, dog_command.find_command('dog'))

    def test_no_fallback_for_other_names(self):
        self._tool('collie')
        self.assertIsNone(dog_command.find_command('mydog'))

    def test_missing(self):
        self.assertIsNone(dog_command.find_command('dog'))

    def test_absolute(self):
        dog = self._tool('dog')
        self.assertEqual(dog, dog_command.find_command(dog))
        self.assertIsNone(dog_command.find_command(dog + '-missing'))

    def test_not_executable(self):
        path = os.path.join(self.bin, 'dog')
        with open(path, 'w') as script:
            script.write('#!/bin/sh\n')
        self.assertIsNone(dog_command.find_command('dog'))
        self.assertIsNone(dog_command.find_command(path))

    def test_relative_path_refused(self):
        self.assertIsNone(dog_command.find_command('bin/dog'))


class CliRunTest(base.BaseTestCase):

    def setUp(self):
        super(CliRunTest, self).setUp()
        self.dog = self.useFixture(test_base.FakeDog())
        self.command = dog_command.DogCommand(
            os.path.join(self.dog.bin_dir, 'dog'), 10)

    def test_argv_has_no_shell(self):
        argv = self.command.argv('read', '10.0.0.1', 7000, 'img', 0, 4096)
        self.assertEqual([self.command.command, 'vdi', 'read',
                          '-a', '10.0.0.1', '-p', '7000', 'img', '0', '4096'],
                         argv)

    def test_list_and_stat(self):
        self.dog.put('img', b'x' * 10)
        self.assertEqual(10, self.command.stat('127.0.0.1', 7000, 'img').size)
        self.assertIsNone(self.command.stat('127.0.0.1', 7000, 'other'))
        self.assertEqual(['img'], [i.name for i in
                                   self.command.list('127.0.0.1', 7000)])
        self.assertEqual(['vdi', 'list', '-a', '127.0.0.1', '-p', '7000',
                          '-r', 'img'], self.dog.calls()[0])

    def test_check_raises_mapped_error(self):
        self.assertRaises(exceptions.NotFound, self.command.check, 'resize',
                          '127.0.0.1', 7000, 'nope', 4096)

    def test_cluster_down(self):
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_DOWN', '1'))
        exc = self.assertRaises(exceptions.BackendException, self.command.list,
                                '127.0.0.1', 7000)
        self.assertIn('Connection refused', str(exc))

    def test_timeout_kills(self):
        slow = test_base.write_script(
            os.path.join(self.dog.bin_dir, 'slow'),
            # PATH holds the fake dog only (FakeDog): the sleeper is
            # this interpreter, by its absolute path.
            '#!/bin/sh\necho $$ > %s/pid\nexec %s -c "import time; '
            'time.sleep(30)"\n' % (self.dog.bin_dir, sys.executable))
        slow_cli = dog_command.DogCommand(slow, 2)
        exc = self.assertRaises(exceptions.BackendException, slow_cli.run,
                                'list', '127.0.0.1', 7000)
        self.assertIn('timed out', str(exc))
        with open(os.path.join(self.dog.bin_dir, 'pid')) as pid_file:
            pid = int(pid_file.read())
        # Killed and reaped: the pid no longer exists, not even a zombie.
        self.assertRaises(OSError, os.kill, pid, 0)

    def test_missing_binary(self):
        gone = dog_command.DogCommand('/nonexistent/dog', 5)
        exc = self.assertRaises(exceptions.BackendException, gone.run,
                                'list', '127.0.0.1', 7000)
        self.assertIn('cannot run', str(exc))


class CommandNamesTest(base.BaseTestCase):

    def test_default_falls_back_to_collie(self):
        self.assertEqual(('dog', 'collie'), dog_command.command_names('dog'))

    def test_other_names_have_no_fallback(self):
        self.assertEqual(('mydog',), dog_command.command_names('mydog'))
