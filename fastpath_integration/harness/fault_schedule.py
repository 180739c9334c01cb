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
"""What a fault campaign run does, drawn from its seed alone.

A run's ``Schedule`` (its store's write concurrency, its uploads,
downloads and deletes, the proxy faults and the sheep fault) comes from
``random.Random(seed)`` and nothing else, and the runs' seeds from the
campaign seed the same way (``seeds_of``): a failing run is reproduced
by its seed alone, and only as long as every draw stays here, in this
order. What executes a schedule, or checks it, draws nothing.
"""

import hashlib
import random
import uuid

from fastpath_integration.harness import proxy_wire

# 1 MiB objects, the smallest sheep allows (dog cluster format -z 20):
# an image of a few objects is a few MiB.
BLOCK_SIZE_SHIFT = 20
OBJECT_SIZE = 1 << BLOCK_SIZE_SHIFT
# What a proxy fault may pick: every request the client sends for a
# transfer, the most frequent ones (object writes, inode updates, reads,
# attributes) more often.
OPCODES = ((proxy_wire.CREATE_AND_WRITE_OBJ,) * 3 +
           (proxy_wire.WRITE_OBJ,) * 3 + (proxy_wire.READ_OBJ,) * 2 +
           (proxy_wire.GET_VDI_ATTR,) * 2 +
           (proxy_wire.REMOVE_OBJ, proxy_wire.NEW_VDI,
            proxy_wire.GET_VDI_INFO, proxy_wire.DEL_VDI,
            proxy_wire.GET_NODE_LIST))
# Forged results: final errors and results sheep asks to retry. A forged
# success would be a lying sheep, which no client can see through.
FORGED = (0x03, 0x05, 0x06, 0x19, 0x82, 0x86, 0x8f)


class Image(object):
    """An upload the campaign asked for, and what became of it."""

    def __init__(self, name, data, known):
        self.name = name
        self.data = data
        self.known = known
        self.md5 = hashlib.md5(data).hexdigest()
        self.uri = None
        self.result = None
        self.deleted = False
        self.delete_failed = False


class Schedule(object):
    """One run's schedule, drawn from its seed alone."""

    def __init__(self, seed):
        self.seed = seed
        rng = random.Random(seed)
        self.write_concurrency = rng.choice((1, 2, 4, 8))
        self.images = []
        self.ops = []
        for number in range(rng.randint(1, 3)):
            objects = rng.randint(0, 5)
            tail = rng.choice((0, 0, 1, 4095, OBJECT_SIZE // 2))
            pieces = []
            for _index in range(objects):
                if rng.random() < 0.3:
                    pieces.append(b'\0' * OBJECT_SIZE)
                else:
                    pieces.append(_random_bytes(rng, OBJECT_SIZE))
            pieces.append(_random_bytes(rng, tail))
            data = b''.join(pieces)
            if not data:
                data = b'x'
            image = Image(str(uuid.UUID(int=rng.getrandbits(128),
                                        version=4)),
                          data, rng.random() < 0.5)
            self.images.append(image)
            self.ops.append(('upload', image))
            for _extra in range(rng.randint(0, 2)):
                self.ops.append((rng.choice(('download', 'download',
                                             'delete')),
                                 rng.choice(self.images)))
        self.faults = [self._draw_fault(rng)
                       for _fault in range(rng.randint(1, 3))]
        if rng.random() < 0.3:
            self.faults.append(self._draw_sheep_fault(rng))

    @staticmethod
    def _draw_sheep_fault(rng):
        # The moment: just before the nth request of an opcode reaches
        # the proxy's sheep (node 0, or another that the client does not
        # reach through the proxy).
        return {'kind': rng.choice(('kill', 'stop')),
                'node': rng.randint(0, 2), 'opcode': rng.choice(OPCODES),
                'nth': rng.randint(1, 4),
                'seconds': round(rng.uniform(0.5, 3.0), 2)}

    @staticmethod
    def _draw_fault(rng):
        kind = rng.choice(('hold', 'hold', 'delay', 'reset', 'reset',
                           'forge'))
        fault = {'kind': kind, 'opcode': rng.choice(OPCODES),
                 'nth': rng.randint(1, 4)}
        if kind == 'hold':
            fault['seconds'] = round(rng.uniform(0.2, 3.0), 2)
        elif kind == 'delay':
            fault['seconds'] = round(rng.uniform(0.2, 2.0), 2)
        elif kind == 'reset':
            fault['forward'] = rng.random() < 0.5
        else:
            fault['result'] = rng.choice(FORGED)
        return fault

    def describe(self):
        ops = ', '.join('%s %s (%d bytes%s)' % (
            op, image.name[:8], len(image.data),
            '' if op != 'upload' else
            ', known size' if image.known else ', unknown size')
            for op, image in self.ops)
        return 'write_concurrency %d; %s; faults: %s' % (
            self.write_concurrency, ops, '; '.join(
                _describe(fault) for fault in self.faults))


def _describe(fault):
    fault = dict(fault)
    if 'opcode' in fault:
        fault['opcode'] = proxy_wire.OPCODES[fault['opcode']]
    if 'result' in fault:
        fault['result'] = '0x%02x' % fault['result']
    return ' '.join('%s=%s' % item for item in sorted(fault.items()))


def _random_bytes(rng, size):
    if not size:
        return b''
    return rng.getrandbits(size * 8).to_bytes(size, 'little')


def seeds_of(campaign_seed, runs):
    """The seeds of a campaign's runs, drawn from its own seed."""
    rng = random.Random(campaign_seed)
    return [rng.randrange(1 << 32) for _run in range(runs)]
