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

from glance_store import exceptions

from glance_store_fastsheep.tests.unit import base


class LocationTest(base.StoreTestCase):

    def test_pike_form_round_trips(self):
        uri = 'sheepdog://10.1.2.3:7001:8d1d8cb6-5b63-4b8f-9a5e-1f3c1ab0a3d2'
        loc = self.location(uri).store_location
        self.assertEqual(('10.1.2.3', 7001,
                          '8d1d8cb6-5b63-4b8f-9a5e-1f3c1ab0a3d2'),
                         (loc.addr, loc.port, loc.image))
        self.assertEqual(uri, loc.get_uri())

    def test_ipv6_address(self):
        loc = self.location('sheepdog://fd00::5:7000:img').store_location
        self.assertEqual(('fd00::5', 7000, 'img'),
                         (loc.addr, loc.port, loc.image))
        self.assertEqual('sheepdog://fd00::5:7000:img', loc.get_uri())

    def test_legacy_form_uses_configured_cluster(self):
        conf = self.make_conf(sheepdog_store_address='10.9.9.9',
                              sheepdog_store_port=7777)
        loc = self.location('sheepdog://img', conf).store_location
        self.assertEqual(('10.9.9.9', 7777, 'img'),
                         (loc.addr, loc.port, loc.image))
        self.assertEqual('sheepdog://10.9.9.9:7777:img', loc.get_uri())

    def test_fastsheep_scheme_reads_and_writes_sheepdog(self):
        loc = self.location('fastsheep://127.0.0.1:7000:img').store_location
        self.assertEqual('sheepdog://127.0.0.1:7000:img', loc.get_uri())

    def test_bad_uris(self):
        for uri in ('rbd://a/b/c/d', 'sheepdog://a:img',
                    'sheepdog://127.0.0.1:7000:-rf',
                    'sheepdog://127.0.0.1:port:img',
                    'sheepdog://127.0.0.1:70000:img',
                    'sheepdog://;id:7000:img', 'sheepdog://'):
            self.assertRaises(exceptions.BadStoreUri, self.location, uri)
