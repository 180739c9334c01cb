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
"""Pike's in-tree driver and fastsheep on the same real cluster.

The in-tree driver exists only with glance_store 0.22.0: ``tox -e
py27`` (Pike's interpreter and pins) runs these; elsewhere they skip and
say so.
"""

from glance_store_fastsheep.tests.functional import test_pike_interop
from glance_store_fastsheep.tests.real import base as real_base


class PikeInteropTest(real_base.RealCluster,
                      test_pike_interop.PikeInteropTest):
    """Images written by either driver read back through the other."""
