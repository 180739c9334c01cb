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
"""The process-wide budgets (budget.Budget: WRITERS, READ_MEMORY, READERS)."""

from oslotest import base

from glance_store_fastsheep import budget as budget_mod
from glance_store_fastsheep.tests.unit import base as unit_base


class BudgetTest(base.BaseTestCase):

    def test_takes_only_what_fits(self):
        budget = budget_mod.Budget()
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

    def test_takes_only_the_slots_that_fit(self):
        # As WRITERS is used: one slot at a time.
        budget = budget_mod.Budget()
        self.assertTrue(budget.take(1, 2))
        self.assertTrue(budget.take(1, 2))
        self.assertFalse(budget.take(1, 2))
        self.assertEqual(2, budget.held)
        # Each take is checked against the caller's own limit.
        self.assertTrue(budget.take(1, 3))
        self.assertFalse(budget.take(1, 1))
        for _slot in range(3):
            budget.give(1)
        self.assertEqual(0, budget.held)
        self.assertFalse(budget.take(1, 0))

    def test_counts_without_a_limit(self):
        # As READERS is used: the dog vdi read children running.
        budget = budget_mod.Budget()
        budget.take(1)
        budget.take(1)
        budget.give(1)
        self.assertEqual(1, budget.held)

    def test_threads_never_exceed_the_limit(self):
        budget = budget_mod.Budget()
        self.assertEqual([], unit_base.held_over_limit(
            budget, lambda: budget.take(2, 5), lambda: budget.give(2), 5))
        self.assertEqual(0, budget.held)

    def test_threads_never_exceed_the_slots(self):
        budget = budget_mod.Budget()
        self.assertEqual([], unit_base.held_over_limit(
            budget, lambda: budget.take(1, 3), lambda: budget.give(1), 3))
        self.assertEqual(0, budget.held)
