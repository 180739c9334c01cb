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
"""A tiny fake ``dog`` for unit tests: the subprocess boundary, no more.

One file per VDI in $FAKE_DOG_DIR. Faults come from the environment:
FAKE_DOG_DOWN (every call fails to connect), FAKE_DOG_FAIL_WRITE (write
reads its input then fails), FAKE_DOG_SHORT=N (read sends N bytes fewer
and exits 0), FAKE_DOG_HANG=N (read sends N bytes then sleeps),
FAKE_DOG_WRITE_DELAY=S (write sleeps S seconds after its input, as a
commit takes time), and FAKE_DOG_LOG (append each call's pid and
argv). The functional tests use the real emulator
(sheepdog_emulator/emulator.py) instead.
"""

import os
import sys
import time


def main(argv):
    env = os.environ
    if env.get('FAKE_DOG_LOG'):
        with open(env['FAKE_DOG_LOG'], 'a') as log:
            log.write('%d %s\n' % (os.getpid(), ' '.join(argv[1:])))
    args = argv[1:]
    if args[:1] != ['vdi']:
        return 64
    action = args[1]
    rest = args[2:]
    positional = []
    where = {'-a': '127.0.0.1', '-p': '7000'}
    while rest:
        item = rest.pop(0)
        if item in ('-a', '-p'):
            where[item] = rest.pop(0)
        elif item != '-r':
            positional.append(item)
    if env.get('FAKE_DOG_DOWN'):
        sys.stderr.write('failed to connect to %s:%s: Connection refused\n'
                         % (where['-a'], where['-p']))
        return 2
    root = env['FAKE_DOG_DIR']
    if action == 'list':
        names = positional[:1] or sorted(os.listdir(root))
        for name in names:
            path = os.path.join(root, name)
            if os.path.exists(path):
                sys.stdout.write('= %s 0 %d 0 0 1700000000 7c2b25 1  22\n'
                                 % (name, os.path.getsize(path)))
        return 0
    name = positional[0]
    path = os.path.join(root, name)
    if action == 'create':
        if os.path.exists(path):
            sys.stderr.write('Failed to create VDI %s: VDI exists '
                             'already\n' % name)
            return 1
        with open(path, 'wb') as data:
            data.truncate(int(positional[1]))
        return 0
    if action == 'delete':
        if os.path.exists(path):
            os.unlink(path)
        return 0
    if not os.path.exists(path):
        sys.stderr.write('Failed to open VDI %s (snapshot id: 0 snapshot '
                         'tag: ): No VDI found\n' % name)
        return 1
    if action == 'resize':
        with open(path, 'r+b') as data:
            data.truncate(int(positional[1]))
        return 0
    offset, length = int(positional[1]), int(positional[2])
    if action == 'read':
        with open(path, 'rb') as data:
            data.seek(offset)
            payload = data.read(length)
        if env.get('FAKE_DOG_HANG'):
            hang_at = int(env['FAKE_DOG_HANG'])
            out = os.fdopen(1, 'wb')
            out.write(payload[:hang_at])
            out.flush()
            time.sleep(3600)
        payload = payload[:len(payload) - int(env.get('FAKE_DOG_SHORT', 0))]
        out = os.fdopen(1, 'wb')
        out.write(payload)
        out.flush()
        return 0
    if action == 'write':
        payload = os.fdopen(0, 'rb').read(length)
        time.sleep(float(env.get('FAKE_DOG_WRITE_DELAY', 0)))
        if env.get('FAKE_DOG_FAIL_WRITE'):
            sys.stderr.write('failed to write object 7c2b2500000000: '
                             'I/O error\n')
            return 1
        with open(path, 'r+b') as data:
            data.seek(offset)
            data.write(payload)
        return 0
    return 64


if __name__ == '__main__':
    sys.exit(main(sys.argv))
