"""Shared plumbing: where the harness put the services."""

import json
import os
import time

import testtools


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
