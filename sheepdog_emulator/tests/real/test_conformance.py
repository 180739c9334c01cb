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
"""The emulator's ``dog`` against a real sheepdog 1.0 ``dog``, call by call.

Each test runs one script of CLI invocations, in order, against a real
one-node cluster (fastpath_integration.harness.sheepdog) and against an
emulated cluster on the same port, and compares exit codes, stdout and
stderr. Only what is not deterministic is masked before the comparison:
creation times, ``-T``'s elapsed time, the program path that getopt puts
in its messages, and the version in the usage banner (the emulator says
it is one). Every mismatch of a script is reported at once.

The invocations are those of the driver (glance_store_fastsheep's
dog_command, store, upload and download: ``vdi ACTION -a A -p P ...``),
of Pike's in-tree driver and the quilt patches (``collie vdi ACTION ...``
and a bare ``collie``), and of the emulator's own tests, plus the error
cases a driver must tell apart.
"""

import os
import re
import subprocess

import fixtures
from oslotest import base

from fastpath_integration.harness import host
from fastpath_integration.harness import sheepdog
from glance_store_fastsheep.tests import emulator_fixture
from glance_store_fastsheep.tests.real.base import REQUIRE_VARIABLE
from sheepdog_emulator import cluster

ADDRESS = '127.0.0.1'
MIB = 1 << 20
OBJ = 4 * MIB
# Deterministic payloads: a write must store the same bytes on both.
PATTERN = bytes(bytearray(range(251))) * (2 * OBJ // 251 + 1)

_CTIME = re.compile(br'^(= (?:\\.|[^ \\])* \d+ \d+ \d+ \d+ )\d+ ', re.M)
_WHEN = re.compile(br'\d{4}-\d\d-\d\d \d\d:\d\d')
_ELAPSED = re.compile(br'Elapsed time: [0-9.]+ seconds')
_VERSION = re.compile(br'^(Sheepdog administrator utility \(version '
                      br'1\.0\.1)[^\n]*\)')


def masked(data, program):
    """data with what legitimately differs between two runs masked."""
    data = data.replace(program.encode('utf-8'), b'PROGRAM')
    data = _CTIME.sub(br'\1CTIME ', data)
    data = _WHEN.sub(b'WHEN', data)
    data = _ELAPSED.sub(b'Elapsed time: T seconds', data)
    return _VERSION.sub(br'\1)', data)


class ConformanceTestCase(base.BaseTestCase):

    def setUp(self):
        # Before oslotest points HOME at a temporary directory: the build
        # tool's cache lives under the real one.
        available = sheepdog.available()
        super(ConformanceTestCase, self).setUp()
        if not available:
            if os.environ.get(REQUIRE_VARIABLE):
                self.fail('%s is set but %s' % (REQUIRE_VARIABLE,
                                                sheepdog.SKIP_REASON))
            sheepdog.record_skip('the emulator against a real dog')
            self.skipTest('the emulator was not compared with a real dog: '
                          '%s; tox -e real and tox -e py27 run this where '
                          'tools/build-sheepdog.sh finds sheepdog'
                          % sheepdog.SKIP_REASON)
        for name in ['SHEEPDOG_DOG_ADDR', 'SHEEPDOG_DOG_PORT'] + [
                'SHEEPDOG_EMULATOR_' + knob.upper()
                for knob in cluster.KNOBS]:
            self.useFixture(fixtures.EnvironmentVariable(name))

    def start(self, down=False):
        """A real and an emulated cluster answering on the same port.

        down: no sheep on that port and no emulated cluster there: both
        refuse connections.
        """
        if down:
            self.port = host.free_port()
            self.real_bin = os.path.join(sheepdog.prefix(), 'bin')
        else:
            real = self.useFixture(sheepdog.SheepdogCluster(nodes=1))
            self.port = real.port
            self.real_bin = os.path.dirname(real.dog_path)
        self.emu = self.useFixture(emulator_fixture.SheepdogEmulator(
            port=self.port))
        if down:
            self.emu.stop()
        self.emu_bin = os.path.dirname(self.emu.dog_path)

    def _run(self, bin_dir, program, args, stdin):
        path = os.path.join(bin_dir, program)
        proc = subprocess.Popen([path] + list(args), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, close_fds=True)
        out, err = proc.communicate(stdin)
        return proc.returncode, masked(out, path), masked(err, path)

    def assertConforms(self, script):
        """Run script's (args, stdin) on both; every difference fails.

        In args, PORT stands for the clusters' port; an args list that
        starts with 'collie' runs the collie name of each CLI.
        """
        mismatches = []
        for args, stdin in script:
            program = 'dog'
            if args and args[0] == 'collie':
                program, args = 'collie', args[1:]
            args = [str(self.port) if arg == 'PORT' else arg for arg in args]
            real = self._run(self.real_bin, program, args, stdin)
            emulated = self._run(self.emu_bin, program, args, stdin)
            if real != emulated:
                mismatches.append('%s %s%s\n  real:     %r\n  emulator: %r'
                                  % (program, ' '.join(args),
                                     ' (%d bytes in)' % len(stdin)
                                     if stdin else '',
                                     _short(real), _short(emulated)))
        if mismatches:
            self.fail('%d of %d invocations differ:\n%s'
                      % (len(mismatches), len(script),
                         '\n'.join(mismatches)))


def _short(result):
    code, out, err = result
    if len(out) > 300:
        out = out[:300] + b'... (%d bytes)' % len(out)
    return code, out, err


def call(*args, **kwargs):
    return list(args), kwargs.get('stdin', b'')


def driver(action, *args, **kwargs):
    """An invocation as glance_store_fastsheep's DogCommand builds it."""
    return call('vdi', action, '-a', ADDRESS, '-p', 'PORT', *args, **kwargs)


def pike(action, *args, **kwargs):
    """As Pike's in-tree driver (and the quilt patches) build it."""
    if action == 'list -r':
        return call('collie', 'vdi', 'list', '-r', '-a', ADDRESS, '-p',
                    'PORT', *args, **kwargs)
    return call('collie', 'vdi', action, '-a', ADDRESS, '-p', 'PORT',
                *args, **kwargs)


class TestDriverInvocations(ConformanceTestCase):

    def test_fastsheep_lifecycle(self):
        self.start()
        size = 2 * OBJ + 7
        self.assertConforms([
            driver('list', '-r'),
            driver('create', 'img', str(size)),
            driver('list', '-r', 'img'),
            driver('write', 'img', '0', str(OBJ), stdin=PATTERN[:OBJ]),
            driver('write', 'img', str(OBJ), str(OBJ + 7),
                   stdin=PATTERN[OBJ:size]),
            driver('list', '-r', 'img'),
            driver('list', '-r'),
            driver('read', 'img', '0', str(size)),
            driver('read', 'img', str(OBJ - 3), '10'),
            # unknown-size upload: grow, then write the tail
            driver('resize', 'img', str(size + MIB)),
            driver('write', 'img', str(size), str(MIB),
                   stdin=PATTERN[:MIB]),
            driver('read', 'img', str(size - 5), str(MIB + 5)),
            driver('list', '-r', 'img'),
            driver('delete', 'img'),
            driver('list', '-r', 'img'),
            driver('list', '-r'),
        ])

    def test_pike_and_patches_lifecycle(self):
        self.start()
        # Pike's bare `collie` check: test_usage_banner.
        self.assertConforms([
            pike('list -r', 'img'),
            pike('create', 'img', str(OBJ + 512)),
            pike('list -r', 'img'),
            pike('write', 'img', '0', str(OBJ), stdin=PATTERN[:OBJ]),
            pike('write', 'img', str(OBJ), '512', stdin=PATTERN[:512]),
            pike('read', 'img', '0', str(OBJ)),
            pike('read', 'img', str(OBJ), '512'),
            pike('resize', 'img', str(2 * OBJ)),
            pike('list -r', 'img'),
            pike('delete', 'img'),
            pike('list -r', 'img'),
        ])

    def test_error_cases(self):
        self.start()
        self.assertConforms([
            # missing VDI
            driver('read', 'nope', '0', '1'),
            driver('write', 'nope', '0', '1', stdin=b'x'),
            driver('resize', 'nope', '1G'),
            driver('delete', 'nope'),
            driver('list', '-r', 'nope'),
            pike('read', 'nope', '0', '1'),
            # existing name
            driver('create', 'img', '1M'),
            driver('create', 'img', '2M'),
            driver('list', '-r', 'img'),
            # read and write past the end, offset beyond the end
            driver('write', 'img', str(MIB - 4), '8', stdin=b'abcdefgh'),
            driver('read', 'img', str(MIB - 4), '100'),
            driver('read', 'img', str(MIB), '1'),
            driver('read', 'img', str(MIB + 1), '1'),
            driver('write', 'img', str(MIB + 1), '1', stdin=b'x'),
            # a short stdin zero-fills the object
            driver('write', 'img', '100', '5000', stdin=b'short'),
            driver('read', 'img', '96', '16'),
            # sizes, offsets and lengths that are not multiples of 512
            driver('create', 'odd', '1000'),
            driver('list', '-r', 'odd'),
            driver('write', 'odd', '7', '3', stdin=b'abc'),
            driver('read', 'odd', '0', '1000'),
            driver('read', 'odd', '998', '10'),
            driver('read', 'odd', '1001'),
            driver('read', 'odd', '1024'),
            driver('read', 'odd', '1025'),
            driver('resize', 'odd', '2000'),
            driver('list', '-r', 'odd'),
            # shrinking
            driver('resize', 'odd', '100'),
            # snapshots the emulator does not keep
            call('vdi', 'read', '-s', '1', '-p', 'PORT', 'odd', '0', '1'),
            call('vdi', 'delete', '-s', 'tag', '-p', 'PORT', 'odd'),
            call('vdi', 'read', '-s', '1', '-p', 'PORT', 'nope', '0', '1'),
        ])

    def test_cluster_down(self):
        self.start(down=True)
        self.assertConforms([
            driver('list', '-r', 'img'),
            driver('list', '-r'),
            call('vdi', 'list', '-p', 'PORT'),
            driver('create', 'img', '1M'),
            driver('read', 'img', '0', '1'),
            driver('write', 'img', '0', '1', stdin=b'x'),
            driver('resize', 'img', '1G'),
            driver('delete', 'img'),
            pike('read', 'img', '0', '1'),
            pike('list -r', 'img'),
        ])


class TestTestsInvocations(ConformanceTestCase):
    """The options and forms the emulator's unit tests rely on."""

    def test_options_and_syntax(self):
        self.start()
        name = 'n' * 300
        self.assertConforms([
            call('vdi', 'create', '-p', 'PORT', '-v', '-r', '-c', '1', '-z',
                 '23', 'opts', '8M'),
            call('vdi', 'list', '-r', '-p', 'PORT', 'opts'),
            call('vdi', 'create', '-p', 'PORT', '-c', '0', 'c0', '1M'),
            call('vdi', 'create', '-p', 'PORT', 'huge', '5T'),
            call('vdi', 'create', '-p', 'PORT', '-y', 'huge', '5T'),
            call('vdi', 'create', '-p', 'PORT', '-P', 'pre', '8M'),
            call('vdi', 'list', '-r', '-p', 'PORT', 'pre'),
            call('vdi', 'create', '-p', 'PORT', 'bad', '1X'),
            call('vdi', 'create', '-p', 'PORT', 'sfx', '1.5M'),
            call('vdi', 'create', '-p', 'PORT', 'k4', '4k'),
            call('vdi', 'create', '-p', 'PORT', 'b100', '100B'),
            call('vdi', 'list', '-p', 'PORT'),
            call('vdi', 'list', '--raw', '--address=%s' % ADDRESS, '--port',
                 'PORT', 'sfx'),
            call('vdi', 'list', 'sfx', '-r', '-a' + ADDRESS, '-pPORT'),
            call('vdi', 'read', '-p', 'PORT', 'sfx', '0', '1', '-T'),
            call('vdi', 'read', '-p', 'PORT', 'sfx', '1X'),
            call('vdi', 'create', '-p', 'PORT', name, '1M'),
            call('vdi', 'create', '-p', 'PORT', 'with space', '1M'),
            call('vdi', 'create', '-p', 'PORT', 'back\\slash', '1M'),
            call('vdi', 'create', '-p', 'PORT', '../../escape', '1M'),
            call('vdi', 'list', '-r', '-p', 'PORT'),
            call('vdi', 'list', '-r', '-p', 'PORT', 'n' * 255),
            call('vdi', 'read', '-h'),
            call('vdi', 'read'),
            call('vdi', 'read', '-x', 'img'),
            call('vdi', 'read', '-P', 'img'),
            call('vdi', 'create', '-p', 'PORT'),
            call('vdi', 'create', '-p', 'PORT', 'onlyname'),
            call('vdi', 'resize', '-p', 'PORT', 'sfx'),
            call('vdi', 'list', '-p', 'x'),
            call('vdi', 'list', '-p', '70000'),
            call('vdi', 'list', '-a', 'no.such.host'),
            call('frobnicate'),
            call('vdi', 'frobnicate'),
            call('vdi'),
            call('collie', 'frobnicate'),
        ])

    def test_usage_banner(self):
        # Pike's driver runs a bare collie and needs exit 0. The command
        # list differs (the emulator has only the vdi commands drivers
        # run), so only the banner and usage line are compared.
        self.start()
        for program in ('dog', 'collie'):
            real = self._run(self.real_bin, program, [], b'')
            emulated = self._run(self.emu_bin, program, [], b'')
            self.assertEqual(
                (real[0], real[1].split(b'\n')[:3], real[2]),
                (emulated[0], emulated[1].split(b'\n')[:3], emulated[2]))
