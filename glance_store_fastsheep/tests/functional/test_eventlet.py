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
"""The functional suite again, under eventlet monkey-patching."""

import json
import subprocess
import sys

from oslotest import base

try:
    from glance_store._drivers import sheepdog  # noqa: F401
    PIKE_DRIVER = True
except ImportError:
    PIKE_DRIVER = False

from glance_store_fastsheep.tests import compat
from glance_store_fastsheep.tests.functional import green_runner


class EventletPass(object):
    """Run the tests of DIRECTORY in children patched by eventlet.

    One test per module of DIRECTORY (see ``per_module``), each starting
    a child that runs that module: stestr's workers then share the pass
    instead of one worker running all of it.
    """

    DIRECTORY = green_runner.HERE

    def allowed_skip(self, test_id):
        """Whether test_id may skip in the child (and did in this env)."""
        # The Pike interop tests, and only where the in-tree Pike driver
        # is not installed.
        return not PIKE_DRIVER and 'test_pike_interop' in test_id

    def run_under_eventlet(self, module):
        expected = green_runner.load(self.DIRECTORY, module)
        proc = subprocess.Popen(
            [sys.executable, '-c', green_runner.CHILD_CODE, self.DIRECTORY,
             module],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = compat.communicate(proc, 1800)
        report = err.decode('utf-8', 'replace')
        self.assertEqual(0, proc.returncode,
                         'eventlet pass of %s failed:\n%s'
                         % (module, report[-20000:]))
        summary = json.loads(out.decode().strip().splitlines()[-1])
        self.assertTrue(summary['green'])
        self.assertEqual(expected.countTestCases(), summary['ran'], report)
        self.assertEqual(0, summary['failures'] + summary['errors'])
        self.assertEqual([], [test_id for test_id in summary['skipped']
                              if not self.allowed_skip(test_id)], report)


def per_module(cls):
    """Give cls a test_MODULE_under_eventlet per test module of DIRECTORY."""
    modules = green_runner.modules(cls.DIRECTORY)
    assert modules, 'no test module in %s' % cls.DIRECTORY
    for module in modules:
        def test(self, module=module):
            self.run_under_eventlet(module)
        test.__name__ = 'test_%s_under_eventlet' % module[len('test_'):]
        setattr(cls, test.__name__, test)
    return cls


@per_module
class EventletPassTest(EventletPass, base.BaseTestCase):
    pass
