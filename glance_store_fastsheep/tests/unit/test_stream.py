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

import fixtures
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


def _moving(count, transfer=None):
    """count pieces of 4 bytes; the transfer learns of 2 failovers."""
    try:
        for index in range(count):
            if index == 2:
                raise IOError('sheep gone')
            yield b'%04d' % index
    finally:
        transfer.failovers = 2


class TransferLineTest(base.BaseTestCase):
    """One INFO line per download, however it ends."""

    def setUp(self):
        super(TransferLineTest, self).setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='glance_store_fastsheep.stream'))

    def stream(self, count):
        return stream.Stream(_moving, count, transfer=stream.Transfer(
            'native', '10.0.0.11', 7000, 'img.0123456789abcdef', 100))

    def lines(self):
        return [line for line in self.log.output.splitlines() if line]

    def test_sent(self):
        self.assertEqual(b'00000001', b''.join(self.stream(2)))
        self.assertEqual(1, len(self.lines()))
        self.assertRegex(self.lines()[0], (
            r'^Sent sheepdog image img.0123456789abcdef from '
            r'10.0.0.11:7000 \(native client\): 8 of 100 bytes in '
            r'[0-9.]+s \([0-9.]+ MB/s\), 2 failover\(s\)$'))

    def test_stopped_by_the_consumer(self):
        lazy = self.stream(2)
        self.assertEqual(b'0000', next(iter(lazy)))
        lazy.close()
        self.assertEqual(1, len(self.lines()))
        self.assertIn('Stopped sending sheepdog image img.0123456789abcdef',
                      self.lines()[0])
        self.assertIn(': 4 of 100 bytes', self.lines()[0])

    def test_failed(self):
        self.assertRaises(IOError, list, self.stream(5))
        self.assertEqual(1, len(self.lines()))
        self.assertIn('Failed sending sheepdog image img.0123456789abcdef',
                      self.lines()[0])
        self.assertIn(': 8 of 100 bytes', self.lines()[0])

    def test_no_transfer_no_line(self):
        events = []
        self.assertEqual([b'0'], list(stream.Stream(_pieces, events, 1)))
        self.assertEqual([], self.lines())

    def test_unknown_keyword(self):
        self.assertRaises(TypeError, stream.Stream, _pieces, [], 1,
                          size=3)
