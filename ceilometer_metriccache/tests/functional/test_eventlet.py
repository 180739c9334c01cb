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
"""The index and its memo under a monkey-patched eventlet, as agents run.

Monkey-patching cannot be undone, so it happens in a child interpreter:
many greenthreads resolve names through one index with a tiny memo,
yielding to the hub between lookups so that their scans, stores and
evictions interleave; every answer must still be the loop's. The memo is
also driven directly, with a yield between a miss and its store, so that
other greenthreads store the same key in between: the test checks that
this happened, not only that nothing broke.
"""

import json
import subprocess
import sys

import testtools

SCRIPT = r'''
import eventlet
eventlet.monkey_patch()
import json
from ceilometer_metriccache import index
from ceilometer_metriccache.tests import base

cfgs = [{'resource_type': 'generic',
         'metrics': ['m%d.*' % d, 'm%d.lit' % d, '*.%d' % d, 'x?%d' % d]}
        for d in range(30)]
definitions = [base.make_definition(c) for c in cfgs]
idx = index.DefinitionIndex(definitions, 16)
names = (['m%d.a' % (i % 40) for i in range(200)] +
         ['q.%d' % (i % 35) for i in range(200)] +
         ['nothing.%d' % i for i in range(200)])
expected = dict((n, base.upstream_metric_loop(definitions, n))
                for n in set(names))
errors = []

def worker(offset):
    for i in range(len(names)):
        name = names[(i * 7 + offset) % len(names)]
        if idx.metric_lookup(name) is not expected[name]:
            errors.append(name)
        eventlet.sleep(0)

pool = eventlet.GreenPool(50)
for n in range(50):
    pool.spawn(worker, n)
pool.waitall()
print(json.dumps({'errors': errors, 'memo': len(idx.metrics.memo),
                  'patched': eventlet.patcher.is_monkey_patched('thread')}))
'''

MEMO_SCRIPT = r'''
import eventlet
eventlet.monkey_patch()
import json
from ceilometer_metriccache import memo

m = memo.BoundedMemo(20)
errors = []
raced = []
switches = [0]


def worker(wid):
    for i in range(400):
        key = 'k%d' % ((i * 7 + wid) % 50)
        got = m.get(key)
        if got is None:
            mine = (key, wid)
            # Let the other greenthreads run between the miss and the
            # store, as a scan that yields would.
            eventlet.sleep(0)
            switches[0] += 1
            got = m.put(key, mine)
            if got is not mine:
                raced.append(key)
        if got[0] != key:
            errors.append((key, got))
        if len(m) > m.maxsize:
            errors.append(('size', len(m)))

pool = eventlet.GreenPool(8)
for wid in range(8):
    pool.spawn(worker, wid)
pool.waitall()
print(json.dumps({'errors': errors, 'raced': len(raced),
                  'switches': switches[0], 'size': len(m),
                  'patched': eventlet.patcher.is_monkey_patched('thread')}))
'''


def _run(script):
    """The script's last stdout line, decoded from JSON.

    stderr is read apart: a warning the interpreter prints at exit (seen
    on 3.6) must not follow the JSON line.
    """
    proc = subprocess.Popen([sys.executable, '-c', script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    if proc.returncode:
        raise AssertionError('script failed (%d):\n%s'
                             % (proc.returncode, err.decode('utf-8',
                                                            'replace')))
    return json.loads(out.decode('utf-8').strip().splitlines()[-1])


class TestUnderEventlet(testtools.TestCase):

    def test_green_threads_share_the_memo(self):
        result = _run(MEMO_SCRIPT)
        self.assertTrue(result['patched'])
        self.assertEqual([], result['errors'])
        self.assertEqual(20, result['size'])
        # Greenthreads really interleaved between a miss and its store:
        # some found the key stored by another and got that value.
        self.assertGreater(result['switches'], 0)
        self.assertGreater(result['raced'], 0)

    def test_green_threads_agree_with_the_loop(self):
        result = _run(SCRIPT)
        self.assertTrue(result['patched'])
        self.assertEqual([], result['errors'])
        self.assertLessEqual(result['memo'], 16)
