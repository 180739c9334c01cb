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

from oslotest import base

from glance_store_fastsheep.dog import listing


class ListParseTest(base.BaseTestCase):

    def test_real_line(self):
        infos = listing.parse_list(
            '= img1 0 1073741824 12582912 0 1795305027 '
            '9e028f 1  22\n')
        self.assertEqual(1, len(infos))
        self.assertEqual('img1', infos[0].name)
        self.assertEqual(1073741824, infos[0].size)
        self.assertEqual('=', infos[0].state)
        # The empty tag is kept as a field of its own.
        self.assertEqual('', infos[0].fields[9])
        self.assertEqual('22', infos[0].fields[10])

    def test_escaped_space_in_name(self):
        infos = listing.parse_list('= my\\ disk 0 4096 0 0 1 a 1  22')
        self.assertEqual('my disk', infos[0].name)
        self.assertEqual(4096, infos[0].size)

    def test_snapshot_is_not_current(self):
        infos = listing.parse_list(
            's img 1 4096 0 0 1 a 1 tag 22\n'
            '= img 0 8192 0 0 1 b 1  22\n')
        self.assertEqual(8192, listing.find_current(infos, 'img').size)
        self.assertIsNone(listing.find_current(infos[:1], 'img'))

    def test_empty_output(self):
        self.assertEqual([], listing.parse_list(''))

    def test_garbage(self):
        self.assertRaises(ValueError, listing.parse_list, 'error: oops')
        self.assertRaises(ValueError, listing.parse_list, '= img x 4096 0')
