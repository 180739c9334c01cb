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
"""Pike glance-api over HTTP, for the rows that go through it.

curl (as an operator would fetch an image), the image calls the rows
need, and the CPU and memory of glance-api's processes: the services and
real sections' API rows.
"""

import hashlib
import json
import subprocess
import time
import uuid

from fastpath_integration.bench import workers

MIB = 1 << 20


def curl_command():
    """curl, failing on HTTP errors, with the harness's admin headers."""
    from fastpath_integration.harness import glance
    cmd = ['curl', '-sS', '-f', '-H', 'Expect:']
    for key, value in glance.ADMIN_HEADERS.items():
        cmd += ['-H', '%s: %s' % (key, value)]
    return cmd


def tree_peak_rss_mib(pid):
    """The largest peak RSS among a process and its descendants."""
    from fastpath_integration.harness import host
    peak = 0.0
    for child in host.process_tree(pid):
        try:
            peak = max(peak, workers.vm_hwm_mib(child))
        except (IOError, OSError):  # it ended meanwhile
            continue
    return round(peak, 1)


def curl(api, size, argv):
    """One curl against glance-api: (its output, the row's metrics).

    MB/s over size bytes, its time, glance-api's CPU seconds and peak
    RSS.
    """
    from fastpath_integration.harness import processes
    cpu = processes.cpu_seconds(api.pid)
    start = time.monotonic()
    out = subprocess.run(curl_command() + argv, check=True,
                         capture_output=True, text=True).stdout
    wall = time.monotonic() - start
    return out, {'mb_s': round(size / wall / 1e6, 1), 'size': size,
                 'times_s': [round(wall, 3)],
                 'cpu_s': round(processes.cpu_seconds(api.pid) - cpu, 2),
                 'peak_rss_mib': tree_peak_rss_mib(api.pid)}


def create_image(url):
    from fastpath_integration.harness import glance
    import requests
    resp = requests.post(url + '/v2/images', json={
        'name': 'bench-%s' % uuid.uuid4().hex[:8], 'disk_format': 'raw',
        'container_format': 'bare'}, headers=glance.ADMIN_HEADERS,
        timeout=60)
    resp.raise_for_status()
    return resp.json()['id']


def image_at(api, cluster, vdi):
    """A new image of glance-api whose location is a VDI of cluster.

    A row that streams a VDI the bench wrote with dog: the in-tree upload
    at ~10 MB/s would take minutes for 1 GiB, and the bytes (and the
    location format) are the same either way.
    """
    from fastpath_integration.harness import glance
    import requests
    image = create_image(api.url)
    resp = requests.patch(
        api.url + '/v2/images/' + image,
        data=json.dumps([{'op': 'add', 'path': '/locations/-', 'value': {
            'url': 'sheepdog://%s:%s:%s' % (cluster.address, cluster.port,
                                            vdi),
            'metadata': {}}}]),
        headers=dict(glance.ADMIN_HEADERS, **{
            'Content-Type': 'application/openstack-images-v2.1-json-patch'}),
        timeout=120)
    resp.raise_for_status()
    return image


def check_sha(url, sha256):
    """Fail unless the image at url streams bytes of that sha256."""
    from fastpath_integration.harness import glance
    import requests
    digest = hashlib.sha256()
    with requests.get(url, headers=glance.ADMIN_HEADERS, stream=True,
                      timeout=600) as resp:
        resp.raise_for_status()
        for block in resp.iter_content(MIB):
            digest.update(block)
    if digest.hexdigest() != sha256:
        raise RuntimeError('%s: sha256 differs from the source' % url)
