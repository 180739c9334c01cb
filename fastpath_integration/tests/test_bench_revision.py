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
"""The revision section: when it runs, and the worktree it leaves none of."""

import argparse
import os
import subprocess

import fixtures
import testtools

from fastpath_integration.bench import cli
from fastpath_integration.bench import revision
from fastpath_integration.bench import runner
from fastpath_integration.bench import transfers
from fastpath_integration.bench import workers


class Other(object):
    """A default section's module: never asked about requested()."""


def _names(only='', against=None):
    args = argparse.Namespace(only=only, against=against)
    modules = [Other()] * len(cli.SECTIONS) + [revision]
    return [name for name, _module in cli.sections(args, modules)]


class SectionsTest(testtools.TestCase):

    def test_not_a_default_section(self):
        self.assertEqual(list(cli.SECTIONS), _names())

    def test_against_asks_for_it_after_the_defaults(self):
        self.assertEqual(list(cli.SECTIONS) + ['revision'],
                         _names(against='257506b'))

    def test_only_names_it_alone(self):
        self.assertEqual(['revision'],
                         _names('revision', against='257506b'))
        self.assertEqual(['real'], _names('real', against='257506b'))

    def test_only_without_against(self):
        self.assertRaisesRegex(ValueError, 'revision need their option',
                               _names, 'real,revision')

    def test_unknown_section(self):
        self.assertRaisesRegex(ValueError, 'unknown section.*: nope',
                               _names, 'revision,nope')

    def test_against_parsed(self):
        parser = argparse.ArgumentParser()
        revision.add_arguments(parser)
        self.assertEqual('257506b',
                         parser.parse_args(['--against', '257506b']).against)
        self.assertIsNone(parser.parse_args([]).against)

    def test_no_against_no_rows(self):
        report = runner.Report()
        revision.run(argparse.Namespace(against=None), report)
        self.assertEqual({}, dict(report.rows))
        self.assertEqual([revision.NOT_RUN], report.notes)


class CheckoutTest(testtools.TestCase):

    def setUp(self):
        super(CheckoutTest, self).setUp()
        self.repo = self.useFixture(fixtures.TempDir()).path
        self.parent = self.useFixture(fixtures.TempDir()).path
        package = os.path.join(self.repo, revision.PACKAGE)
        os.mkdir(package)
        with open(os.path.join(package, '__init__.py'), 'w') as init:
            init.write('# first\n')
        self.git('init', '-q')
        self.git('add', '.')
        self.git('-c', 'user.name=t', '-c', 'user.email=t@example.com',
                 'commit', '-q', '-m', 'first')
        self.commit = self.git('rev-parse', 'HEAD')

    def git(self, *argv):
        return subprocess.check_output(
            ('git', '-C', self.repo) + argv).decode().strip()

    def assertNothingLeft(self):
        self.assertEqual([], os.listdir(self.parent))
        self.assertEqual(1, len(self.git('worktree', 'list').splitlines()))

    def test_the_driver_of_the_revision_then_nothing(self):
        with open(os.path.join(self.repo, revision.PACKAGE,
                               '__init__.py'), 'w') as init:
            init.write('# changed, not committed\n')
        with revision.checkout('HEAD', self.repo, self.parent) as (commit,
                                                                   path):
            self.assertEqual(self.commit, commit)
            self.assertEqual([revision.PACKAGE], os.listdir(path))
            with open(os.path.join(path, revision.PACKAGE,
                                   '__init__.py')) as init:
                self.assertEqual('# first\n', init.read())
            self.assertEqual(2, len(self.git('worktree',
                                             'list').splitlines()))
        self.assertNothingLeft()

    def test_removed_on_an_error(self):
        def fail():
            with revision.checkout('HEAD', self.repo, self.parent):
                raise KeyboardInterrupt()
        self.assertRaises(KeyboardInterrupt, fail)
        self.assertNothingLeft()

    def test_no_such_revision(self):
        def enter():
            with revision.checkout('no-such-rev', self.repo, self.parent):
                self.fail('checked out a revision that does not exist')
        self.assertRaisesRegex(RuntimeError, 'no-such-rev is not a commit',
                               enter)
        self.assertNothingLeft()


class Cluster(object):
    env = {'PATH': '/nowhere'}

    def get(self, **params):
        return dict(params, kind=params.get('kind', 'get'))


class MeasureTest(testtools.TestCase):
    """Which tree each row's workers get, without a cluster."""

    def setUp(self):
        super(MeasureTest, self).setUp()
        self.rev = self.useFixture(fixtures.TempDir()).path
        self.calls, self.params = [], {}
        self.useFixture(fixtures.MockPatchObject(workers, 'run',
                                                 self.fake_run))
        self.imports = {}

    def fake_run(self, function, params, python=None, env=None,
                 timeout=1800, path=None):
        if function is revision.driver_path:
            return {'path': self.imports.get(path[0], os.path.realpath(
                os.path.join(path[0], revision.PACKAGE)))}
        self.assertIs(transfers.work, function)
        self.calls.append((params['kind'], path))
        self.params[params['kind']] = params
        seconds = 1.0 if path[0] == self.rev else 0.5
        return {'times_s': [seconds], 'size': 10 ** 6}

    def measure(self):
        report = runner.Report()
        revision.measure(argparse.Namespace(real_rounds=2, quick=False),
                         report, Cluster(), 'c0ffee', self.rev)
        return report

    def test_each_side_its_tree_in_alternating_rounds(self):
        report = self.measure()
        against, this = [self.rev, workers.TOPDIR], [workers.TOPDIR]
        self.assertEqual([('put', against), ('put', this), ('put', this),
                          ('put', against), ('get', against), ('get', this),
                          ('get', this), ('get', against)], self.calls)
        self.assertEqual({'sheepdog_store_client': 'native'},
                         self.params['put']['opts'])
        self.assertEqual({'sheepdog_store_reader': 'native'},
                         self.params['get']['opts'])
        self.assertEqual(1, self.params['get']['repeats'])
        self.assertEqual('c0ffee',
                         report.rows['revision_put_against']['commit'])
        self.assertNotIn('commit', report.rows['revision_put_this'])
        report.evaluate(revision.RATIOS, None)
        self.assertEqual({'revision_put_this_vs_against': 2.0,
                          'revision_get_this_vs_against': 2.0},
                         dict(report.ratios))

    def test_a_side_that_imports_another_driver(self):
        self.imports[self.rev] = os.path.join(workers.TOPDIR,
                                              revision.PACKAGE)
        self.assertRaisesRegex(RuntimeError, 'against rows',
                               self.measure)
        self.assertEqual([], self.calls)
