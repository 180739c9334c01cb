"""Shared plumbing: where the harness put the services."""

import json
import os
import time

import testtools

# Set by .ci/run where the sheepdog source archive is.
REQUIRE_REAL_SHEEPDOG = 'FASTPATH_REQUIRE_REAL_SHEEPDOG'


class IntegrationTestCase(testtools.TestCase):

    def setUp(self):
        super(IntegrationTestCase, self).setUp()
        path = os.environ.get('FASTPATH_INTEGRATION_ENV')
        if not path:
            # Not a skip: these tests only mean something against the
            # services, so running them any other way is an error.
            self.fail('FASTPATH_INTEGRATION_ENV is not set: run these '
                      'tests through `tox -e integration`')
        with open(path) as f:
            self.env = json.load(f)

    def real_cluster(self):
        """The run's real sheepdog cluster; skip the test without one.

        The reason names the variables that provide one (SHEEPDOG_PREFIX,
        SHEEPDOG_SOURCE). Where FASTPATH_REQUIRE_REAL_SHEEPDOG is set
        (``.ci/run`` sets it when the source archive is there) a missing
        cluster fails the test instead, so CI never passes by skipping.
        """
        if 'sheepdog' not in self.env:
            reason = 'real sheepdog cluster: %s' % self.env.get(
                'sheepdog_skip', 'not started by this run (--stock)')
            if os.environ.get(REQUIRE_REAL_SHEEPDOG):
                self.fail('%s is set but %s' % (REQUIRE_REAL_SHEEPDOG,
                                                reason))
            self.skipTest(reason)
        return self.env['sheepdog']

    def report(self, text):
        """Numbers for the reader, printed by the harness at the end.

        stestr hides a passing test's output, hence the report file.
        """
        with open(self.env['report'], 'a') as f:
            f.write(text + '\n')

    def wait_for(self, predicate, timeout, what, interval=0.5):
        """Poll ``predicate`` until it returns a true value; return it."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(interval)
        self.fail('%s: not true after %ss (last: %r)' % (what, timeout, last))
