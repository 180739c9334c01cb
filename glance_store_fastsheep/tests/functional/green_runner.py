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
"""Run the functional tests in an interpreter patched by eventlet.

``eventlet.monkey_patch()`` must come before anything imports threading or
subprocess, and cannot be undone, so the eventlet pass of the functional
tests needs an interpreter of its own: ``test_eventlet`` starts one that
patches first and then calls ``main()`` here, and checks what it reports
(the last stdout line, JSON). Importing this module patches nothing.
"""

import json
import os
import sys
import unittest

import eventlet

# What test_eventlet runs in the child interpreter.
CHILD_CODE = ('import eventlet; eventlet.monkey_patch(); import sys; '
              'from glance_store_fastsheep.tests.functional import '
              'green_runner; sys.exit(green_runner.main())')

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SELF_TEST = 'test_eventlet'


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            for test in _flatten(item):
                yield test
        else:
            yield item


def modules(directory=HERE):
    """The test modules of directory, except the one that starts this runner.

    The eventlet pass runs each in a child of its own, so that stestr's
    workers share the pass as they share the plain one.
    """
    return sorted(name[:-len('.py')] for name in os.listdir(directory)
                  if name.startswith('test_') and name.endswith('.py') and
                  name[:-len('.py')] != SELF_TEST)


def load(directory=HERE, module=None):
    """The tests of module (every module when None) in directory."""
    pattern = 'test_*.py' if module is None else module + '.py'
    found = unittest.TestLoader().discover(directory, pattern=pattern,
                                           top_level_dir=TOP)
    return unittest.TestSuite(t for t in _flatten(found)
                              if SELF_TEST not in t.id())


def main():
    if not eventlet.patcher.is_monkey_patched('thread'):
        sys.stderr.write('green_runner: eventlet.monkey_patch() first\n')
        return 2
    os.environ['FASTSHEEP_FUNCTIONAL_MODE'] = 'eventlet'
    # The child is started as `python -c CHILD_CODE [DIRECTORY [MODULE]]`.
    suite = load(*sys.argv[1:3])
    result = unittest.TextTestRunner(stream=sys.stderr,
                                     verbosity=2).run(suite)
    summary = {'ran': result.testsRun, 'failures': len(result.failures),
               'errors': len(result.errors),
               'skipped': [t.id() for t, _why in result.skipped],
               'green': eventlet.patcher.is_monkey_patched('subprocess')}
    sys.stdout.write(json.dumps(summary) + '\n')
    return 0 if result.wasSuccessful() and result.testsRun else 1
