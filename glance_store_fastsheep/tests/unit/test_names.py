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
import six

from glance_store_fastsheep import names


class NameTest(base.BaseTestCase):

    def test_uuid_passes(self):
        name = '8d1d8cb6-5b63-4b8f-9a5e-1f3c1ab0a3d2'
        self.assertEqual(name, names.validate_name(name))

    def test_bytes_become_text(self):
        self.assertEqual(u'img', names.validate_name(b'img'))

    def test_rejected(self):
        for bad in ('', '-rf', '--help', 'a b', 'a\nb', 'a\x00b', 'a:b',
                    'a\\b', 'x' * 256, 'tab\there'):
            self.assertRaises(ValueError, names.validate_name, bad)

    def test_longest_accepted(self):
        self.assertEqual('x' * 255, names.validate_name('x' * 255))

    def test_every_line_break_of_splitlines_rejected(self):
        # `vdi list` output is cut into lines by str.splitlines: a name
        # holding any character it splits on would read as two lines.
        breaks = [char for char in map(six.unichr, range(0x10000))
                  if len((u'a' + char + u'b').splitlines()) > 1]
        self.assertIn(u'\u2028', breaks)
        self.assertIn(u'\x85', breaks)
        for char in breaks:
            self.assertRaises(ValueError, names.validate_name,
                              u'img' + char + u'x')

    def test_other_characters_accepted(self):
        for name in (u'image-\u00e9', u'\u00a0nbsp', u'\u4e2d\u6587'):
            self.assertEqual(name, names.validate_name(name))


class AddressTest(base.BaseTestCase):

    def test_valid(self):
        self.assertEqual('10.0.0.1', names.validate_address('10.0.0.1'))
        self.assertEqual('::1', names.validate_address('::1'))
        self.assertEqual('fe80::1', names.validate_address('[fe80::1]'))
        self.assertEqual('sheep-1.example.org',
                         names.validate_address('sheep-1.example.org'))

    def test_invalid(self):
        for bad in ('', '-a', 'host name', 'a;b', '$(id)', 'host\n'):
            self.assertRaises(ValueError, names.validate_address, bad)

    def test_port(self):
        self.assertEqual(7000, names.validate_port('7000'))
        for bad in ('0', '65536', 'x', None):
            self.assertRaises(ValueError, names.validate_port, bad)
