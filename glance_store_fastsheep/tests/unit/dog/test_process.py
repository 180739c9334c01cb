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
"""The one class of dog transfer children (process.DogProcess)."""

import os

import fixtures
from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep.dog import command
from glance_store_fastsheep.dog import process
from glance_store_fastsheep.tests.unit import base as test_base


class _Settings(object):
    transfer_timeout = 0.5
    pipe_size = 65536


class SpawnTest(base.BaseTestCase):
    """spawn_transfer leaves nothing open when a step fails."""

    def open_fds(self):
        return sorted(os.listdir('/proc/self/fd'))

    def test_no_dev_null_leaves_no_fd(self):
        missing = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'no', 'null')
        self.useFixture(fixtures.MockPatchObject(os, 'devnull', missing))
        for child_reads in (True, False):
            before = self.open_fds()
            exc = self.assertRaises(
                exceptions.BackendException, process.spawn_transfer,
                ['/bin/true'], 65536, child_reads)
            self.assertIn('cannot open %s for /bin/true' % missing,
                          str(exc))
            self.assertEqual(before, self.open_fds())

    def test_no_process_leaves_no_fd(self):
        missing = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'dog')
        for child_reads in (True, False):
            before = self.open_fds()
            exc = self.assertRaises(
                exceptions.BackendException, process.spawn_transfer,
                [missing], 65536, child_reads)
            self.assertIn('cannot run %s' % missing, str(exc))
            self.assertEqual(before, self.open_fds())


class DogProcessTest(base.BaseTestCase):
    """Both directions: the exit checked, the error mapped, the kill."""

    def child(self, action, script):
        """A DogProcess running script as dog; reaped at cleanup."""
        bin_dir = self.useFixture(fixtures.TempDir()).path
        dog = test_base.write_script(os.path.join(bin_dir, 'dog'),
                                     '#!/bin/sh\n' + script)
        child = process.DogProcess(command.DogCommand(dog, 5), _Settings(),
                                   action, '127.0.0.1', 7000, 'img', 4096,
                                   512)
        self.addCleanup(os.close, child.fd)
        self.addCleanup(child.close)
        return child

    def test_exit_0_passes(self):
        for action in ('read', 'write'):
            child = self.child(action, 'exit 0\n')
            child.check_exit()
            self.assertTrue(child.done())

    def test_failure_is_sheeps_error(self):
        for action in ('read', 'write'):
            child = self.child(
                action, 'echo "Failed to open VDI img: No VDI found" >&2\n'
                'exit 1\n')
            exc = self.assertRaises(exceptions.NotFound, child.check_exit)
            self.assertIn('sheepdog `vdi %s` of img failed (exit 1)'
                          % action, str(exc))

    def test_no_exit_names_the_direction(self):
        read = self.child('read', 'exec sleep 30\n')
        exc = self.assertRaises(exceptions.BackendException,
                                read.check_exit)
        self.assertEqual('sheepdog `vdi read` of img did not exit 0.5s '
                         'after its output ended', str(exc))
        write = self.child('write', 'exec sleep 30\n')
        exc = self.assertRaises(exceptions.BackendException,
                                write.check_exit)
        self.assertEqual('sheepdog `vdi write` of img at offset 4096 did '
                         'not exit 0.5s after its input ended', str(exc))
        for child in (read, write):
            pid = child.proc.pid
            child.kill()
            # Killed and reaped: the pid no longer exists, not a zombie.
            self.assertRaises(OSError, os.kill, pid, 0)
