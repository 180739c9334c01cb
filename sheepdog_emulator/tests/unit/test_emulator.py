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
"""The sheepdog CLI emulator against sheepdog 1.0 ``dog``'s behaviour.

Every case runs the real wrapper scripts in a subprocess, because the
drivers only ever see the emulator that way; the expected formats, exit
codes and messages are those of the real CLI (doc/source/emulator.rst).
"""

import os
import re
import subprocess
import sys

import fixtures
from oslotest import base

from glance_store_fastsheep.tests import emulator_fixture
from sheepdog_emulator import cluster
from sheepdog_emulator import codec
from sheepdog_emulator import emulator

MIB = 1 << 20
OBJ = 4 * MIB


class EmulatorTestCase(base.BaseTestCase):

    def setUp(self):
        super(EmulatorTestCase, self).setUp()
        self.emu = self.useFixture(emulator_fixture.SheepdogEmulator())
        # Knob env overrides of the outer environment must not leak in.
        for name in cluster.KNOBS:
            self.useFixture(fixtures.EnvironmentVariable(
                'SHEEPDOG_EMULATOR_' + name.upper()))
        self.useFixture(fixtures.EnvironmentVariable('SHEEPDOG_DOG_ADDR'))
        self.useFixture(fixtures.EnvironmentVariable('SHEEPDOG_DOG_PORT'))

    def dog(self, *args, **kwargs):
        """Run the dog wrapper: (exit code, stdout bytes, stderr text)."""
        prog = kwargs.pop('prog', self.emu.dog_path)
        data = kwargs.pop('stdin', b'')
        proc = subprocess.Popen((prog,) + args, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, **kwargs)
        out, err = proc.communicate(data)
        return proc.returncode, out, err.decode('utf-8')

    def assertDog(self, args, code=0, stdin=b''):
        rc, out, err = self.dog(*args, stdin=stdin)
        self.assertEqual(code, rc, 'dog %s: %s' % (' '.join(args), err))
        return out, err


class TestSyntax(EmulatorTestCase):

    def test_no_arguments_prints_usage_and_succeeds(self):
        # Pike's configure_add runs a bare `collie` and needs exit 0.
        # dog calls itself "dog" whatever it was started as.
        for path in (self.emu.dog_path, self.emu.collie_path):
            rc, out, err = self.dog(prog=path)
            self.assertEqual(0, rc)
            text = out.decode()
            self.assertTrue(text.startswith(
                'Sheepdog administrator utility'))
            self.assertIn('Usage: dog <command> <subcommand>', text)
            self.assertIn('  vdi read ', text)

    def test_help_flags(self):
        for flag in ('-h', '--help', 'help'):
            out, err = self.assertDog([flag])
            self.assertIn(b'Available commands:', out)

    def test_unknown_command(self):
        out, err = self.assertDog(['frobnicate'], code=64)
        self.assertEqual("Invalid command 'frobnicate'\n"
                         "Try 'dog --help' for more information.\n", err)

    def test_only_vdi_commands(self):
        # No driver calls `node` or `cluster` commands: not emulated.
        for cmd in ('node', 'cluster'):
            out, err = self.assertDog([cmd, 'list'], code=64)
            self.assertEqual("Invalid command '%s'\n"
                             "Try 'dog --help' for more information.\n"
                             % cmd, err)

    def test_unknown_subcommand(self):
        out, err = self.assertDog(['vdi', 'frobnicate'], code=64)
        self.assertTrue(err.startswith(
            "Invalid command 'vdi frobnicate'\nAvailable vdi commands:\n"))
        self.assertIn('  vdi write\n', err)
        self.assertIn('  vdi snapshot\n', err)
        out, err = self.assertDog(['vdi', 'snapshot', 'img'], code=64)
        self.assertEqual("sheepdog emulator: 'vdi snapshot' is not "
                         "emulated\n", err)
        out, err = self.assertDog(['vdi'], code=64)
        self.assertTrue(err.startswith('Available vdi commands:'))

    def test_subcommand_help(self):
        out, err = self.assertDog(['vdi', 'read', '-h'])
        self.assertTrue(out.startswith(
            b'Usage: dog vdi read [-s snapshot] [-a address] [-p port]'))
        self.assertIn(b'<vdiname> [<offset> [<len>]]', out)

    def test_missing_argument_prints_usage(self):
        out, err = self.assertDog(['vdi', 'read'], code=64)
        self.assertTrue(out.startswith(b'Usage: dog vdi read'))

    def test_invalid_option(self):
        out, err = self.assertDog(['vdi', 'read', '-x', 'img'], code=64)
        # getopt names the program as it was started.
        self.assertEqual("%s: invalid option -- 'x'\n" % self.emu.dog_path +
                         "Try 'dog --help' for more information.\n", err)
        # -P is a valid vdi option, but not one of `vdi read`'s.
        self.assertDog(['vdi', 'read', '-P', 'img'], code=64)

    def test_invalid_port_and_address(self):
        out, err = self.assertDog(['vdi', 'list', '-p', 'x'], code=64)
        self.assertEqual("Invalid port number 'x'\n", err)
        self.assertDog(['vdi', 'list', '-p', '70000'], code=64)
        out, err = self.assertDog(['vdi', 'list', '-a', 'no.such.host'],
                                  code=1)
        self.assertEqual('Invalid ip address no.such.host\n', err)

    def test_options_anywhere_and_long_forms(self):
        self.assertDog(['vdi', 'create', 'img', '1M'])
        for args in (['vdi', 'list', '-r', '-a', '127.0.0.1', '-p', '7000',
                      'img'],
                     ['vdi', 'list', 'img', '-r', '-a127.0.0.1', '-p7000'],
                     ['vdi', 'list', '--raw', '--address=127.0.0.1',
                      '--port', '7000', 'img']):
            out, err = self.assertDog(args)
            self.assertTrue(out.startswith(b'= img 0 1048576 '), args)

    def test_size_suffixes(self):
        for text, size in (('512', 512), ('100B', 100), ('2K', 2048),
                           ('3M', 3 * MIB), ('1G', 1 << 30),
                           ('1T', 1 << 40), ('1.5M', 3 * MIB // 2),
                           ('4k', 4096)):
            name = 'img-%s' % text.replace('.', '_')
            self.assertDog(['vdi', 'create', name, text])
            self.assertEqual(size, self.emu.vdi_size(name), text)
        out, err = self.assertDog(['vdi', 'create', 'bad', '1X'], code=64)
        self.assertIn("Invalid size '1X'", err)
        self.assertTrue(out.startswith(b'Usage: dog vdi create'))
        self.assertFalse(self.emu.vdi_exists('bad'))


class TestVdiLifecycle(EmulatorTestCase):

    def test_create_then_list_raw_line(self):
        self.assertDog(['vdi', 'create', 'img1', '1G'])
        out, err = self.assertDog(['vdi', 'list', '-r', 'img1'])
        line = out.decode()
        # = name snapid size used shared ctime vid copies tag shift; the
        # empty tag leaves two spaces. 9e028f is sheepdog's vid of img1.
        self.assertRegex(line, r'^= img1 0 1073741824 0 0 \d+ 9e028f 1  22'
                               r'\n$')
        self.assertEqual(9, line.split(' ').index(''))
        self.assertEqual(1073741824, int(line.split(' ')[3]))

    def test_used_counts_written_objects(self):
        self.assertDog(['vdi', 'create', 'img1', '1G'])
        self.assertDog(['vdi', 'write', 'img1', str(OBJ + 10), '20'],
                       stdin=b'x' * 20)
        out, err = self.assertDog(['vdi', 'list', '-r', 'img1'])
        self.assertEqual(str(OBJ), out.decode().split(' ')[4])

    def test_used_counts_every_object_of_a_full_image(self):
        size = 2 * OBJ + 7
        self.assertDog(['vdi', 'create', 'img1', str(size)])
        self.assertDog(['vdi', 'write', 'img1', '0', str(size)],
                       stdin=b'y' * size)
        out, err = self.assertDog(['vdi', 'list', '-r', 'img1'])
        self.assertEqual(str(3 * OBJ), out.decode().split(' ')[4])

    def test_list_human_readable(self):
        self.assertDog(['vdi', 'create', 'img1', '1G'])
        out, err = self.assertDog(['vdi', 'list'])
        lines = out.decode().splitlines()
        self.assertTrue(lines[0].startswith('  Name        Id    Size'))
        self.assertRegex(lines[1], r'^  img1 +0 +1\.0 GB +0\.0 MB +0\.0 MB '
                                   r'\d{4}-\d\d-\d\d \d\d:\d\d +9e028f +1 ')

    def test_list_missing_prints_nothing(self):
        out, err = self.assertDog(['vdi', 'list', '-r', 'nope'])
        self.assertEqual(b'', out)
        self.assertEqual('', err)

    def test_list_all_escapes_names(self):
        self.assertDog(['vdi', 'create', 'with space', '1M'])
        self.assertDog(['vdi', 'create', 'back\\slash', '1M'])
        self.assertDog(['vdi', 'create', 'plain', '1M'])
        out, err = self.assertDog(['vdi', 'list', '-r'])
        names = sorted(line.split(' 0 ')[0][2:]
                       for line in out.decode().splitlines())
        self.assertEqual(['back\\\\slash', 'plain', 'with\\ space'], names)
        self.assertEqual(['back\\slash', 'plain', 'with space'],
                         self.emu.list_vdis())

    def test_duplicate_create(self):
        self.assertDog(['vdi', 'create', 'img1', '1M'])
        out, err = self.assertDog(['vdi', 'create', 'img1', '2M'], code=1)
        self.assertEqual('Failed to create VDI img1: VDI exists already\n',
                         err)
        self.assertEqual(MIB, self.emu.vdi_size('img1'))

    def test_create_with_options(self):
        out, err = self.assertDog(['vdi', 'create', '-v', '-r', '-c', '2',
                                   '-z', '23', 'img1', '8M'])
        self.assertEqual(b'9e028f\n', out)
        out, err = self.assertDog(['vdi', 'list', '-r', 'img1'])
        self.assertTrue(out.decode().endswith(' 9e028f 2  23\n'))
        self.assertDog(['vdi', 'create', '-c', '0', 'img2', '1M'], code=1)
        out, err = self.assertDog(['vdi', 'create', 'huge', '5T'], code=64)
        self.assertIn("please use '-y'", err)
        self.assertDog(['vdi', 'create', '-y', 'huge', '5T'])

    def test_delete(self):
        self.assertDog(['vdi', 'create', 'img1', '1M'])
        self.assertDog(['vdi', 'delete', 'img1'])
        self.assertFalse(self.emu.vdi_exists('img1'))
        self.assertEqual([], self.emu.list_vdis())
        # dog exits 0 even when there was nothing to delete.
        out, err = self.assertDog(['vdi', 'delete', 'img1'])
        self.assertEqual('Failed to open VDI img1 (snapshot id: 0 snapshot '
                         'tag: ): No VDI found\n', err)

    def test_snapshot_of_an_image_without_snapshots(self):
        self.assertDog(['vdi', 'create', 'img1', '1M'])
        out, err = self.assertDog(['vdi', 'read', '-s', '1', 'img1'], code=1)
        self.assertEqual('Failed to open VDI img1 (snapshot id: 1 snapshot '
                         'tag: ): Failed to find requested tag\n', err)
        out, err = self.assertDog(['vdi', 'delete', '-s', 'tag', 'img1'])
        self.assertEqual('Failed to open VDI img1 (snapshot id: 0 snapshot '
                         'tag: tag): Failed to find requested tag\n', err)
        self.assertTrue(self.emu.vdi_exists('img1'))
        out, err = self.assertDog(['vdi', 'read', '-s', '1', 'nope'], code=1)
        self.assertEqual('Failed to open VDI nope (snapshot id: 1 snapshot '
                         'tag: ): No VDI found\n', err)

    def test_resize(self):
        self.assertDog(['vdi', 'create', 'img1', '1M'])
        self.assertDog(['vdi', 'resize', 'img1', '3M'])
        self.assertEqual(3 * MIB, self.emu.vdi_size('img1'))
        out, err = self.assertDog(['vdi', 'resize', 'img1', '2M'], code=64)
        self.assertEqual('Shrinking VDIs is not implemented\n', err)
        self.assertTrue(out.startswith(b'Usage: dog vdi resize'))
        self.assertEqual(3 * MIB, self.emu.vdi_size('img1'))
        out, err = self.assertDog(['vdi', 'resize', 'nope', '2M'], code=1)
        self.assertIn('No VDI found', err)

    def test_missing_vdi_on_read_write_resize(self):
        message = ('Failed to open VDI nope (snapshot id: 0 snapshot tag: '
                   '): No VDI found\n')
        for args in (['read', 'nope'], ['write', 'nope', '0', '1'],
                     ['resize', 'nope', '1G']):
            out, err = self.assertDog(['vdi'] + args, code=1, stdin=b'x')
            self.assertEqual(message, err)
            self.assertEqual(b'', out)

    def test_long_names_are_cut_like_sheepdog(self):
        name = 'n' * 300
        self.assertDog(['vdi', 'create', name, '1M'])
        self.assertTrue(self.emu.vdi_exists('n' * 255))
        out, err = self.assertDog(['vdi', 'list', '-r', 'n' * 255])
        self.assertTrue(out.startswith(b'= ' + b'n' * 255 + b' 0 '))

    def test_names_with_slashes_and_dots_stay_inside_the_cluster(self):
        for name in ('../../escape', '.hidden', 'a/b'):
            self.assertDog(['vdi', 'create', name, '1M'])
            self.assertDog(['vdi', 'write', name, '0', '3'], stdin=b'abc')
            self.assertTrue(self.emu.vdi_path(name).startswith(
                self.emu.cluster_dir + os.sep))
            out, err = self.assertDog(['vdi', 'read', name, '0', '3'])
            self.assertEqual(b'abc', out)
        self.assertEqual(sorted(['../../escape', '.hidden', 'a/b']),
                         self.emu.list_vdis())


class TestReadWrite(EmulatorTestCase):

    def setUp(self):
        super(TestReadWrite, self).setUp()
        self.data = os.urandom(3 * OBJ)
        self.emu.create_vdi('img', self.data)

    def test_read_whole_and_ranges(self):
        out, err = self.assertDog(['vdi', 'read', 'img'])
        self.assertEqual(self.data, out)
        out, err = self.assertDog(['vdi', 'read', 'img', str(OBJ - 5)])
        self.assertEqual(self.data[OBJ - 5:], out)
        out, err = self.assertDog(['vdi', 'read', 'img', '5M', '1K'])
        self.assertEqual(self.data[5 * MIB:5 * MIB + 1024], out)

    def test_read_past_end_is_cut_short(self):
        size = len(self.data)
        out, err = self.assertDog(['vdi', 'read', 'img', str(size - 10),
                                   '1G'])
        self.assertEqual(self.data[-10:], out)
        out, err = self.assertDog(['vdi', 'read', 'img', str(size)])
        self.assertEqual(b'', out)

    def test_read_offset_beyond_end(self):
        out, err = self.assertDog(['vdi', 'read', 'img',
                                   str(len(self.data) + 1)], code=1)
        self.assertEqual('Read offset is beyond the end of the VDI\n', err)
        self.assertEqual(b'', out)

    def test_read_to_a_regular_file(self):
        target = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'out')
        with open(target, 'wb') as dst:
            proc = subprocess.Popen([self.emu.dog_path, 'vdi', 'read',
                                     'img'],
                                    stdout=dst, stderr=subprocess.PIPE)
            err = proc.communicate()[1]
        self.assertEqual(0, proc.returncode, err)
        with open(target, 'rb') as src:
            self.assertEqual(self.data, src.read())

    def test_write_range(self):
        self.assertDog(['vdi', 'write', 'img', '1000', '6'], stdin=b'abcdef')
        expected = self.data[:1000] + b'abcdef' + self.data[1006:]
        self.assertEqual(expected, self.emu.vdi_bytes('img'))

    def test_write_from_a_regular_file(self):
        payload = os.urandom(OBJ + 7)
        source = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'in')
        with open(source, 'wb') as dst:
            dst.write(payload)
        with open(source, 'rb') as src:
            proc = subprocess.Popen([self.emu.dog_path, 'vdi', 'write',
                                     'img', '0', str(len(payload))],
                                    stdin=src, stderr=subprocess.PIPE)
            err = proc.communicate()[1]
        self.assertEqual(0, proc.returncode, err)
        self.assertEqual(payload + self.data[len(payload):],
                         self.emu.vdi_bytes('img'))

    def test_short_stdin_zero_pads_to_the_object_boundary(self):
        self.assertDog(['vdi', 'write', 'img', str(MIB), str(8 * MIB)],
                       stdin=b'z' * 100)
        got = self.emu.vdi_bytes('img')
        self.assertEqual(self.data[:MIB], got[:MIB])
        self.assertEqual(b'z' * 100, got[MIB:MIB + 100])
        self.assertEqual(b'\0' * (OBJ - MIB - 100), got[MIB + 100:OBJ])
        self.assertEqual(self.data[OBJ:], got[OBJ:])

    def test_stdin_ending_on_a_boundary_zeroes_the_next_object(self):
        # dog reads the next piece, gets nothing and still sends a whole
        # object of zeros: callers must pass exact lengths.
        payload = os.urandom(OBJ)
        self.assertDog(['vdi', 'write', 'img', str(OBJ), str(2 * OBJ)],
                       stdin=payload)
        got = self.emu.vdi_bytes('img')
        self.assertEqual(self.data[:OBJ], got[:OBJ])
        self.assertEqual(payload, got[OBJ:2 * OBJ])
        self.assertEqual(b'\0' * OBJ, got[2 * OBJ:])

    def test_write_past_end_is_cut_short(self):
        size = len(self.data)
        self.assertDog(['vdi', 'write', 'img', str(size - 4), '8'],
                       stdin=b'12345678')
        got = self.emu.vdi_bytes('img')
        self.assertEqual(size, len(got))
        self.assertEqual(b'1234', got[-4:])

    def test_write_offset_beyond_end(self):
        out, err = self.assertDog(['vdi', 'write', 'img',
                                   str(len(self.data) + 1), '1'],
                                  code=1, stdin=b'x')
        self.assertEqual('Write offset is beyond the end of the VDI\n', err)
        self.assertEqual(self.data, self.emu.vdi_bytes('img'))

    def test_concurrent_disjoint_writers(self):
        self.emu.create_vdi('big', size=8 * OBJ)
        payload = os.urandom(8 * OBJ)
        procs = []
        for i in range(4):
            start, length = 2 * i * OBJ, 2 * OBJ
            proc = subprocess.Popen(
                [self.emu.dog_path, 'vdi', 'write', 'big', str(start),
                 str(length)], stdin=subprocess.PIPE,
                stderr=subprocess.PIPE)
            procs.append((proc, payload[start:start + length]))
        for proc, chunk in procs:
            proc.stdin.write(chunk)
            proc.stdin.close()
        for proc, chunk in procs:
            self.assertEqual(0, proc.wait(), proc.stderr.read())
            proc.stderr.close()
        self.assertEqual(payload, self.emu.vdi_bytes('big'))

    def test_pike_driver_invocations(self):
        # The exact argv shapes glance_store 0.22.0's sheepdog driver uses.
        common = ['-a', '127.0.0.1', '-p', '7000']
        out, err = self.assertDog(['vdi', 'list', '-r'] + common + ['img'],
                                  )
        self.assertEqual(len(self.data), int(out.decode().split(' ')[3]))
        self.assertDog(['vdi', 'create'] + common + ['new', str(2 * OBJ)])
        self.assertDog(['vdi', 'resize'] + common + ['new', str(3 * OBJ)])
        self.assertDog(['vdi', 'write'] + common + ['new', '0', str(OBJ)],
                       stdin=self.data[:OBJ])
        out, err = self.assertDog(['vdi', 'read'] + common +
                                  ['new', '0', str(OBJ)])
        self.assertEqual(self.data[:OBJ], out)
        self.assertDog(['vdi', 'delete'] + common + ['new'])
        self.assertFalse(self.emu.vdi_exists('new'))


class TestClusterAddress(EmulatorTestCase):

    def test_other_port_is_another_cluster(self):
        self.assertDog(['vdi', 'create', 'img', '1M'])
        out, err = self.assertDog(['vdi', 'list', '-p', '7001'], code=2)
        # dog tries twice: a cached connection, then a short one.
        self.assertEqual(2 * ('failed to connect to 127.0.0.1:7001: '
                              'Connection refused\n'), err)


class TestDaemonDown(EmulatorTestCase):

    def setUp(self):
        super(TestDaemonDown, self).setUp()
        self.emu.create_vdi('img', b'data')
        self.emu.stop()
        # dog tries twice: a cached connection, then a short one.
        self.refused = 2 * ('failed to connect to 127.0.0.1:7000: '
                            'Connection refused\n')

    def test_list_and_create_exit_2(self):
        out, err = self.assertDog(['vdi', 'list', '-r', 'img'], code=2)
        self.assertEqual(self.refused, err)
        self.assertEqual(b'', out)
        # Without -r, dog prints its header before it connects.
        out, err = self.assertDog(['vdi', 'list', 'img'], code=2)
        self.assertTrue(out.startswith(b'  Name        Id    Size'))
        self.assertEqual(self.refused, err)
        out, err = self.assertDog(['vdi', 'create', 'new', '1M'], code=2)
        self.assertTrue(err.startswith(self.refused))
        self.assertFalse(self.emu.vdi_exists('new'))

    def test_read_write_resize_exit_1_with_io_error(self):
        for args in (['read', 'img'], ['write', 'img', '0', '1'],
                     ['resize', 'img', '1M']):
            out, err = self.assertDog(['vdi'] + args, code=1, stdin=b'x')
            self.assertEqual(self.refused + 'Failed to open VDI img '
                             '(snapshot id: 0 snapshot tag: ): I/O error\n',
                             err)

    def test_delete_exits_0_and_keeps_the_vdi(self):
        out, err = self.assertDog(['vdi', 'delete', 'img'])
        self.assertTrue(err.startswith(self.refused))
        self.assertTrue(self.emu.vdi_exists('img'))

    def test_start_again(self):
        self.emu.start()
        out, err = self.assertDog(['vdi', 'read', 'img'])
        self.assertEqual(b'data', out)

    def test_usage_needs_no_daemon(self):
        self.assertDog([])


class TestKnobs(EmulatorTestCase):

    def setUp(self):
        super(TestKnobs, self).setUp()
        self.data = os.urandom(3 * OBJ)
        self.emu.create_vdi('img', self.data)

    def test_fail_after_bytes_on_read(self):
        self.emu.set_knobs(fail_after_bytes=5 * MIB + 3)
        out, err = self.assertDog(['vdi', 'read', 'img'], code=1)
        self.assertEqual(self.data[:5 * MIB + 3], out)
        self.assertEqual('Failed to read object d2758400000001 I/O error\n'
                         'Failed to read VDI\n', err)

    def test_fail_at_offset_only_hits_the_covering_range(self):
        self.emu.set_knobs(fail_at_offset=OBJ + 10)
        out, err = self.assertDog(['vdi', 'read', 'img', '0', str(OBJ)])
        self.assertEqual(self.data[:OBJ], out)
        out, err = self.assertDog(['vdi', 'read', 'img', str(OBJ),
                                   str(OBJ)], code=1)
        self.assertEqual(self.data[OBJ:OBJ + 10], out)
        self.assertIn('Failed to read VDI', err)

    def test_short_bytes_truncates_silently(self):
        self.emu.set_knobs(short_bytes=1234)
        out, err = self.assertDog(['vdi', 'read', 'img'])
        self.assertEqual(self.data[:1234], out)
        self.assertEqual('', err)

    def test_fault_vdi_limits_faults_to_one_vdi(self):
        self.emu.create_vdi('other', b'other data')
        self.emu.set_knobs(short_bytes=2, fault_vdi='img')
        out, err = self.assertDog(['vdi', 'read', 'other'])
        self.assertEqual(b'other data', out)
        out, err = self.assertDog(['vdi', 'read', 'img'])
        self.assertEqual(self.data[:2], out)

    def test_fail_after_bytes_on_write_keeps_whole_objects_before(self):
        self.emu.set_knobs(fail_after_bytes=OBJ + 100)
        payload = os.urandom(3 * OBJ)
        out, err = self.assertDog(['vdi', 'write', 'img', '0',
                                   str(3 * OBJ)], code=1, stdin=payload)
        self.assertEqual('Failed to write object d2758400000001: I/O error\n'
                         'Failed to write VDI\n', err)
        got = self.emu.vdi_bytes('img')
        self.assertEqual(payload[:OBJ], got[:OBJ])
        self.assertEqual(self.data[OBJ:], got[OBJ:])

    def test_fail_ops(self):
        self.emu.set_knobs(fail_ops=['create', 'write', 'read', 'list',
                                     'delete', 'resize'])
        out, err = self.assertDog(['vdi', 'create', 'new', '1M'], code=1)
        self.assertEqual('Failed to create VDI new: I/O error\n', err)
        self.assertFalse(self.emu.vdi_exists('new'))
        self.assertDog(['vdi', 'write', 'img', '0', '3'], code=1,
                       stdin=b'abc')
        self.assertEqual(self.data, self.emu.vdi_bytes('img'))
        out, err = self.assertDog(['vdi', 'read', 'img'], code=1)
        self.assertEqual(b'', out)
        self.assertDog(['vdi', 'list', '-r', 'img'], code=2)
        self.assertDog(['vdi', 'resize', 'img', '1G'], code=1)
        # A failed delete still exits 0, as dog does: the VDI stays.
        out, err = self.assertDog(['vdi', 'delete', 'img'])
        self.assertEqual('Failed to delete img: I/O error\n', err)
        self.assertTrue(self.emu.vdi_exists('img'))
        self.emu.set_knobs(fail_ops=None)
        out, err = self.assertDog(['vdi', 'read', 'img', '0', '4'])
        self.assertEqual(self.data[:4], out)

    def test_env_overrides_knobs_file(self):
        self.emu.set_knobs(short_bytes=10)
        self.useFixture(fixtures.EnvironmentVariable(
            'SHEEPDOG_EMULATOR_SHORT_BYTES', '3'))
        out, err = self.assertDog(['vdi', 'read', 'img'])
        self.assertEqual(self.data[:3], out)

    def test_service_and_latency_knobs_keep_bytes_exact(self):
        # Timing is the bench's business; here only correctness.
        self.emu.set_knobs(latency_ms=1, write_latency_ms=1,
                           object_service_ms=1)
        out, err = self.assertDog(['vdi', 'read', 'img', '100',
                                   str(2 * OBJ)])
        self.assertEqual(self.data[100:100 + 2 * OBJ], out)
        payload = os.urandom(2 * OBJ)
        self.assertDog(['vdi', 'write', 'img', '7', str(2 * OBJ)],
                       stdin=payload)
        self.assertEqual(payload, self.emu.vdi_bytes('img')[7:7 + 2 * OBJ])

    def test_invocation_cost_is_on_by_default(self):
        # What every real `dog vdi read|write` pays: a lookup and a read
        # of the whole inode object, whatever range is asked.
        knobs = cluster.load_knobs(self.emu.cluster)
        self.assertEqual(cluster.SD_INODE_SIZE, knobs['inode_read_bytes'])
        self.assertGreater(cluster.SD_INODE_SIZE, 4 * MIB)
        self.assertLess(cluster.SD_INODE_SIZE, 4 * MIB + 64 * 1024)
        self.assertGreater(knobs['lookup_ms'], 0)
        self.assertIsNone(knobs.get('object_service_ms'))

    def test_invocation_cost_keeps_bytes_exact(self):
        # A VDI much smaller than the inode object: the range still
        # comes back exact, and the inode read leaves the cluster's
        # inode file a sparse SD_INODE_SIZE.
        self.emu.create_vdi('tiny', b'0123456789')
        out, err = self.assertDog(['vdi', 'read', 'tiny', '3', '4'])
        self.assertEqual(b'3456', out)
        self.assertDog(['vdi', 'write', 'tiny', '2', '3'], stdin=b'abc')
        self.assertEqual(b'01abc56789', self.emu.vdi_bytes('tiny'))
        self.assertEqual(cluster.SD_INODE_SIZE, os.path.getsize(
            self.emu.cluster.inode_path()))
        self.emu.set_knobs(inode_read_bytes=0, lookup_ms=0)
        knobs = cluster.load_knobs(self.emu.cluster)
        self.assertFalse(knobs['inode_read_bytes'])
        out, err = self.assertDog(['vdi', 'read', 'tiny', '0', '2'])
        self.assertEqual(b'01', out)

    def test_knob_parsing(self):
        self.emu.set_knobs(latency_ms=5, fail_ops=['write'])
        self.useFixture(fixtures.EnvironmentVariable(
            'SHEEPDOG_EMULATOR_FAIL_OPS', 'create, read'))
        knobs = cluster.load_knobs(self.emu.cluster)
        self.assertEqual(5.0, knobs['latency_ms'])
        self.assertEqual(['create', 'read'], knobs['fail_ops'])
        self.assertRaises(ValueError, self.emu.set_knobs, no_such_knob=1)

    def test_call_log_counts_processes(self):
        self.assertDog(['vdi', 'read', 'img', '0', '1'])
        self.assertDog(['vdi', 'list', '-r', 'img'])
        rc, out, err = self.dog('vdi', 'read', 'img', '0', '1',
                                prog=self.emu.collie_path)
        self.assertEqual(0, rc)
        self.assertEqual([['dog', 'vdi', 'read', 'img', '0', '1'],
                          ['dog', 'vdi', 'list', '-r', 'img'],
                          ['collie', 'vdi', 'read', 'img', '0', '1']],
                         self.emu.call_log())
        self.assertEqual(2, len(self.emu.calls('read')))


class TestSetUp(base.BaseTestCase):

    def _admin(self, *args):
        """Run the sheepdog-emulator console entry: (status, stdout)."""
        proc = subprocess.Popen(
            [sys.executable, '-m', 'sheepdog_emulator.emulator'] +
            list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate()
        self.assertEqual(0, proc.returncode, err)
        return out

    def test_admin_cli_and_env_root(self):
        root = self.useFixture(fixtures.TempDir()).path
        bin_dir = os.path.join(root, 'bin')
        out = self._admin('--root', root, '--port', '7100', 'setup',
                          '--bin', bin_dir)
        self.assertIn(('export PATH=%s:' % bin_dir).encode('utf-8'), out)
        dog = os.path.join(bin_dir, 'dog')
        self.assertEqual(0, subprocess.call([dog, 'vdi', 'create', '-p',
                                             '7100', 'img', '1M']))
        self.assertTrue(os.path.exists(os.path.join(
            root, '127.0.0.1:7100', 'vdis', 'img')))
        # Run directly (no baked root), the program takes the env root.
        env = dict(os.environ, SHEEPDOG_EMULATOR_ROOT=root)
        parent = os.path.dirname(os.path.dirname(
            os.path.abspath(emulator.__file__)))
        proc = subprocess.Popen(
            [emulator.python_for_wrappers(), '-S', '-E', '-m',
             'sheepdog_emulator.dog', 'vdi', 'list', '-r', '-p', '7100'],
            cwd=parent, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        out, err = proc.communicate()
        self.assertEqual(0, proc.returncode, err)
        self.assertTrue(out.startswith(b'= img 0 1048576 '))
        self._admin('--root', root, '--port', '7100', 'down')
        with open(os.devnull, 'wb') as devnull:
            self.assertEqual(2, subprocess.call(
                [dog, 'vdi', 'list', '-p', '7100'], stderr=devnull))

    def test_dog_has_no_admin_path(self):
        # One admin entry point: the sheepdog-emulator console script.
        root = self.useFixture(fixtures.TempDir()).path
        self._admin('--root', root, 'setup', '--bin', root)
        rc = subprocess.call([os.path.join(root, 'dog'), '--emulator-admin',
                              '--root', root, 'down'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(64, rc)
        self.assertFalse(os.path.exists(os.path.join(
            root, '127.0.0.1:7000', 'DOWN')))

    def test_wrappers_exec_python3(self):
        root = self.useFixture(fixtures.TempDir()).path
        dog = emulator.install_wrappers(root, root, names=('dog',))[0]
        with open(dog) as src:
            shebang = src.readline()
        self.assertTrue(shebang.startswith('#!'))
        self.assertTrue(shebang.rstrip().endswith(' -SE'))
        version = subprocess.check_output(
            [shebang[2:].split()[0], '-c',
             'import sys; print(sys.version_info[0])'])
        self.assertEqual(b'3', version.strip())

    def test_python_for_wrappers_from_env(self):
        python3 = emulator.python_for_wrappers()
        self.useFixture(fixtures.EnvironmentVariable(
            emulator.PYTHON_ENV, python3))
        self.assertEqual(os.path.realpath(python3),
                         emulator.python_for_wrappers())

    def test_put_on_path(self):
        emu = self.useFixture(emulator_fixture.SheepdogEmulator(
            put_on_path=True, port=7002))
        self.assertEqual(0, subprocess.call(['collie', 'vdi', 'create',
                                             '-p', '7002', 'img', '1M']))
        self.assertTrue(emu.vdi_exists('img'))
        self.assertEqual(['img'], emu.list_vdis())

    def test_encode_name(self):
        names = ['a', 'a/b', '../x', '.x', 'sp ace', u'\u00e9', 'x' * 255]
        encoded = [cluster.encode_name(n) for n in names]
        self.assertEqual(len(set(encoded)), len(encoded))
        for enc in encoded:
            self.assertNotIn('/', enc)
            self.assertFalse(enc.startswith('.'))
            self.assertLessEqual(len(enc), 255)
        self.assertTrue(re.match(r'^[A-Za-z0-9._%~-]+$', ''.join(encoded)))

    def test_small_json_reader_agrees_with_json(self):
        import json
        for value in ({}, [], {'a': 1, 'b': [1, 2.5, 'x', None, True, False],
                               'c': u'q"\\\n\u00e9\t/', 'd': -3, 'e': 1e-3,
                               'f': [[], {}]}):
            for text in (json.dumps(value), json.dumps(value, indent=2),
                         json.dumps(value, ensure_ascii=False)):
                self.assertEqual(value, codec.parse_json(text))
        for bad in ('{', '{"a" 1}', '[1 2]', 'tru', '{"a": 1} x'):
            self.assertRaises((ValueError, IndexError, KeyError),
                              codec.parse_json, bad)
