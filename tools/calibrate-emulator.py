#!/usr/bin/env python3
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
"""Calibrate the sheepdog emulator's per-invocation costs on a real cluster.

Starts a one-node sheepdog cluster (fastpath_integration.harness.sheepdog,
built by tools/build-sheepdog.sh) and an emulated cluster, and times the
same calls on both in alternating rounds, in one run:

* ``vdi read NAME 0 512`` and ``vdi write``: what one invocation costs
  before its data (start-up, lookup, inode read);
* ``vdi read NAME 0 64M``: the per-MiB cost on top;
* ``vdi list -r NAME``.

The emulator is timed with its latency knobs at zero and its inode read
on, so the difference is what the knobs must add: ``lookup_ms`` (every
read and write), ``object_service_ms`` (per 4 MiB object read),
``list_latency_ms`` and ``write_latency_ms``. A real cost below the
emulator's own gives 0: the emulator cannot be made cheaper than its
interpreter's start-up. Prints the figures and the knobs as JSON; with
--apply ROOT it writes them to the emulated cluster at --port under ROOT
(as ``sheepdog-emulator knobs`` does).

Usage: python tools/calibrate-emulator.py [--rounds N] [--apply ROOT]
(an interpreter with fixtures and oslo.utils, e.g. .tox/py3/bin/python).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from fastpath_integration.harness import sheepdog  # noqa: E402
from sheepdog_emulator import emulator  # noqa: E402

MIB = 1 << 20
BIG = 64 * MIB
OBJ = 4 * MIB
SECTOR = 512


def timed(argv, stdin=None):
    """Seconds one call of argv took; its exit status must be 0."""
    started = time.monotonic()
    proc = subprocess.run(argv, stdin=stdin, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    took = time.monotonic() - started
    if proc.returncode:
        raise RuntimeError('%s exited %d: %s' % (
            ' '.join(argv), proc.returncode, proc.stderr.decode()))
    return took


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def measure(dog, port, name, rounds_out, sector_file):
    base = [dog, 'vdi']
    where = ['-a', '127.0.0.1', '-p', str(port)]
    calls = {
        'read_small': base + ['read'] + where + [name, '0', str(SECTOR)],
        'read_big': base + ['read'] + where + [name, '0', str(BIG)],
        'list': base + ['list', '-r'] + where + [name],
    }
    for key, argv in calls.items():
        rounds_out.setdefault(key, []).append(timed(argv))
    with open(sector_file, 'rb') as src:
        rounds_out.setdefault('write_small', []).append(timed(
            base + ['write'] + where + [name, '0', str(SECTOR)], stdin=src))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=9,
                        help='alternating rounds (medians are reported)')
    parser.add_argument('--apply', metavar='ROOT',
                        help='write the knobs to the emulated cluster at '
                             '--port under this emulator root')
    parser.add_argument('--port', type=int, default=emulator.DEFAULT_PORT)
    args = parser.parse_args(argv)

    work = tempfile.mkdtemp(prefix='calibrate-emulator-')
    try:
        sector = os.path.join(work, 'sector')
        with open(sector, 'wb') as dst:
            dst.write(b'\xa5' * SECTOR)
        data = os.path.join(work, 'data')
        with open(data, 'wb') as dst:
            dst.write(os.urandom(MIB) * (BIG // MIB))

        root = os.path.join(work, 'emulator')
        with sheepdog.SheepdogCluster(nodes=1) as real:
            port = real.port
            emulator.init_cluster(root, port=port)
            emu_dog = emulator.install_wrappers(
                os.path.join(work, 'bin'), root, names=('dog',))[0]
            # Only the modelled work (the inode read) stays on.
            emulator.write_knobs(root, '127.0.0.1', port, {'lookup_ms': 0})
            for dog in (real.dog_path, emu_dog):
                subprocess.check_call([dog, 'vdi', 'create', '-p', str(port),
                                       'calib', str(BIG)])
                with open(data, 'rb') as src:
                    timed([dog, 'vdi', 'write', '-p', str(port), 'calib',
                           '0', str(BIG)], stdin=src)
            rounds = {'real': {}, 'emulator': {}}
            for _round in range(args.rounds):
                measure(real.dog_path, port, 'calib', rounds['real'], sector)
                measure(emu_dog, port, 'calib', rounds['emulator'], sector)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ms = dict((side, dict((key, median(values) * 1000.0)
                          for key, values in found.items()))
              for side, found in rounds.items())
    per_obj = {}
    for side in ms:
        per_obj[side] = ((ms[side]['read_big'] - ms[side]['read_small']) *
                         OBJ / BIG)
    lookup = max(0.0, ms['real']['read_small'] - ms['emulator']['read_small'])
    knobs = {
        'lookup_ms': round(lookup, 2),
        'object_service_ms': round(max(
            0.0, per_obj['real'] - per_obj['emulator']), 2),
        'list_latency_ms': round(max(
            0.0, ms['real']['list'] - ms['emulator']['list']), 2),
        'write_latency_ms': round(max(
            0.0, ms['real']['write_small'] - ms['emulator']['write_small'] -
            lookup), 2),
    }
    report = {
        'date': time.strftime('%Y-%m-%d'),
        'rounds': args.rounds,
        'medians_ms': ms,
        'per_4mib_object_read_ms': per_obj,
        'knobs': knobs,
    }
    json.dump(report, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write('\n')
    if args.apply:
        emulator.write_knobs(args.apply, '127.0.0.1', args.port, knobs)
    return 0


if __name__ == '__main__':
    sys.exit(main())
