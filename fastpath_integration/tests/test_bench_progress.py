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
"""The bench's progress lines: counts that add up, off a terminal."""

import io

import testtools

from fastpath_integration.bench import progress
from fastpath_integration.bench import runner


class ProgressTest(testtools.TestCase):

    def setUp(self):
        super(ProgressTest, self).setUp()
        self.out = io.StringIO()
        self.progress = progress.Progress(3, self.out, terminal=False)
        self.addCleanup(self.progress.close)

    def lines(self):
        return self.out.getvalue().splitlines()

    def test_interleaved_rounds_then_record(self):
        self.progress.start_section('real')
        self.progress.start_row('plugin_put', 1, 2)
        self.progress.round_done('plugin_put', 2)
        self.progress.start_row('plugin_put', 2, 2)
        self.progress.round_done('plugin_put', 2)
        self.progress.recorded('plugin_put')
        self.assertEqual([
            'bench: real: starting (rows 0 of 3, ? left)',
            'bench: real: plugin_put, round 1 of 2 (rows 0 of 3, ? left)'],
            self.lines()[:2])
        self.assertRegex(
            self.lines()[2], r'^bench: real: plugin_put, round 2 of 2 '
            r'\(rows 0.5 of 3, \d\d:\d\d left\)$')
        self.assertEqual(1, self.progress.bar.n)

    def test_a_row_recorded_twice_counts_once(self):
        self.progress.recorded('row')
        self.progress.recorded('row')
        self.progress.round_done('row', 4)
        self.assertEqual(1, self.progress.bar.n)

    def test_the_report_records_what_it_measures_and_fails(self):
        table = runner.Table('t', 'w', ['mb_s'])
        good, bad = table.row('good', 'Good'), table.row('bad', 'Bad')
        report = runner.Report()
        report.progress = self.progress
        report.add(good, mb_s=1.0)
        report.failed(bad, RuntimeError('worker died'))
        self.assertEqual(2, self.progress.bar.n)
