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
"""The real-cluster suite again, under eventlet monkey-patching."""

import os

from oslotest import base

from fastpath_integration.harness import sheepdog
from glance_store_fastsheep.tests.functional import test_eventlet


@test_eventlet.per_module
class EventletPassTest(test_eventlet.EventletPass, base.BaseTestCase):

    DIRECTORY = os.path.dirname(os.path.abspath(__file__))

    def setUp(self):
        super(EventletPassTest, self).setUp()
        if not sheepdog.available() and not os.environ.get(
                'FASTPATH_REQUIRE_REAL_SHEEPDOG'):
            sheepdog.record_skip('real-cluster tests under eventlet')
            self.skipTest(sheepdog.SKIP_REASON)
