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
"""One burst of samples through a notification agent, until gnocchi has it.

The services section's agent rows compare the CPU each agent spends on
the same work: ``burst`` sends ``sample_count`` samples over the message bus
(exact, wildcard-matched and unmatched names, as the seeds' burst),
then a sentinel, waits until gnocchi holds the sentinel, and returns
the agent's CPU with what it left in gnocchi, so that a row whose
agent dropped a batch (and saved its gnocchi round trips) shows it.
"""

import os
import time
import uuid

from fastpath_integration.bench import glance_api


def burst(sample_count, rundir, agent_name, pid, transport_url, topic,
          gnocchi_url):
    """The row of one burst through the agent ``pid``, once gnocchi has it.

    ``rundir`` holds gnocchi-api's log, whose write count says whether
    two agents did the same gnocchi work; ``agent_name`` names the row
    in the error of a burst that never arrives.
    """
    from fastpath_integration import bus
    from fastpath_integration.harness import processes
    import requests
    notifier = bus.notifier(transport_url, topic, 'ceilometer')
    per = 20
    notifications = max(1, sample_count // per)
    run = uuid.uuid4().hex[:8]
    resources = ['bench-%s-%d' % (run, i) for i in range(20)]
    names = (['image.size'] +
             ['fastpath.ignored.%d' % i for i in range(20)] +
             ['fastpath.unmatched.%d' % i for i in range(20)] +
             ['fastpath.exact.metric'])
    metadata = {'name': 'x', 'container_format': 'bare',
                'disk_format': 'raw'}

    def resource_of(name, i):
        # image.size makes an ``image`` resource, the exact metric a
        # ``generic`` one: one id for both would have every agent
        # PATCH an image that gnocchi holds as generic (404s).
        rid = resources[i % len(resources)]
        return rid + '-img' if name == 'image.size' else rid
    writes = _gnocchi_writes(rundir)
    try:
        before = processes.cpu_seconds(pid)
        start = time.monotonic()
        for n in range(notifications):
            samples = []
            for i in range(per):
                name = names[(n * per + i) % len(names)]
                samples.append(bus.sample(name, resource_of(name, n + i),
                                          float(n), metadata=metadata))
            bus.send_samples(notifier, samples)
        sentinel = 'bench-%s-sentinel' % run
        bus.send_samples(notifier, [
            bus.sample('fastpath.exact.metric', sentinel, 1.0)])
    finally:
        notifier.transport.cleanup()
    url = '%s/v1/resource/generic/%s' % (gnocchi_url, sentinel)
    deadline = time.monotonic() + 1800
    while not _exists(requests, url):
        if time.monotonic() > deadline:
            raise RuntimeError('%s: burst not delivered in 30 min'
                               % agent_name)
        time.sleep(1)
    now = processes.cpu_seconds_once_idle(pid)
    wall = time.monotonic() - start
    writes = _gnocchi_writes(rundir) - writes
    delivered = _delivered(requests, gnocchi_url, run)
    return dict(cpu_s=round(now - before, 2),
                wall_s=round(wall, 1),
                samples=notifications * per,
                resources=delivered[0], metrics=delivered[1],
                gnocchi_writes=writes,
                peak_rss_mib=glance_api.tree_peak_rss_mib(pid))


def _gnocchi_writes(rundir):
    """POST/PATCH requests gnocchi-api has logged so far.

    Only the agent under test writes during a burst (the bench's
    polls are GETs): equal counts mean the agents did the same
    gnocchi work, whatever their CPU.
    """
    try:
        with open(os.path.join(rundir, 'gnocchi-api.log')) as log:
            return sum(1 for line in log
                       if '] POST /' in line or '] PATCH /' in line)
    except (IOError, OSError):
        return 0


def _delivered(requests, gnocchi_url, run):
    """(resources, metrics) the burst left in gnocchi.

    Rows compare CPU for the same work only if every agent delivered
    the same: a batch an agent drops costs it no gnocchi round trip.
    """
    resp = requests.post(
        '%s/v1/search/resource/generic' % gnocchi_url,
        json={'like': {'original_resource_id': 'bench-%s-%%' % run}},
        params={'limit': 1000}, auth=('admin', ''), timeout=60)
    resp.raise_for_status()
    found = resp.json()
    return len(found), sum(len(r.get('metrics') or ()) for r in found)


def _exists(requests, url):
    """gnocchi has ``url``; a busy gnocchi that times out is a no."""
    try:
        return requests.get(url, auth=('admin', ''),
                            timeout=30).status_code == 200
    except requests.exceptions.RequestException:
        return False
