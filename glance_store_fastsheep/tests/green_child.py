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
"""Run a test's function in a child interpreter patched by eventlet.

``eventlet.monkey_patch()`` must come before anything imports threading
or socket, and cannot be undone, so a test of how the driver shares
glance-api's hub needs an interpreter of its own. ``run()`` starts one
that patches first, then imports the test's module and calls one of its
top-level functions; what that returns (JSON) comes back to the test.
The functions count the hub's turns with a ``Ticker``: a driver that
blocked the OS thread would leave it at zero.

Importing this module patches nothing and does not import eventlet: the
driver's hub_safe looks at whether eventlet is loaded, and the parent
test must look like a process without it.
"""

import json
import subprocess
import sys

from glance_store_fastsheep.tests import compat

# python -c SCRIPT MODULE FUNCTION JSON_ARGS: the result is the last line.
SCRIPT = ('import eventlet; eventlet.monkey_patch(); '
          'import importlib, json, sys; '
          'function = getattr(importlib.import_module(sys.argv[1]), '
          'sys.argv[2]); '
          'print(json.dumps(function(*json.loads(sys.argv[3]))))')


def run(test, module, function, args=(), timeout=120):
    """module.function(*args) in a monkey-patched child: its result.

    The child inherits the environment (a fake dog's directory, say).
    Fails test with the child's stderr if it does not exit 0.
    """
    proc = subprocess.Popen([sys.executable, '-c', SCRIPT, module,
                             function, json.dumps(list(args))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = compat.communicate(proc, timeout)
    test.assertEqual(0, proc.returncode, err.decode('utf-8', 'replace'))
    return json.loads(out.decode().strip().splitlines()[-1])


class Ticker(object):
    """A greenthread that counts its turns until ``stop()``."""

    def __init__(self):
        import eventlet
        self.ticks = 0
        self.thread = eventlet.spawn(self.tick)

    def tick(self):
        import eventlet
        while True:
            self.ticks += 1
            eventlet.sleep(0)

    def stop(self):
        """Kill it; the number of turns the hub gave it."""
        self.thread.kill()
        return self.ticks
