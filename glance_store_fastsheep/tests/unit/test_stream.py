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
"""The one lazy stream every download returns (stream.Stream)."""

from oslotest import base

from glance_store_fastsheep import stream


def _pieces(events, count):
    events.append('started')
    try:
        for index in range(count):
            yield b'%d' % index
    finally:
        events.append('closed')


class StreamTest(base.BaseTestCase):

    def test_nothing_runs_before_the_first_piece(self):
        events = []
        lazy = stream.Stream(_pieces, events, 3)
        self.assertEqual([], events)
        lazy.close()
        self.assertEqual([], events)
        self.assertEqual([b'0', b'1', b'2'], list(lazy))
        self.assertEqual(['started', 'closed'], events)

    def test_close_releases_a_half_read_stream(self):
        events = []
        lazy = stream.Stream(_pieces, events, 3)
        iterator = iter(lazy)
        self.assertEqual(b'0', next(iterator))
        # The same generator, however often iterated.
        self.assertIs(iterator, iter(lazy))
        lazy.close()
        self.assertEqual(['started', 'closed'], events)
        self.assertEqual([], list(lazy))
