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
"""What the tests need that Python 2.7 (Pike's interpreter) spells apart.

The tests run on Pike's CPython 2.7 (``tox -e py27``) and on Python 3:
the few stdlib names that moved or appeared since 2.7 are taken from here,
never from the driver, which keeps its own code in the common subset.
"""

import threading

try:
    from unittest import mock
except ImportError:
    # Python 2.7 has no unittest.mock: the library (Pike pins 2.0.0).
    import mock  # noqa: H216


class TimedOut(Exception):
    """A child did not finish within its deadline and was killed."""


def communicate(proc, timeout, stdin_data=None):
    """``proc.communicate()`` with a deadline, on 2.7 as on 3.

    Python 2.7's ``communicate`` takes no timeout: a timer kills the child
    when the deadline passes, so a hung child never outlives the test, and
    ``TimedOut`` is raised with what it wrote to stderr.
    """
    fired = []

    def kill():
        fired.append(True)
        try:
            proc.kill()
        except OSError:  # it ended meanwhile
            pass

    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    timer.start()
    try:
        out, err = proc.communicate(stdin_data)
    finally:
        timer.cancel()
    if fired:
        raise TimedOut('killed after %ss; stderr:\n%s'
                       % (timeout, (err or b'')[-20000:].decode(
                           'utf-8', 'replace')))
    return out, err


__all__ = ['TimedOut', 'communicate', 'mock']
