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
"""This tree's native transfers against another revision's, side by side.

A claim that a change does not slow the native client down is a ratio
of this tree's MB/s over the tree before it, measured in one run on one
cluster in alternating rounds: two runs of a shared machine a day apart
compare the machine's load, not the trees. ``--against REV`` checks a
git revision of this repository out in a detached worktree in a
temporary directory (removed at the end, whatever happens) and, on one
real 1-node cluster, times the native client's upload (``add()`` of a
known size, md5 included, as glance calls it) and download (``get()``)
of one image with REV's driver and with this tree's.

Only the driver package comes from REV: REV's rows run this tree's
workers (``transfers``, ``store_driver``) with REV's
``glance_store_fastsheep`` ahead of this tree on PYTHONPATH, so that the
two sides differ in the driver alone, not in how they are measured (the
bench's own modules change between revisions too). Not one of the
default sections: it runs with ``--against`` (or ``--only revision``).
"""

import contextlib
import os
import shutil
import subprocess
import tempfile

from fastpath_integration.bench import clusters
from fastpath_integration.bench import real
from fastpath_integration.bench import runner
from fastpath_integration.bench import transfers
from fastpath_integration.bench import workers

PACKAGE = 'glance_store_fastsheep'
NOT_RUN = 'revision: did not run: no --against REV'

PUT = runner.Table(
    'Native upload, this tree against another revision',
    'add() of one image of known size (md5 included) through the native '
    'client on a real 1-node cluster, REV\'s driver and this tree\'s, '
    'same workers; stored bytes checked by sha256 afterwards; '
    'alternating rounds; vs: this tree\'s MB/s over REV\'s.',
    real.COLUMNS, 'mb_s')
PUT_AGAINST = PUT.row('revision_put_against', 'native add(), {against}')
PUT_THIS = PUT.row('revision_put_this', 'native add(), this tree',
                   PUT_AGAINST)
GET = runner.Table(
    'Native download, this tree against another revision',
    'get() of one image through the native client on a real 1-node '
    'cluster, eventlet, hot, REV\'s driver and this tree\'s, same '
    'workers; byte count timed, sha256 checked in an untimed pass; '
    'alternating rounds; vs: this tree\'s MB/s over REV\'s.',
    real.COLUMNS, 'mb_s')
GET_AGAINST = GET.row('revision_get_against', 'native get(), {against}')
GET_THIS = GET.row('revision_get_this', 'native get(), this tree',
                   GET_AGAINST)
# Issue 39: the layout work may not make either transfer slower than the
# tree before it; 5 % is the noise the alternating rounds leave.
RATIOS = (
    runner.ratio('revision_put_this_vs_against', PUT_THIS, PUT_AGAINST,
                 op='>=', bound=0.95),
    runner.ratio('revision_get_this_vs_against', GET_THIS, GET_AGAINST,
                 op='>=', bound=0.95),
)


def add_arguments(parser):
    group = parser.add_argument_group(
        'revision section (this tree against another revision)')
    group.add_argument('--against', metavar='REV',
                       help='a git revision of this repository whose '
                            'native client the revision section measures '
                            'beside this tree\'s (e.g. 257506b); rounds: '
                            '--real-rounds')


def requested(args):
    """Whether the run asked for this section without ``--only``."""
    return bool(args.against)


def _git(repo, *argv):
    return subprocess.check_output(
        ('git', '-C', repo) + argv, stderr=subprocess.STDOUT).decode().strip()


@contextlib.contextmanager
def checkout(rev, repo=workers.TOPDIR, parent=None):
    """(commit id, PYTHONPATH entry) of rev's driver, checked out.

    A detached worktree of repo at rev in a temporary directory (under
    parent, else TMPDIR), and beside it a directory holding only a link
    to its driver package: what goes ahead of this tree on a worker's
    PYTHONPATH. Both are removed on the way out, on an error or a
    KeyboardInterrupt too, and the worktree unregistered, so that a run
    leaves nothing in the repository.
    """
    root = tempfile.mkdtemp(prefix='bench-revision-', dir=parent)
    tree = os.path.join(root, 'tree')
    try:
        try:
            commit = _git(repo, 'rev-parse', '--verify',
                          '%s^{commit}' % rev)
        except subprocess.CalledProcessError as exc:
            raise RuntimeError('revision: %s is not a commit of %s: %s' % (
                rev, repo, exc.output.decode().strip()))
        _git(repo, 'worktree', 'add', '--detach', tree, commit)
        path = os.path.join(root, 'path')
        os.mkdir(path)
        os.symlink(os.path.join(tree, PACKAGE), os.path.join(path, PACKAGE))
        yield commit, path
    finally:
        quiet = {'stdout': subprocess.DEVNULL, 'stderr': subprocess.DEVNULL}
        removed = os.path.isdir(tree) and not subprocess.call(
            ['git', '-C', repo, 'worktree', 'remove', '--force', tree],
            **quiet)
        shutil.rmtree(root, ignore_errors=True)
        if not removed:
            # A worktree add interrupted half way is registered with no
            # directory (or one git would not remove): prune forgets it.
            subprocess.call(['git', '-C', repo, 'worktree', 'prune'],
                            **quiet)


def run(args, report):
    report.vars['against'] = args.against or 'REV'
    if not args.against:
        report.note(NOT_RUN)
        return
    if not clusters.real_available(args, report):
        return
    source = clusters.Source(clusters.image_size(args))
    try:
        with checkout(args.against) as (commit, path):
            report.vars['against'] = '%s (%s)' % (args.against, commit[:12])
            with clusters.real(args, source) as cluster:
                measure(args, report, cluster, commit, path)
                where = cluster.where
    except RuntimeError as exc:
        # No such revision, or a side that would import the wrong driver:
        # these rows fail, not the run (interleave records a row's own).
        for row in (PUT_AGAINST, PUT_THIS, GET_AGAINST, GET_THIS):
            if row.key(report) not in report.rows:
                report.failed(row, exc)
        return
    finally:
        source.close()
    report.note('revision: against %s, commit %s; %d MiB image, %d '
                'alternating round(s); %s' % (
                    args.against, commit, source.size // clusters.MIB,
                    real.rounds(args), where))


def measure(args, report, cluster, commit, path):
    """The put rows' rounds, then the get rows', each tree in turn.

    Each row's worker is started here (``here``) with its tree's
    PYTHONPATH: REV's driver package ahead of this tree, or this tree
    alone. REV's rows carry its commit id into the JSON.
    """
    put = cluster.get(kind='put', opts={'sheepdog_store_client': 'native'})
    # The reader's option name of the trees before sheepdog_store_client;
    # store_driver passes it on as the client where that option exists.
    get = cluster.get(opts={'sheepdog_store_reader': 'native'})

    trees = {'against': [path, workers.TOPDIR], 'this': [workers.TOPDIR]}
    # A driver installed ahead of PYTHONPATH (a .pth that inserts at the
    # front) would make both sides this tree's, and the ratio 1.
    for side, wanted in (('against', path), ('this', workers.TOPDIR)):
        got = workers.run(driver_path, {}, path=trees[side])['path']
        if got != os.path.realpath(os.path.join(wanted, PACKAGE)):
            raise RuntimeError('revision: the %s rows\' workers import '
                               '%s, not the one in %s' % (side, got, wanted))

    def work(params):
        tree_path, worker_params = params
        return workers.run(transfers.work, dict(worker_params, repeats=1),
                           env=cluster.env, path=tree_path)
    for against, this, params in ((PUT_AGAINST, PUT_THIS, put),
                                  (GET_AGAINST, GET_THIS, get)):
        report.interleave(
            [(against, (trees['against'], params)),
             (this, (trees['this'], params))],
            work, real.rounds(args), here=True)
        if 'mb_s' in report.rows.get(against.key(report), {}):
            report.add(against, commit=commit)


def driver_path(params):
    """The driver package a worker imports, its links resolved."""
    import glance_store_fastsheep
    return {'path': os.path.dirname(os.path.realpath(
        glance_store_fastsheep.__file__))}
