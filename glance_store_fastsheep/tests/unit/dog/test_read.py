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
"""The process-wide read-ahead budget (dog_read.ReadBudget)."""

from oslotest import base

from glance_store_fastsheep.dog import read as dog_read
from glance_store_fastsheep.tests.unit import base as unit_base


class ReadBudgetTest(base.BaseTestCase):

    def test_takes_only_what_fits(self):
        budget = dog_read.ReadBudget()
        self.assertTrue(budget.take(60, 100))
        self.assertTrue(budget.take(40, 100))
        self.assertFalse(budget.take(1, 100))
        self.assertEqual(100, budget.held)
        # Each take is checked against the caller's own limit.
        self.assertTrue(budget.take(50, 150))
        self.assertFalse(budget.take(1, 120))
        budget.give(150)
        self.assertEqual(0, budget.held)
        self.assertFalse(budget.take(1, 0))

    def test_counts_readers(self):
        budget = dog_read.ReadBudget()
        budget.reader_started()
        budget.reader_started()
        budget.reader_done()
        self.assertEqual(1, budget.readers)

    def test_threads_never_exceed_the_limit(self):
        budget = dog_read.ReadBudget()
        self.assertEqual([], unit_base.held_over_limit(
            budget, lambda: budget.take(2, 5), lambda: budget.give(2), 5))
        self.assertEqual(0, budget.held)
