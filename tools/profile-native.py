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
"""Where the native client's CPU goes, on a real local cluster.

A developer's tool, not the bench: it starts a sheepdog cluster with the
integration harness, then in an eventlet-patched child (as glance-api
runs) uploads a file of random bytes through the store's native client
with no hash (``image_data.Digest([], None)``), or downloads it, and prints
the child's CPU seconds per GiB (os.times, user + system) and, with
``--profile``, cProfile's top entries by internal time. Run it from the
tree with the real env's Python::

    SHEEPDOG_PREFIX=$(bash tools/build-sheepdog.sh) \\
        /work/main/.tox/real/bin/python tools/profile-native.py \\
        --nodes 3 --copies 2 --size-mib 1024 --repeats 3 [--profile]

CPU time, unlike wall clock, hardly depends on what else the machine
runs; cProfile's own overhead inflates the Python-level entries, so the
per-GiB figure is taken from the unprofiled repeats.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = float(1 << 30)


def child(params):
    import eventlet
    eventlet.monkey_patch()
    import cProfile
    import pstats
    import uuid

    from fastpath_integration.bench import store_driver
    # Built as the bench's workers build it; reader is client's old name.
    store, loc = store_driver.store({
        'address': params['address'], 'port': params['port'],
        'driver': 'fastsheep', 'dog': params['dog'],
        'name': params['source_vdi'],
        'opts': {'sheepdog_store_reader': 'native'}})
    size = params['size']

    def put(name):
        from glance_store_fastsheep import image_data
        with open(params['source'], 'rb') as source:
            written = store.client.write(name, image_data.Source(source),
                                         image_data.Digest([], None), size)
        assert written == size, written

    def get():
        iterable, got = store.get(loc)
        count = 0
        for piece in iterable:
            count += len(piece)
        assert count == size == got, (count, got)

    def timed(func, *args):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        before = os.times()
        func(*args)
        after = os.times()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        return (after[0] - before[0], after[1] - before[1],
                after[4] - before[4], faults)

    results = {'put': [], 'get': []}
    names = []
    whats = params['what']
    # First use (imports, fresh memory) outside the figures.
    if 'put' in whats:
        names.append('prof-' + str(uuid.uuid4()))
        put(names[-1])
    if 'get' in whats:
        get()
    for _ in range(params['repeats']):
        if 'put' in whats:
            names.append('prof-' + str(uuid.uuid4()))
            results['put'].append(timed(put, names[-1]))
        if 'get' in whats:
            results['get'].append(timed(get))
    if params['profile']:
        for what in whats:
            profile = cProfile.Profile()
            if what == 'put':
                names.append('prof-' + str(uuid.uuid4()))
                profile.runcall(put, names[-1])
            else:
                profile.runcall(get)
            sys.stderr.write('\n==== %s, profiled ====\n' % what)
            pstats.Stats(profile, stream=sys.stderr).sort_stats(
                'tottime').print_stats(params['top'])
    for name in names:
        store.client.delete(params['address'], params['port'], name)
    out = {}
    for what, runs in results.items():
        if runs:
            out[what] = {
                'user_s_per_gib': [round(r[0] * GIB / size, 3) for r in runs],
                'sys_s_per_gib': [round(r[1] * GIB / size, 3) for r in runs],
                'cpu_s_per_gib': [round((r[0] + r[1]) * GIB / size, 3)
                                  for r in runs],
                # Minor page faults: fresh memory touched, load-proof.
                'faults_per_gib': [int(r[3] * GIB / size) for r in runs],
                # Wall clock: a side note on a shared machine.
                'mb_s': [round(size / r[2] / 1e6) for r in runs]}
    sys.stdout.write(json.dumps(out) + '\n')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--nodes', type=int, default=1)
    parser.add_argument('--copies', type=int, default=1)
    parser.add_argument('--size-mib', type=int, default=1024)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--what', default='put,get')
    parser.add_argument('--profile', action='store_true')
    parser.add_argument('--top', type=int, default=25)
    parser.add_argument('--child', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(json.loads(args.child))
    sys.path.insert(0, HERE)
    from fastpath_integration.harness import sheepdog
    size = args.size_mib << 20
    with tempfile.NamedTemporaryFile(prefix='profile-native-') as source:
        for _ in range(args.size_mib):
            source.write(os.urandom(1 << 20))
        source.flush()
        with sheepdog.SheepdogCluster(args.nodes, args.copies) as cluster:
            where = ['-a', cluster.address, '-p', str(cluster.port)]
            if 'get' in args.what:  # the image read, written by dog
                subprocess.check_call([cluster.dog_path, 'vdi', 'create',
                                       'prof-source', str(size)] + where)
                with open(source.name, 'rb') as data:
                    subprocess.check_call([cluster.dog_path, 'vdi', 'write',
                                           'prof-source'] + where,
                                          stdin=data)
            params = {'address': cluster.address, 'port': cluster.port,
                      'dog': cluster.dog_path, 'source_vdi': 'prof-source',
                      'size': size, 'source': source.name,
                      'repeats': args.repeats, 'profile': args.profile,
                      'top': args.top, 'what': args.what.split(',')}
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [HERE] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
            subprocess.check_call([sys.executable, __file__, '--child',
                                   json.dumps(params)], env=env)


if __name__ == '__main__':
    main()
