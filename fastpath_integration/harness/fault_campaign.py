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
"""A randomized fault campaign against the native client (issue 36).

One real cluster of 3 sheep keeping 2 copies, with a small object size
(``dog cluster format -z``) so that small images span a few objects,
serves every run. Each run has a seed of its own, printed before it
starts, from which everything it does is drawn:

* a store (the native client, threads) configured with a ``FaultProxy``
  in front of node 0 and nodes 1 and 2 as further entry points, a small
  stall timeout and a random write concurrency;
* operations, one after another: uploads of known and unknown size (a
  few objects, some all-zero, a tail), downloads and deletes of the
  images uploaded so far;
* one to three faults, each at the n-th request of a random opcode
  through the proxy: the proxy holds, delays, resets or forges (an error
  result) it; in a third of the runs also a random sheep is killed
  (SIGKILL) or frozen (SIGSTOP) just before such a request.

Then a quiet period: a frozen sheep is resumed, a killed one started
again, every held request lands, the cluster is running with its 3
nodes. The run is then checked with a new store without the proxy:

* silent corruption: an upload that returned success whose image does
  not read back byte-exact (get_size, get and ``dog vdi read`` against
  the size and md5 the upload returned), or a download that completed
  with other bytes;
* a lost image: an upload that returned success, never deleted, that
  cannot be read;
* an unclear failure: an operation that raised anything but a
  glance_store error with a message;
* a leak: a VDI, a set attribute or an object in a sheep's store
  (``sheep_objects.Census``) that no image of the campaign's "glance"
  (the uploads that succeeded and were not deleted) accounts for, after
  the quiet period, and again once the run's images are deleted.
  Objects that only a sheep killed in the run holds are counted apart
  (``down_node_leftovers``, each printed): sheep removes an object from
  the holders alive at the time, and a sheep restarted with its store
  keeps its copy (no tombstone), whoever sent the removal; ``dog vdi
  delete`` leaves the same. What was left before a run (such copies of
  an earlier run) is not counted again, by object id, wherever
  recovery copies it once that sheep is back.

A failing run is reproduced alone with its seed: ``tox -e faults --
--seed N`` or ``FASTPATH_FAULTS_SEED=N``. ``tox -e faults`` runs
``--runs`` runs (CI: 50); the bench's ``faults`` section many more.

This module runs the campaign and is its command line; what a run does
is drawn in ``fault_schedule`` (every random draw, so that a seed alone
reproduces a run), the store it drives is made in ``fault_store``, and
what its outcome means is decided in ``fault_checks``.
"""

from __future__ import print_function

import argparse
import os
import random
import signal
import sys
import threading
import time

from oslo_utils import timeutils

from fastpath_integration.harness import fault_checks
from fastpath_integration.harness import fault_proxy
from fastpath_integration.harness import fault_schedule
from fastpath_integration.harness import fault_store
from fastpath_integration.harness import sheep_objects
from fastpath_integration.harness import sheepdog

SEED_VARIABLE = 'FASTPATH_FAULTS_SEED'
QUIET_TIMEOUT = 60


class Campaign(object):
    """Runs on one cluster; ``run(seed)`` does one and counts it."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.results = fault_checks.Results()
        self.cluster = None

    def __enter__(self):
        self.cluster = sheepdog.SheepdogCluster(
            3, 2, block_size_shift=fault_schedule.BLOCK_SIZE_SHIFT)
        self.cluster.setUp()
        return self

    def __exit__(self, *exc_info):
        self.cluster.cleanUp()

    def say(self, text):
        self.out.write(text + '\n')
        self.out.flush()

    # -- one run ------------------------------------------------------------

    def run(self, seed):
        plan = fault_schedule.Schedule(seed)
        self.say('faults: run %d seed %d: %s' % (
            self.results.runs + 1, seed, plan.describe()))
        # What is left before the run (earlier runs' leftovers on sheep
        # killed then) is not this run's, wherever recovery moves it.
        record = fault_checks.RunRecord(
            plan, sheep_objects.Census(self.cluster).unaccounted_ids())
        proxy = fault_proxy.FaultProxy(self.cluster.nodes[0].port)
        proxy.setUp()
        self._timers = []
        entry_points = [node.port for node in self.cluster.nodes[1:]]
        try:
            try:
                sd, conf = fault_store.make_store(
                    proxy.port, entry_points,
                    sheepdog_store_write_concurrency=plan.write_concurrency)
                for fault in plan.faults:
                    self._arm(fault, proxy, record)
                self._operate(record, sd, conf)
            finally:
                for timer in self._timers:
                    timer.join()
                self._quiet(proxy, record)
            # The same glance configuration, the proxy now fault-free:
            # the locations glance holds name the proxy's address.
            fault_checks.check_run(self.cluster, record, self.results,
                                   proxy.port, entry_points, self.say)
        finally:
            proxy.cleanUp()
        findings = record.findings
        self.results.silent_corruptions += len(record.corrupted)
        self.results.runs += 1
        if findings:
            self.results.failed_runs.append((seed, findings))
            for finding in findings:
                self.say('faults:   seed %d: %s' % (seed, finding))
        return findings

    def _arm(self, fault, proxy, record):
        """Install fault; a sheep fault's SIGCONT timers go in timers."""
        match = fault_proxy.on(fault['opcode'], fault['nth'])
        if fault['kind'] in ('kill', 'stop'):
            proxy.add(fault_proxy.trigger(match, lambda _request: (
                self._sheep_fault(fault, record))))
        elif fault['kind'] == 'hold':
            proxy.add(fault_proxy.hold(match, fault['seconds']))
        elif fault['kind'] == 'delay':
            proxy.add(fault_proxy.delay(match, fault['seconds']))
        elif fault['kind'] == 'reset':
            proxy.add(fault_proxy.reset(match, fault['forward']))
        else:
            proxy.add(fault_proxy.forge(match, fault['result']))

    def _sheep_fault(self, fault, record):
        """SIGKILL, or SIGSTOP and SIGCONT `seconds` later, of a sheep.

        A killed sheep stays down until the quiet period starts it. The
        threads that reap it or resume it go in ``_timers``.
        """
        node = self.cluster.nodes[fault['node']]
        if fault['kind'] == 'kill':
            record.killed.add(fault['node'])
            # Dead before the request goes on; reaped (which waits for
            # its logger) beside it, and joined before the quiet period
            # starts it again.
            node.kill(signal.SIGKILL, wait=False)
            reaper = threading.Thread(target=node.kill)
            reaper.daemon = True
            reaper.start()
            self._timers.append(reaper)
            return
        node.kill(signal.SIGSTOP, wait=False)
        timer = threading.Timer(fault['seconds'], node.kill,
                                (signal.SIGCONT, False))
        timer.daemon = True
        timer.start()
        self._timers.append(timer)

    def _operate(self, record, sd, conf):
        """Run the schedule's operations, each failure counted as it is."""
        findings = record.findings
        errors = fault_store.store_errors()
        for op, image in record.schedule.ops:
            try:
                if op == 'upload':
                    size = len(image.data) if image.known else 0
                    result = fault_store.add(sd, image.name, image.data,
                                             size)
                    image.uri, image.result = result[0], result[1:3]
                    if image.result != (len(image.data), image.md5):
                        findings.append(
                            'silent corruption: upload of %s returned %r, '
                            'the data is (%d, %s)' % (
                                image.name, image.result, len(image.data),
                                image.md5))
                        record.corrupted.add(image.name)
                    self.results.successes += 1
                elif image.uri is None or image.deleted:
                    continue
                elif op == 'download':
                    got = fault_store.read(
                        sd, fault_store.location(conf, image.uri))
                    if got != (image.md5, len(image.data)):
                        findings.append(
                            'silent corruption: download of %s%s gave %r, '
                            'the image is (%s, %d)' % (
                                image.name, ' after a failed delete'
                                if image.delete_failed else '', got,
                                image.md5, len(image.data)))
                        record.corrupted.add(image.name)
                    self.results.successes += 1
                else:
                    sd.delete(fault_store.location(conf, image.uri))
                    image.deleted = True
                    self.results.successes += 1
            except errors as exc:
                if not str(exc).strip():
                    findings.append('unclear failure: %s of %s raised %r '
                                    'without a message' % (op, image.name,
                                                           exc))
                    self.results.unclear_failures += 1
                else:
                    self.results.clear_failures += 1
                    self.say('faults:   %s of %s failed clearly: %s' % (
                        op, image.name, str(exc).splitlines()[0][:300]))
                if op == 'delete':
                    image.delete_failed = True
            except Exception as exc:
                findings.append('unclear failure: %s of %s raised %s: %s' % (
                    op, image.name, type(exc).__name__, exc))
                self.results.unclear_failures += 1
                if op == 'delete':
                    image.delete_failed = True

    def _quiet(self, proxy, record):
        """Resume, restart and wait until nothing is held or moving."""
        for node in self.cluster.nodes:
            if node.running:
                node.kill(signal.SIGCONT, wait=False)
        if not proxy.wait_quiet(QUIET_TIMEOUT):
            self.say('faults:   requests still held after %ss'
                     % QUIET_TIMEOUT)
        proxy.clear()
        # What only the killed sheep hold, read from their stores before
        # they come back: recovery may copy it to the others.
        record.revived = sheep_objects.Census(self.cluster).revived(
            record.killed)
        for node in self.cluster.nodes:
            if not node.running:
                node.kill()  # reaps it, if not reaped yet
                node.start()
        self.cluster.wait_until_running(60)
        wait_for_recovery(self.cluster)


def wait_for_recovery(cluster, timeout=60):
    """Return once no node of cluster reports an object recovery."""
    deadline = timeutils.now() + timeout
    while timeutils.now() < deadline:
        code, out, _err = cluster.dog('node', 'recovery')
        lines = [line for line in out.decode('utf-8', 'replace').splitlines()
                 if line.strip()]
        if code == 0 and len(lines) <= 2:
            return
        time.sleep(0.1)


def run_seeds(seeds, out=None):
    """Run the campaign for each seed on one cluster; the Results."""
    with Campaign(out) as campaign:
        for seed in seeds:
            campaign.run(seed)
        return campaign.results


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m fastpath_integration.harness.fault_campaign',
        description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=50,
                        help='how many runs (default 50)')
    parser.add_argument('--seed', type=int,
                        default=os.environ.get(SEED_VARIABLE),
                        help='run only the run of this seed (also %s)'
                        % SEED_VARIABLE)
    parser.add_argument('--campaign-seed', type=int,
                        help='the seed the runs\' seeds are drawn from '
                        '(default: random, printed)')
    args = parser.parse_args(argv)
    # A terminated campaign still stops its cluster (Campaign.__exit__).
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    if not sheepdog.available():
        if os.environ.get('FASTPATH_REQUIRE_REAL_SHEEPDOG'):
            print('faults: %s' % sheepdog.SKIP_REASON, file=sys.stderr)
            return 1
        print('faults: skipped: %s' % sheepdog.SKIP_REASON)
        sheepdog.record_skip('the fault campaign')
        return 0
    if args.seed is not None:
        seeds = [int(args.seed)]
        print('faults: the run of seed %d alone' % seeds[0])
    else:
        campaign_seed = args.campaign_seed
        if campaign_seed is None:
            campaign_seed = random.SystemRandom().randrange(1 << 32)
        print('faults: campaign seed %d, %d runs (a run alone: --seed N)'
              % (campaign_seed, args.runs))
        seeds = fault_schedule.seeds_of(campaign_seed, args.runs)
    started = timeutils.now()
    results = run_seeds(seeds)
    print('faults: %s in %.0fs' % (
        ', '.join('%s %s' % (value, key) for key, value in sorted(
            results.as_dict().items()) if key != 'failed_seeds'),
        timeutils.now() - started))
    for seed, findings in results.failed_runs:
        print('faults: failing seed %d (--seed %d): %d finding(s)'
              % (seed, seed, len(findings)))
    print('faults: %d passed, %d failed'
          % (results.passed, len(results.failed_runs)))
    return 1 if results.failed_runs else 0


if __name__ == '__main__':
    sys.exit(main())
