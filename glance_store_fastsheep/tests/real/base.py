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
"""The functional tests' store, pointed at a real sheepdog cluster.

``RealCluster`` is mixed into functional test classes in place of the
emulator: every assertion they make about bytes, children and fds then
holds against sheepdog 1.0's own ``sheep`` and ``dog``
(``fastpath_integration.harness.sheepdog``). Where no real sheepdog can
be found or built the tests skip and say which variable to set, except
where ``FASTPATH_REQUIRE_REAL_SHEEPDOG`` is set (``.ci/run`` sets it when
the source archive is there): then a missing sheepdog is an error, so
CI can never pass by skipping them.
"""

import hashlib
import os

import fixtures

from fastpath_integration.harness import sheepdog

MIB = 1024 * 1024
REQUIRE_VARIABLE = 'FASTPATH_REQUIRE_REAL_SHEEPDOG'


class RealCluster(object):
    """Mixin: a real cluster of NODES sheep keeping COPIES copies."""

    NODES = 1
    COPIES = 1

    def make_cluster(self):
        if not sheepdog.available():
            if os.environ.get(REQUIRE_VARIABLE):
                self.fail('%s is set but %s' % (REQUIRE_VARIABLE,
                                                sheepdog.SKIP_REASON))
            sheepdog.record_skip('glance_store_fastsheep real-cluster tests')
            self.skipTest(sheepdog.SKIP_REASON)
        return self.useFixture(sheepdog.SheepdogCluster(
            self.NODES, self.COPIES, put_on_path=True))

    def cluster_pids(self):
        return self.sheep.processes()


class NativeThreeNodes(RealCluster):
    """Mixin: the native client's store on 3 nodes keeping 2 copies.

    setUp makes self.conf (the store's options and STORE_OPTIONS) and
    self.sd, and captures the driver's log in self.log: the failover
    and partial-upload tests assert what it says.
    """

    NODES = 3
    COPIES = 2
    READ_SIZE = MIB
    CLIENT = 'native'
    STORE_OPTIONS = {}

    def setUp(self):
        super(NativeThreeNodes, self).setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep'))
        self.conf = self.make_conf(**self.STORE_OPTIONS)
        self.sd = self.make_store(self.conf)


class PatternFile(object):
    """size bytes of a 1 MiB random block, rotated differently per MiB.

    A file-like upload source for images larger than a test should hold
    in memory; no two MiB of a 1 GiB image are alike, so data at a wrong
    offset changes the digest. ``md5`` is the digest of what was read.
    """

    def __init__(self, size):
        self.size = size
        self.position = 0
        self.block = os.urandom(MIB)
        self.md5 = hashlib.md5()

    def read(self, length=-1):
        if length is None or length < 0:
            length = self.size - self.position
        length = min(length, self.size - self.position)
        pieces = []
        while length > 0:
            index, within = divmod(self.position, MIB)
            turn = (index * 4099) % MIB
            rotated = self.block[turn:] + self.block[:turn]
            piece = rotated[within:within + length]
            pieces.append(piece)
            self.position += len(piece)
            length -= len(piece)
        data = b''.join(pieces)
        self.md5.update(data)
        return data
