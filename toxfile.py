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
"""tox's plugin for this project: say which real-cluster suites skipped.

Where no real sheepdog can be built (the archives are not beside the
clone, or the build dependencies are missing), the real-cluster suites
skip and ``tox`` still passes, on the fake dog and the emulator alone.
A skip line among thousands of test lines is easy to miss, so the
suites note each skip in ``FASTPATH_SKIP_LOG`` (``fastpath_integration.
harness.sheepdog.record_skip``), and at the very end of the run, after
tox's own summary, this prints them in a box. In CI
(``FASTPATH_REQUIRE_REAL_SHEEPDOG``) those suites fail instead, and
there is nothing to print.

tox 4 loads a ``toxfile.py`` beside ``tox.ini`` as a plugin.
"""

import atexit
import collections
import os
import sys

from tox.plugin import impl

LOG_NAME = 'real-sheepdog-skips.log'
_started = []


@impl
def tox_before_run_commands(tox_env):
    """At the first env this process runs: a new log, a report at exit.

    The tox that only provisions another one (``requires``) runs no env
    and reports nothing; the one it provisions does both.
    """
    if _started:
        return
    path = os.path.join(str(tox_env.core['work_dir']), LOG_NAME)
    _started.append(path)
    try:
        os.remove(path)
    except OSError:
        pass
    atexit.register(report, path)


def report(path, out=None):
    """Print the skips path holds, if any, in a box."""
    out = out or sys.stderr
    try:
        with open(path) as log:
            lines = [line.rstrip('\n').split('\t') for line in log]
    except (IOError, OSError):
        return
    counts = collections.OrderedDict()
    for fields in lines:
        if len(fields) == 3:
            key = tuple(fields)
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return
    rule = '!' * 78
    out.write('\n%s\n!! NOT TESTED: no real sheepdog, so these suites '
              'skipped:\n' % rule)
    for (env, suite, reason), count in counts.items():
        out.write('!!   %s: %s (%d skip%s)\n' % (
            env, suite, count, '' if count == 1 else 's'))
    reasons = sorted(set(reason for _env, _suite, reason in counts))
    for reason in reasons:
        out.write('!! %s\n' % reason)
    out.write('!! README.rst, "Prerequisites", says what they need.\n%s\n'
              % rule)
    out.flush()
