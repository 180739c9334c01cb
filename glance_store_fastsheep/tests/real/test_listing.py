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
"""The native client's VDI list against ``dog vdi list`` on a real sheep.

What the orphan audit (``fastsheep-orphans``) lists where no ``dog`` is
installed must be what ``dog`` shows: every current VDI and clone with
its size, no snapshot, no deleted VDI (whose id stays in use).
"""

from glance_store_fastsheep.dog import listing as dog_listing
from glance_store_fastsheep.tests.functional import base
from glance_store_fastsheep.tests.real import base as real_base

MIB = base.MIB


class ListingTest(real_base.RealCluster, base.FunctionalTestCase):

    CLIENT = 'native'

    def dog_list(self):
        infos = dog_listing.parse_list(self.sheep.check_dog(
            'vdi', 'list', '-r').decode('utf-8'))
        return sorted((info.name, info.size) for info in infos
                      if dog_listing.is_current(info))

    def test_agrees_with_dog(self):
        base.add(self.sd, 'uploaded', real_base.PatternFile(5 * MIB + 3),
                 5 * MIB + 3)
        self.sheep.check_dog('vdi', 'create', 'plain', '8M')
        self.sheep.check_dog('vdi', 'snapshot', '-s', 'snap', 'plain')
        self.sheep.check_dog('vdi', 'clone', '-s', 'snap', 'plain',
                             'clone')
        self.sheep.check_dog('vdi', 'create', 'gone', '4M')
        self.sheep.check_dog('vdi', 'delete', 'gone')
        expected = [('clone', 8 * MIB), ('plain', 8 * MIB),
                    ('uploaded', 5 * MIB + 3)]
        self.assertEqual(expected, self.dog_list())
        self.assertEqual(expected, sorted(self.sd.client.vdis()))

    def test_empty_cluster(self):
        self.assertEqual([], self.dog_list())
        self.assertEqual([], self.sd.client.vdis())
