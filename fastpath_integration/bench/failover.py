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
"""A transfer that loses the sheep it talks to (issue 29's bench rows).

A real 3-node cluster keeping 2 copies (the harness's default sheepdog,
1.0.1), the native client with default options, under eventlet. At a
third of a get() or add(), node 0 (the location's and the configured
sheep) is killed (SIGKILL) or frozen (SIGSTOP, resumed once the row
ended). The gap is the longest interval between two pieces get()
yielded, or two reads add() made of its source; MB/s is the whole
transfer's, against the same transfer with no fault. A fault destroys
the node, so each fault row has a fresh cluster and one round: these
are not alternating rounds. Every transfer is checked by sha256, and a
worker that leaves a child process, a socket or a greenthread, or the
cluster a VDI, fails its row.
"""

import logging
import os
import signal
import threading

from fastpath_integration.bench import clusters
from fastpath_integration.bench import runner
from fastpath_integration.bench import workers

TABLE = runner.Table(
    'Failover on a real cluster, 3 nodes keeping 2 copies',
    'native client, default options, eventlet; node 0 killed or frozen '
    'at a third of the transfer; one round each (a fault ends the node); '
    'vs: MB/s over the same transfer with no fault.',
    (('MB/s', 'mb_s'), ('longest gap s', 'gap_s'),
     ('failovers', 'failovers')), 'mb_s')
GET = TABLE.row('real_nofault_get', 'get(), no fault')
KILL_GET = TABLE.row('real_failover_get', 'get(), SIGKILL', GET)
STOP_GET = TABLE.row('real_freeze_get', 'get(), SIGSTOP', GET)
PUT = TABLE.row('real_nofault_put', 'add(), no fault')
KILL_PUT = TABLE.row('real_failover_put', 'add(), SIGKILL', PUT)
RATIOS = (
    runner.ratio('real_failover_get_gap_s', KILL_GET, key='gap_s',
                 op='<=', bound=5),
    runner.ratio('real_failover_put_gap_s', KILL_PUT, key='gap_s',
                 op='<=', bound=5),
    runner.ratio('real_freeze_get_gap_s', STOP_GET, key='gap_s', op='<=',
                 bound=15),
    runner.ratio('real_failover_get_vs_nofault', KILL_GET, GET),
    runner.ratio('real_failover_put_vs_nofault', KILL_PUT, PUT),
    runner.ratio('real_freeze_get_vs_nofault', STOP_GET, GET),
)


def run(args, report):
    if not clusters.real_available(args, report):
        return
    source = clusters.Source(clusters.image_size(args))
    plan = ((GET, KILL_GET, 'get', signal.SIGKILL),
            (PUT, KILL_PUT, 'put', signal.SIGKILL),
            (None, STOP_GET, 'get', signal.SIGSTOP))
    try:
        for plain, faulty, kind, sig in plan:
            with clusters.Local(source, 3, 2) as cluster:
                params = cluster.get(kind=kind, mode='eventlet', opts={
                    'sheepdog_store_client': 'native'})
                victim = cluster.fixture.nodes[0].process
                if plain is not None:
                    report.measure(plain, transfer, params)
                if sig == signal.SIGKILL:
                    # Reaped at once: the local cluster driver takes a
                    # zombie for a live sheep and never drops it.
                    reaper = threading.Thread(target=victim.wait)
                    reaper.daemon = True
                    reaper.start()
                try:
                    report.measure(faulty, transfer, dict(
                        params, victim=victim.pid, signal=int(sig)))
                finally:
                    if sig == signal.SIGSTOP:
                        os.kill(victim.pid, signal.SIGCONT)
                left = cluster.fixture.list_vdis()  # through a live node
                if left != [params['name']]:
                    report.failed(faulty, 'VDIs left: %s' % left)
    finally:
        source.close()
    report.note('failover: %d MiB image, fresh 3-node cluster per fault, '
                'one round each; wall-clock figures of a shared 2-core '
                'machine' % (source.size // clusters.MIB))


class _Timed(object):
    """The source file, read as add() reads it, timing the reads."""

    def __init__(self, path, size, fire):
        self.file, self.left, self.fire = open(path, 'rb'), size, fire

    def read(self, length=-1):
        length = self.left if length < 0 else min(length, self.left)
        self.fire(self.left)
        piece = self.file.read(length)
        self.left -= len(piece)
        return piece


class _Failovers(logging.Handler):
    """Counts the client's failover warnings."""

    def __init__(self):
        logging.Handler.__init__(self)
        self.count = 0

    def emit(self, record):
        self.count += str(record.msg).startswith('Failing over')


def _leftovers():
    """(children, sockets, live greenthreads) of this worker."""
    import gc

    from eventlet import greenthread

    from fastpath_integration.harness import host
    gc.collect()
    fds = []
    for fd in os.listdir('/proc/self/fd'):
        try:
            fds.append(os.readlink('/proc/self/fd/%s' % fd))
        except OSError:  # listdir's own fd, closed since
            continue
    return (len(host.children(os.getpid())),
            sum(1 for fd in fds if fd.startswith('socket:')),
            sum(1 for obj in gc.get_objects() if isinstance(
                obj, greenthread.GreenThread) and not obj.dead))


def transfer(params):
    """One get() or add() of the source, faulted if params say so."""
    import hashlib
    import uuid

    from eventlet import tpool

    from fastpath_integration.bench import store_driver
    size, state = params['size'], {'last': None, 'gap': 0.0}
    tpool.execute(len, '')  # its threads and sockets stay for good
    before = _leftovers()
    failovers = _Failovers()
    logging.getLogger('glance_store_fastsheep').addHandler(failovers)
    store, loc = store_driver.store(dict(params, driver='fastsheep'))

    def tick(left):
        now = workers.monotonic()
        if state['last'] is not None:
            state['gap'] = max(state['gap'], now - state['last'])
        state['last'] = now
        if params.get('victim') and left <= size * 2 // 3:
            os.kill(params.pop('victim'), params['signal'])
    digest, started = hashlib.sha256(), workers.monotonic()
    if params['kind'] == 'put':
        image_id = params['vdi_prefix'] + str(uuid.uuid4())
        source = _Timed(params['source'], size, tick)
        try:
            uri = store.add(image_id, source, size)[0]
        finally:
            source.file.close()
        elapsed = workers.monotonic() - started
        # The same store: a new one would check the dead sheep first.
        loc = type(loc)(loc.store_name, type(loc.store_location), loc.conf,
                        uri=uri)
    stream, left = store.get(loc)
    for piece in stream:
        if params['kind'] == 'get':
            tick(left)
        left -= len(piece)
        digest.update(piece)
    if params['kind'] == 'get':
        elapsed = workers.monotonic() - started
    else:
        store.delete(loc)
    if left or digest.hexdigest() != params['sha256']:
        raise AssertionError('%s: bytes differ from the source' % loc)
    if _leftovers() != before:
        raise AssertionError('left behind (children, sockets, greenthreads)'
                             ': %s, before %s' % (_leftovers(), before))
    return {'times_s': [round(elapsed, 3)], 'size': size,
            'mb_s': round(size / elapsed / 1e6, 1),
            'gap_s': round(state['gap'], 2), 'failovers': failovers.count}
