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
"""image_data.Source: what glance hands an upload, as read-size pieces."""

import io
import os

from oslotest import base

from glance_store_fastsheep import image_data


class SourceTest(base.BaseTestCase):
    """image_data.Source: an iterator's items as pieces of at most size."""

    def _pieces(self, items, size):
        source = image_data.Source(iter(items))
        pieces = []
        for piece in iter(lambda: source.read(size), b''):
            pieces.append(piece)
        self.assertEqual(b'', source.read(size))
        return pieces

    def test_items_are_cut_in_order(self):
        data = os.urandom(10 * 1000 + 7)
        items = [data[:1], b'', data[1:9999], data[9999:]]
        pieces = self._pieces(items, 1000)
        self.assertEqual(data, b''.join(pieces))
        self.assertTrue(all(0 < len(piece) <= 1000 for piece in pieces))
        # Cut where an item ends, never joined across two items.
        self.assertEqual([1, 1000, 1000], [len(p) for p in pieces[:3]])

    def test_an_item_that_fits_is_passed_on_as_is(self):
        item = os.urandom(100)
        self.assertIs(item, self._pieces([item], 1000)[0])

    def test_a_file_is_read_as_it_answers(self):
        source = image_data.Source(io.BytesIO(b'abcdef'))
        self.assertEqual([b'abcd', b'ef', b''],
                         [source.read(4) for _ in range(3)])
