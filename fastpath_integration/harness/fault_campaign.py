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
"""

from __future__ import print_function

import argparse
import hashlib
import io
import os
import random
import signal
import sys
import threading
import time
import uuid

from oslo_utils import timeutils

from fastpath_integration.harness import fault_proxy
from fastpath_integration.harness import proxy_wire
from fastpath_integration.harness import sheep_objects
from fastpath_integration.harness import sheepdog

SEED_VARIABLE = 'FASTPATH_FAULTS_SEED'
# 1 MiB objects, the smallest sheep allows (dog cluster format -z 20):
# an image of a few objects is a few MiB.
BLOCK_SIZE_SHIFT = 20
OBJECT_SIZE = 1 << BLOCK_SIZE_SHIFT
STALL = 1.0
TRANSFER_TIMEOUT = 8.0
FAILOVER_ATTEMPTS = 4
QUIET_TIMEOUT = 60
# What a proxy fault may pick: every request the client sends for a
# transfer, the most frequent ones (object writes, inode updates, reads,
# attributes) more often.
OPCODES = ((proxy_wire.CREATE_AND_WRITE_OBJ,) * 3 +
           (proxy_wire.WRITE_OBJ,) * 3 + (proxy_wire.READ_OBJ,) * 2 +
           (proxy_wire.GET_VDI_ATTR,) * 2 +
           (proxy_wire.REMOVE_OBJ, proxy_wire.NEW_VDI,
            proxy_wire.GET_VDI_INFO, proxy_wire.DEL_VDI,
            proxy_wire.GET_NODE_LIST))
# Forged results: final errors and results sheep asks to retry. A forged
# success would be a lying sheep, which no client can see through.
FORGED = (0x03, 0x05, 0x06, 0x19, 0x82, 0x86, 0x8f)


class Image(object):
    """An upload the campaign asked for, and what became of it."""

    def __init__(self, name, data, known):
        self.name = name
        self.data = data
        self.known = known
        self.md5 = hashlib.md5(data).hexdigest()
        self.uri = None
        self.result = None
        self.deleted = False
        self.delete_failed = False


class Run(object):
    """One run's schedule, drawn from its seed alone."""

    def __init__(self, seed):
        self.seed = seed
        rng = random.Random(seed)
        self.write_concurrency = rng.choice((1, 2, 4, 8))
        self.images = []
        self.ops = []
        for number in range(rng.randint(1, 3)):
            objects = rng.randint(0, 5)
            tail = rng.choice((0, 0, 1, 4095, OBJECT_SIZE // 2))
            pieces = []
            for _index in range(objects):
                if rng.random() < 0.3:
                    pieces.append(b'\0' * OBJECT_SIZE)
                else:
                    pieces.append(_random_bytes(rng, OBJECT_SIZE))
            pieces.append(_random_bytes(rng, tail))
            data = b''.join(pieces)
            if not data:
                data = b'x'
            image = Image(str(uuid.UUID(int=rng.getrandbits(128),
                                        version=4)),
                          data, rng.random() < 0.5)
            self.images.append(image)
            self.ops.append(('upload', image))
            for _extra in range(rng.randint(0, 2)):
                self.ops.append((rng.choice(('download', 'download',
                                             'delete')),
                                 rng.choice(self.images)))
        self.faults = [self._draw_fault(rng)
                       for _fault in range(rng.randint(1, 3))]
        if rng.random() < 0.3:
            self.faults.append(self._draw_sheep_fault(rng))

    @staticmethod
    def _draw_sheep_fault(rng):
        # The moment: just before the nth request of an opcode reaches
        # the proxy's sheep (node 0, or another that the client does not
        # reach through the proxy).
        return {'kind': rng.choice(('kill', 'stop')),
                'node': rng.randint(0, 2), 'opcode': rng.choice(OPCODES),
                'nth': rng.randint(1, 4),
                'seconds': round(rng.uniform(0.5, 3.0), 2)}

    @staticmethod
    def _draw_fault(rng):
        kind = rng.choice(('hold', 'hold', 'delay', 'reset', 'reset',
                           'forge'))
        fault = {'kind': kind, 'opcode': rng.choice(OPCODES),
                 'nth': rng.randint(1, 4)}
        if kind == 'hold':
            fault['seconds'] = round(rng.uniform(0.2, 3.0), 2)
        elif kind == 'delay':
            fault['seconds'] = round(rng.uniform(0.2, 2.0), 2)
        elif kind == 'reset':
            fault['forward'] = rng.random() < 0.5
        else:
            fault['result'] = rng.choice(FORGED)
        return fault

    def describe(self):
        ops = ', '.join('%s %s (%d bytes%s)' % (
            op, image.name[:8], len(image.data),
            '' if op != 'upload' else
            ', known size' if image.known else ', unknown size')
            for op, image in self.ops)
        return 'write_concurrency %d; %s; faults: %s' % (
            self.write_concurrency, ops, '; '.join(
                _describe(fault) for fault in self.faults))


def _describe(fault):
    fault = dict(fault)
    if 'opcode' in fault:
        fault['opcode'] = proxy_wire.OPCODES[fault['opcode']]
    if 'result' in fault:
        fault['result'] = '0x%02x' % fault['result']
    return ' '.join('%s=%s' % item for item in sorted(fault.items()))


def _random_bytes(rng, size):
    if not size:
        return b''
    return rng.getrandbits(size * 8).to_bytes(size, 'little')


class Results(object):
    """Counts over the runs, and what each failing run found.

    ``silent_corruptions`` counts images (an image read wrong by several
    downloads and the final check counts once), ``leaks`` runs that left
    anything (``leaked_*``: what, by census line), the failures
    operations.
    """

    def __init__(self):
        self.runs = 0
        self.silent_corruptions = 0
        self.lost_images = 0
        self.unclear_failures = 0
        self.leaks = 0
        # What the leaks were: VDIs, data objects (lines of the census:
        # one per VDI id) and set attributes.
        self.leaked_vdis = 0
        self.leaked_objects = 0
        self.leaked_attributes = 0
        # Runs that left objects only on a sheep killed in the run
        # (``Census.down_leftovers``): sheep's, not counted as leaks.
        self.down_node_leftovers = 0
        self.clear_failures = 0
        self.successes = 0
        self.failed_runs = []

    @property
    def passed(self):
        return self.runs - len(self.failed_runs)

    def as_dict(self):
        return {'runs': self.runs,
                'silent_corruptions': self.silent_corruptions,
                'lost_images': self.lost_images,
                'unclear_failures': self.unclear_failures,
                'leaks': self.leaks,
                'leaked_vdis': self.leaked_vdis,
                'leaked_objects': self.leaked_objects,
                'leaked_attributes': self.leaked_attributes,
                'down_node_leftovers': self.down_node_leftovers,
                'clear_failures': self.clear_failures,
                'successes': self.successes,
                'failed_seeds': [seed for seed, _why in self.failed_runs]}


def _store_errors():
    from glance_store import exceptions
    return (exceptions.GlanceStoreException, exceptions.BackendException)


def make_store(port, entry_points=(), **overrides):
    """A configured fastsheep store (native client) at 127.0.0.1:port."""
    from glance_store import backend
    from oslo_config import cfg

    from glance_store_fastsheep import store
    conf = cfg.ConfigOpts()
    conf.register_opts(backend._STORE_OPTS, group='glance_store')
    conf([], project='glance')
    store.Store(conf)
    values = {'sheepdog_store_client': 'native',
              'sheepdog_store_port': port,
              'sheepdog_store_addresses': ['127.0.0.1:%d' % entry
                                           for entry in entry_points],
              'sheepdog_store_stall_timeout': STALL,
              'sheepdog_store_transfer_timeout': TRANSFER_TIMEOUT,
              'sheepdog_store_failover_attempts': FAILOVER_ATTEMPTS}
    values.update(overrides)
    for name, value in values.items():
        conf.set_override(name, value, group='glance_store')
    sd = store.Store(conf)
    sd.configure(re_raise_bsc=True)
    return sd, conf


def location(conf, uri):
    from glance_store import location as glance_location

    from glance_store_fastsheep import store
    return glance_location.Location('sheepdog', store.StoreLocation, conf,
                                    uri=uri)


def add(sd, name, data, size):
    from glance_store_fastsheep import store
    if store.MULTIHASH:
        return sd.add(name, io.BytesIO(data), size, 'sha512')
    return sd.add(name, io.BytesIO(data), size)


def read(sd, loc):
    """(md5, length) of what get() yields."""
    stream, _length = sd.get(loc)
    digest = hashlib.md5()
    length = 0
    for piece in stream:
        digest.update(piece)
        length += len(piece)
    return digest.hexdigest(), length


class Campaign(object):
    """Runs on one cluster; ``run(seed)`` does one and counts it."""

    def __init__(self, out=None):
        self.out = out or sys.stdout
        self.results = Results()
        self.cluster = None

    def __enter__(self):
        self.cluster = sheepdog.SheepdogCluster(
            3, 2, block_size_shift=BLOCK_SIZE_SHIFT)
        self.cluster.setUp()
        return self

    def __exit__(self, *exc_info):
        self.cluster.cleanUp()

    def say(self, text):
        self.out.write(text + '\n')
        self.out.flush()

    # -- one run ------------------------------------------------------------

    def run(self, seed):
        plan = Run(seed)
        self.say('faults: run %d seed %d: %s' % (
            self.results.runs + 1, seed, plan.describe()))
        findings = []
        # What is left before the run (earlier runs' leftovers on sheep
        # killed then) is not this run's, wherever recovery moves it.
        baseline = sheep_objects.Census(self.cluster).unaccounted_ids()
        proxy = fault_proxy.FaultProxy(self.cluster.nodes[0].port)
        proxy.setUp()
        self._timers = []
        # Indexes of the sheep this run killed.
        self._killed = set()
        # What only killed sheep held before they came back (_quiet).
        self._revived = {}
        # Names of the images found corrupted: each counts once.
        self._corrupted = set()
        entry_points = [node.port for node in self.cluster.nodes[1:]]
        try:
            try:
                sd, conf = make_store(
                    proxy.port, entry_points,
                    sheepdog_store_write_concurrency=plan.write_concurrency)
                for fault in plan.faults:
                    self._arm(fault, proxy)
                self._operate(plan, sd, conf, findings)
            finally:
                for timer in self._timers:
                    timer.join()
                self._quiet(proxy)
            # The same glance configuration, the proxy now fault-free:
            # the locations glance holds name the proxy's address.
            self._check(plan, baseline, findings, proxy.port, entry_points)
        finally:
            proxy.cleanUp()
        self.results.silent_corruptions += len(self._corrupted)
        self.results.runs += 1
        if findings:
            self.results.failed_runs.append((seed, findings))
            for finding in findings:
                self.say('faults:   seed %d: %s' % (seed, finding))
        return findings

    def _arm(self, fault, proxy):
        """Install fault; a sheep fault's SIGCONT timers go in timers."""
        match = fault_proxy.on(fault['opcode'], fault['nth'])
        if fault['kind'] in ('kill', 'stop'):
            proxy.add(fault_proxy.trigger(match, lambda _request: (
                self._sheep_fault(fault))))
        elif fault['kind'] == 'hold':
            proxy.add(fault_proxy.hold(match, fault['seconds']))
        elif fault['kind'] == 'delay':
            proxy.add(fault_proxy.delay(match, fault['seconds']))
        elif fault['kind'] == 'reset':
            proxy.add(fault_proxy.reset(match, fault['forward']))
        else:
            proxy.add(fault_proxy.forge(match, fault['result']))

    def _sheep_fault(self, fault):
        """SIGKILL, or SIGSTOP and SIGCONT `seconds` later, of a sheep.

        A killed sheep stays down until the quiet period starts it. The
        threads that reap it or resume it go in ``_timers``.
        """
        node = self.cluster.nodes[fault['node']]
        if fault['kind'] == 'kill':
            self._killed.add(fault['node'])
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

    def _operate(self, plan, sd, conf, findings):
        errors = _store_errors()
        for op, image in plan.ops:
            try:
                if op == 'upload':
                    size = len(image.data) if image.known else 0
                    result = add(sd, image.name, image.data, size)
                    image.uri, image.result = result[0], result[1:3]
                    if image.result != (len(image.data), image.md5):
                        findings.append(
                            'silent corruption: upload of %s returned %r, '
                            'the data is (%d, %s)' % (
                                image.name, image.result, len(image.data),
                                image.md5))
                        self._corrupted.add(image.name)
                    self.results.successes += 1
                elif image.uri is None or image.deleted:
                    continue
                elif op == 'download':
                    got = read(sd, location(conf, image.uri))
                    if got != (image.md5, len(image.data)):
                        findings.append(
                            'silent corruption: download of %s%s gave %r, '
                            'the image is (%s, %d)' % (
                                image.name, ' after a failed delete'
                                if image.delete_failed else '', got,
                                image.md5, len(image.data)))
                        self._corrupted.add(image.name)
                    self.results.successes += 1
                else:
                    sd.delete(location(conf, image.uri))
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

    def _quiet(self, proxy):
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
        self._revived = sheep_objects.Census(self.cluster).revived(
            self._killed)
        for node in self.cluster.nodes:
            if not node.running:
                node.kill()  # reaps it, if not reaped yet
                node.start()
        self.cluster.wait_until_running(60)
        wait_for_recovery(self.cluster)

    def _check(self, plan, baseline, findings, port, entry_points):
        from glance_store import exceptions
        errors = _store_errors()
        sd, conf = make_store(port, entry_points)
        live = []
        for image in plan.images:
            if image.uri is None or image.deleted:
                continue
            loc = location(conf, image.uri)
            # The VDI's name is the upload attempt's (store.vdi_name).
            vdi = loc.store_location.image
            live.append(vdi)
            want = (image.md5, len(image.data))
            try:
                size = sd.get_size(loc)
                got = read(sd, loc)
                dog = self.cluster.vdi_digest(vdi)
            except errors as exc:
                if not image.delete_failed:
                    findings.append('lost image: %s (uploaded, never '
                                    'deleted) cannot be read: %s'
                                    % (image.name, exc))
                    self.results.lost_images += 1
                continue
            except sheepdog.ClusterError as exc:
                if not image.delete_failed:
                    findings.append('lost image: dog cannot read %s: %s'
                                    % (image.name, exc))
                    self.results.lost_images += 1
                continue
            if size != len(image.data) or got != want or dog != want:
                findings.append(
                    'silent corruption: %s (%s) reads back as size %d, '
                    'get %r, dog %r; upload returned %r' % (
                        image.name, 'delete failed' if image.delete_failed
                        else 'active', size, got, dog, image.result))
                self._corrupted.add(image.name)
        census = sheep_objects.Census(self.cluster)
        leaked = set(census.leaks(live, self._killed, baseline,
                                  self._revived))
        left = set(census.down_leftovers(live, self._killed, baseline,
                                         self._revived))
        # The run's images go: a delete that failed is retried here.
        for image in plan.images:
            if image.uri is None or image.deleted:
                continue
            try:
                sd.delete(location(conf, image.uri))
            except exceptions.NotFound:
                # An earlier delete's DEL_VDI that landed after it gave
                # up: glance's delete takes NotFound as done, and the
                # census below counts what it may have left.
                if not image.delete_failed:
                    findings.append('lost image: %s (never deleted) was '
                                    'gone after the quiet period'
                                    % image.name)
                    self.results.lost_images += 1
            except errors as exc:
                findings.append('delete of %s after the quiet period failed:'
                                ' %s' % (image.name, exc))
        census = sheep_objects.Census(self.cluster)
        leaked |= set(census.leaks(down=self._killed, known=baseline,
                                   revived=self._revived))
        left |= set(census.down_leftovers(down=self._killed, known=baseline,
                                          revived=self._revived))
        if left:
            self.results.down_node_leftovers += 1
            for line in sorted(left):
                self.say('faults:   seed %d: left on a sheep killed in the '
                         'run (sheep keeps it; not a leak): %s'
                         % (plan.seed, line))
        if leaked:
            self.results.leaks += 1
            for line in leaked:
                kind = ('leaked_attributes' if line.startswith('attribute')
                        else 'leaked_vdis' if line.startswith('VDI')
                        else 'leaked_objects')
                setattr(self.results, kind, getattr(self.results, kind) + 1)
            findings.extend('leak: %s' % line for line in sorted(leaked))


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


def seeds_of(campaign_seed, runs):
    rng = random.Random(campaign_seed)
    return [rng.randrange(1 << 32) for _run in range(runs)]


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
        seeds = seeds_of(campaign_seed, args.runs)
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
