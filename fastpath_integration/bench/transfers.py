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
"""The workers of the transfer rows: the store driver on a cluster.

A download (``get``), an upload (``put``), ``dog vdi read | dd`` (the
``ceiling``), ``dog vdi write`` (``dog_write``), a green ticker's
lateness while the driver works (``stall``, in ``hub_stall``), each by
``work(params)``, and N transfers at once (``concurrent``), for Pike's
in-tree driver or fastsheep, on any cluster of ``clusters``: the
sheepdog, readahead, real and concurrent sections' rows. The store each
row drives, and the check of what it stored, are ``store_driver``'s.
These run on Pike's CPython 2.7 too (the ``_py27`` rows): 2.7/3 common
subset.
"""

import hashlib
import os
import subprocess
import uuid

from fastpath_integration.bench import clusters
from fastpath_integration.bench import hub_stall
from fastpath_integration.bench import store_driver
from fastpath_integration.bench import workers

MIB = clusters.MIB


def _in_mode(params, func):
    """Run func() on a native thread for 'threads', else right here."""
    if params['mode'] != 'threads':
        return func()
    import threading
    box = {}

    def target():
        try:
            box['value'] = func()
        except BaseException as exc:
            box['error'] = exc
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if 'error' in box:
        raise box['error']
    return box['value']


def _transfer(params, once):
    """MB/s of the timed repeats of once(), after one untimed one.

    Also the CPU seconds the timed repeats cost per GiB moved: this
    process and its reaped children (``cpu_s_gib``), and the cluster's
    sheep when ``sheep_pids`` names them (``sheep_cpu_s_gib``). On a
    machine of N cores, a transfer whose two add up to N / (GiB/s) is
    bound by CPU, not by latency. Each is a list of one; the runner
    reports the median over rounds (runner.MEDIANS). A once() that
    returns (seconds, CPU seconds) measured its transfer's CPU itself
    (an upload, whose check afterwards is not the upload's cost): that
    figure is ``cpu_s_gib``.

    A process's first transfer pays its first-use costs (lazy imports,
    fresh memory): 1.5-2x slower than the next. The RSS baseline is taken
    before it, so its peak still counts in the growth. ``drop_caches``
    drops the page cache before each timed repeat (the cold rows).
    """
    baseline = workers.current_rss_mib()
    _in_mode(params, lambda: once(False))
    times = []
    sheep = params.get('sheep_pids') or ()
    cpu = {'cpu_s_gib': 0.0, 'sheep_cpu_s_gib': 0.0}
    for _ in range(params['repeats']):
        if params.get('drop_caches'):  # cold: outside the timed part
            workers.drop_caches()
        before = workers.cpu_seconds(), workers.cpu_seconds(sheep)
        elapsed = _in_mode(params, lambda: once(True))
        if isinstance(elapsed, tuple):
            elapsed, own = elapsed
        else:
            own = workers.cpu_seconds() - before[0]
        times.append(elapsed)
        cpu['cpu_s_gib'] += own
        cpu['sheep_cpu_s_gib'] += workers.cpu_seconds(sheep) - before[1]
    gib = params['repeats'] * params['size'] / float(1 << 30)
    result = {'mb_s': round(params['size'] / workers.median(times) / 1e6, 1),
              'rss_growth_mib': round(max(0.0, workers.vm_hwm_mib() -
                                          baseline), 1),
              'size': params['size'], 'size_mib': params['size'] // MIB,
              'times_s': [round(t, 3) for t in times]}
    for key, seconds in cpu.items():
        if key == 'cpu_s_gib' or sheep:
            result[key] = [round(seconds / gib, 3)]
    return result


def _get_row(params):
    store, loc = store_driver.store(params)
    if params.get('all_readers'):
        store = store_driver.AllReaders(store)

    def once(timed):
        count, elapsed = store_driver.timed(
            lambda: store_driver.consume(store, loc))
        if count != params['size']:
            raise AssertionError('got %d bytes, expected %d'
                                 % (count, params['size']))
        return elapsed
    result = _transfer(params, once)
    # sha256 (1-2 GB/s) is slower than the pipe: one extra untimed pass.
    digest = hashlib.sha256()
    _in_mode(params, lambda: store_driver.consume(store, loc, digest))
    if digest.hexdigest() != params['sha256']:
        raise AssertionError('bytes differ from the source')
    return result


def _put_row(params):
    store, _loc = store_driver.store(params)

    def once(timed):
        image_id, elapsed, cpu = store_driver.put(store, params,
                                                  params['size'])
        store_driver.check_and_drop(params, image_id, params['size'],
                                    timed and params['sha256'])
        return elapsed, cpu
    return _transfer(params, once)


def _ceiling_row(params):
    """``dog vdi read | dd bs=4M of=/dev/null``, by wall time.

    With ``pipe_size`` the pipe between the two is raised to the size the
    driver asks for (``F_SETPIPE_SZ``); without, the shell's 64 KiB pipe.
    One untimed pipeline first, as the get rows make one untimed get.
    """
    import fcntl
    import re
    argv = [params['dog'], 'vdi', 'read', '-a', params['address'], '-p',
            str(params['port']), params['name'], '0', str(params['size'])]

    def once(timed):
        read_fd, write_fd = os.pipe()
        if params.get('pipe_size'):
            fcntl.fcntl(read_fd, getattr(fcntl, 'F_SETPIPE_SZ', 1031),
                        params['pipe_size'])
        started = workers.monotonic()
        dog = subprocess.Popen(argv, stdout=write_fd, stderr=subprocess.PIPE)
        dd = subprocess.Popen(['dd', 'bs=4M', 'of=/dev/null'],
                              stdin=read_fd, stderr=subprocess.PIPE)
        os.close(read_fd)
        os.close(write_fd)
        dog_err, err = dog.communicate()[1], dd.communicate()[1].decode()
        elapsed = workers.monotonic() - started
        copied = re.search(r'^(\d+) bytes', err, re.M)
        if dog.returncode or dd.returncode or not copied or \
                int(copied.group(1)) != params['size']:
            raise AssertionError('pipeline failed (dog exit %d: %s; dd exit '
                                 '%d: %s)' % (dog.returncode, dog_err,
                                              dd.returncode, err))
        return elapsed
    result = _transfer(dict(params, mode=None), once)
    del result['rss_growth_mib']  # the pipeline's memory is not ours
    return result


def _dog_write_row(params):
    """``dog vdi create`` + ``dog vdi write`` from the source file."""
    where = ['-a', params['address'], '-p', str(params['port'])]

    def once(timed):
        name = params['vdi_prefix'] + str(uuid.uuid4())
        cpu = workers.cpu_seconds()
        started = workers.monotonic()
        subprocess.check_call([params['dog'], 'vdi', 'create', name,
                               str(params['size'])] + where)
        with open(params['source'], 'rb') as src:
            subprocess.check_call([params['dog'], 'vdi', 'write', name, '0',
                                   str(params['size'])] + where, stdin=src)
        elapsed = workers.monotonic() - started
        cpu = workers.cpu_seconds() - cpu  # the two dogs, reaped
        store_driver.check_and_drop(params, name, params['size'],
                                    timed and params['sha256'])
        return elapsed, cpu
    result = _transfer(dict(params, mode=None), once)
    del result['rss_growth_mib']  # dog's memory, not this process's
    return result


def work(params):
    """One row of a transfer, by ``kind``."""
    import logging
    logging.basicConfig(level=logging.WARNING)
    return {'get': _get_row, 'put': _put_row, 'stall': hub_stall.stall_row,
            'ceiling': _ceiling_row, 'dog_write': _dog_write_row}[
        params['kind']](params)


def _children():
    """Child processes of this process, from every thread's list."""
    count = 0
    for task in os.listdir('/proc/self/task'):
        try:
            with open('/proc/self/task/%s/children' % task) as children:
                count += len(children.read().split())
        except (IOError, OSError):  # the thread ended meanwhile
            continue
    return count


def concurrent(params):
    """count transfers at once, after one alone (first-use costs)."""
    import logging

    import eventlet
    logging.basicConfig(level=logging.WARNING)
    store, loc = store_driver.store(params)
    size, count = params['size'], params['count']

    def one(_index):
        if params['kind'] == 'get':
            if store_driver.consume(store, loc) != size:
                raise AssertionError('a download was not %d bytes' % size)
            return None
        return store_driver.put(store, params, size)[0]

    baseline = workers.current_rss_mib()
    first = one(0)
    if first:
        store_driver.check_and_drop(params, first, size)
    if params.get('drop_caches'):
        workers.drop_caches()
    peaks = {'peak_children': 0, 'peak_fds': 0}
    done = []

    def sample():
        while not done:
            peaks['peak_children'] = max(peaks['peak_children'], _children())
            peaks['peak_fds'] = max(peaks['peak_fds'],
                                    len(os.listdir('/proc/self/fd')))
            eventlet.sleep(0.01)
    sampler = eventlet.spawn(sample)
    started = workers.monotonic()
    try:
        made = list(eventlet.GreenPool(count).imap(one, range(count)))
    finally:
        elapsed = workers.monotonic() - started
        done.append(True)
        sampler.wait()
    for image_id in filter(None, made):
        store_driver.check_and_drop(params, image_id, size, params['sha256'])
    try:
        budget = store.conf.glance_store.sheepdog_store_readahead_budget
    except AttributeError:  # Pike's driver, or a tree without the option
        budget = None
    return dict(peaks, size=size * count, size_mib=size // MIB, count=count,
                times_s=[round(elapsed, 3)],
                mb_s=round(size * count / elapsed / 1e6, 1),
                rss_growth_mib=round(max(0.0, workers.vm_hwm_mib() -
                                         baseline), 1),
                readahead_budget_mib=budget)
