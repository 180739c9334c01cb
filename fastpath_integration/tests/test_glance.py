"""Current glance-api with fastsheep as its default backend.

Images go through the real API into the run's real sheepdog cluster (3
nodes, 2 copies) and back; the cluster's own ``dog`` CLI is the
independent witness of what is stored. glance 33 runs under uWSGI
(native threads), glance 32 on its standalone eventlet server.

The fault tests upload to a second backend of the same glance-api, the
sheepdog emulator: a failure at a chosen byte of one VDI's transfer is
something a real cluster cannot give on demand (the node-kill faults of
a real cluster are the driver's functional tests').
"""

import concurrent.futures
import fcntl
import hashlib
import json
import os
import subprocess
import uuid

import requests

from fastpath_integration.tests import base

HEADERS = {
    'X-Identity-Status': 'Confirmed',
    'X-Roles': 'admin,member,reader',
    'X-Project-Id': 'fastpath-project',
    'X-User-Id': 'fastpath-user',
}
MIB = 1024 * 1024
# Over several driver reads and more than one default chunk boundary
# is not needed here (the functional tests sweep sizes); an odd size
# catches padding and off-by-one errors on the way through glance.
SIZE = 9 * MIB + 12345
TIMEOUT = 120


def payload(size, seed):
    """Deterministic, incompressible-looking bytes."""
    block = hashlib.sha512(seed.encode()).digest() * 2048
    out = bytearray()
    while len(out) < size:
        out += block
        block = hashlib.sha512(block).digest() * 2048
    return bytes(out[:size])


class GlanceTestBase(base.IntegrationTestCase):
    """The API and ``dog`` helpers, against one glance-api and sheepdog."""

    glance_key = 'glance'
    # Extra headers of an upload: which backend stores the image.
    upload_headers = {}

    def setUp(self):
        super(GlanceTestBase, self).setUp()
        self.glance = self.env[self.glance_key]
        self.url = self.glance['url']
        self.sheepdog = self.store_sheepdog()
        self.session = requests.Session()
        self.session.headers.update(HEADERS)
        self.addCleanup(self.session.close)

    def store_sheepdog(self):
        raise NotImplementedError()

    # API helpers -------------------------------------------------------

    def create_image(self):
        resp = self.session.post(
            self.url + '/v2/images', json={
                'name': 'fastpath-%s' % uuid.uuid4().hex[:8],
                'disk_format': 'raw', 'container_format': 'bare'},
            timeout=TIMEOUT)
        self.assertEqual(201, resp.status_code, resp.text)
        image = resp.json()
        self.addCleanup(self._delete_quietly, image['id'])
        return image

    def _delete_quietly(self, image_id):
        self.session.delete(self.url + '/v2/images/' + image_id,
                            timeout=TIMEOUT)

    def upload(self, image_id, data):
        return self.session.put(
            self.url + '/v2/images/%s/file' % image_id, data=data,
            headers=dict(self.upload_headers,
                         **{'Content-Type': 'application/octet-stream'}),
            timeout=TIMEOUT)

    def show(self, image_id):
        resp = self.session.get(self.url + '/v2/images/' + image_id,
                                timeout=TIMEOUT)
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()

    def download(self, image_id, headers=None):
        resp = self.session.get(self.url + '/v2/images/%s/file' % image_id,
                                headers=headers or {}, timeout=TIMEOUT)
        return resp

    # dog helpers -------------------------------------------------------

    def dog(self, *args, **kwargs):
        cmd = [self.sheepdog['dog']] + list(args)
        return subprocess.run(cmd, capture_output=True, timeout=TIMEOUT,
                              **kwargs)

    @staticmethod
    def vdi_of(image):
        """The VDI an image's location names (the upload's own name)."""
        return image['direct_url'].rsplit(':', 1)[1]

    def vdis_of_image(self, image_id):
        """The VDIs named for image_id: itself, or with an upload suffix."""
        out = self.dog('vdi', 'list', '-r',
                       '-a', self.sheepdog['address'],
                       '-p', self.sheepdog['port'])
        self.assertEqual(0, out.returncode, out.stderr)
        names = [line.split(' ')[1] for line in
                 out.stdout.decode().splitlines() if ' ' in line]
        return [name for name in names
                if name == image_id or name.startswith(image_id + '.')]

    def vdi_exists(self, name):
        out = self.dog('vdi', 'list', '-r',
                       '-a', self.sheepdog['address'],
                       '-p', self.sheepdog['port'], name)
        self.assertEqual(0, out.returncode, out.stderr)
        return any(line.split(' ')[1:2] == [name]
                   for line in out.stdout.decode().splitlines())

    def uploaded_image(self, data):
        image = self.create_image()
        resp = self.upload(image['id'], data)
        self.assertEqual(204, resp.status_code, resp.text)
        return self.show(image['id'])


class GlanceTestCase(GlanceTestBase):
    """glance 33 under uWSGI, on the real cluster."""

    def store_sheepdog(self):
        sheepdog = self.real_cluster()
        self.assertEqual('fastsheep', self.glance['backend'],
                         'glance is not on the fastsheep backend')
        return sheepdog

    # Tests -------------------------------------------------------------

    def test_upload_known_size_download_delete(self):
        data = payload(SIZE, self.id())
        image = self.uploaded_image(data)
        self.assertEqual('active', image['status'])
        self.assertEqual(SIZE, image['size'])
        self.assertEqual(self.glance['backend'], image['stores'])
        self.assertTrue(image['direct_url'].startswith('sheepdog://'),
                        image['direct_url'])
        self.assertEqual(hashlib.sha512(data).hexdigest(),
                         image['os_hash_value'])
        # Named for the upload: the image id and a suffix of its own.
        vdi = self.vdi_of(image)
        self.assertTrue(vdi.startswith(image['id'] + '.'), vdi)
        self.assertTrue(self.vdi_exists(vdi))

        resp = self.download(image['id'])
        self.assertEqual(200, resp.status_code)
        self.assertEqual(hashlib.sha256(data).hexdigest(),
                         hashlib.sha256(resp.content).hexdigest())

        resp = self.session.delete(self.url + '/v2/images/' + image['id'],
                                   timeout=TIMEOUT)
        self.assertEqual(204, resp.status_code, resp.text)
        self.assertEqual(404, self.session.get(
            self.url + '/v2/images/' + image['id'],
            timeout=TIMEOUT).status_code)
        self.assertFalse(self.vdi_exists(vdi))

    def test_upload_chunked_unknown_size(self):
        data = payload(SIZE, self.id())

        def chunks():
            # A generator makes requests send Transfer-Encoding: chunked,
            # so glance hands the store an image of unknown size (0).
            for start in range(0, len(data), 1000003):
                yield data[start:start + 1000003]

        image = self.create_image()
        resp = self.upload(image['id'], chunks())
        self.assertEqual(204, resp.status_code, resp.text)
        image = self.show(image['id'])
        self.assertEqual('active', image['status'])
        self.assertEqual(SIZE, image['size'])
        resp = self.download(image['id'])
        self.assertEqual(hashlib.sha256(data).hexdigest(),
                         hashlib.sha256(resp.content).hexdigest())

    def test_range_download(self):
        data = payload(SIZE, self.id())
        image = self.uploaded_image(data)
        for first, last in ((0, 0), (1, 4 * MIB), (5 * MIB - 7, SIZE - 1)):
            resp = self.download(
                image['id'], {'Range': 'bytes=%d-%d' % (first, last)})
            self.assertEqual(206, resp.status_code, resp.text[:200])
            self.assertEqual('bytes %d-%d/%d' % (first, last, SIZE),
                             resp.headers['Content-Range'])
            self.assertEqual(data[first:last + 1], resp.content)

    def test_parallel_downloads(self):
        data = payload(SIZE, self.id())
        image = self.uploaded_image(data)
        expected = hashlib.sha256(data).hexdigest()

        def fetch(_):
            digest = hashlib.sha256()
            with requests.get(self.url + '/v2/images/%s/file' % image['id'],
                              headers=HEADERS, stream=True,
                              timeout=TIMEOUT) as resp:
                resp.raise_for_status()
                for block in resp.iter_content(256 * 1024):
                    digest.update(block)
            return digest.hexdigest()

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            digests = list(pool.map(fetch, range(4)))
        self.assertEqual([expected] * 4, digests)

    def test_pike_location_is_served(self):
        """A VDI and location written the Pike driver's way are served.

        Pike names the VDI by image id and writes with explicit offset
        and length; its location string must resolve unchanged.
        """
        data = payload(3 * MIB + 5, self.id())
        image = self.create_image()
        vdi = image['id']
        address = self.sheepdog['address']
        port = self.sheepdog['port']
        out = self.dog('vdi', 'create', '-a', address, '-p', port, vdi,
                       str(len(data)))
        self.assertEqual(0, out.returncode, out.stderr)
        out = self.dog('vdi', 'write', '-a', address, '-p', port, vdi,
                       '0', str(len(data)), input=data)
        self.assertEqual(0, out.returncode, out.stderr)
        location = 'sheepdog://%s:%s:%s' % (address, port, vdi)
        resp = self.session.patch(
            self.url + '/v2/images/' + image['id'],
            data=json.dumps([{
                'op': 'add', 'path': '/locations/-',
                'value': {'url': location, 'metadata': {}}}]),
            headers={'Content-Type':
                     'application/openstack-images-v2.1-json-patch'},
            timeout=TIMEOUT)
        self.assertEqual(200, resp.status_code, resp.text)
        image = self.show(image['id'])
        self.assertEqual('active', image['status'])
        self.assertEqual(len(data), image['size'])
        resp = self.download(image['id'])
        self.assertEqual(200, resp.status_code)
        self.assertEqual(hashlib.sha256(data).hexdigest(),
                         hashlib.sha256(resp.content).hexdigest())


class EventletGlanceTestCase(GlanceTestCase):
    """The same tests on glance 32's standalone eventlet glance-api.

    There the store runs under eventlet's monkey-patching.
    """

    glance_key = 'glance_eventlet'


class GlanceFaultTestCase(GlanceTestBase):
    """glance 33 under uWSGI, images on its emulator backend.

    A fault injected at a chosen byte of one VDI's ``dog`` transfer.
    """

    def store_sheepdog(self):
        backend = self.glance.get('fault_backend')
        self.assertIsNotNone(backend, 'glance has no emulator backend')
        self.upload_headers = {'X-Image-Meta-Store': backend}
        return self.env['emulator']

    def set_knobs(self, knobs):
        """Faults for one VDI (``fault_vdi``), one test at a time.

        The knob file is per cluster and tests run in parallel workers.
        """
        lock = open(os.path.join(self.env['rundir'], 'knobs.lock'), 'w')
        self.addCleanup(lock.close)
        fcntl.flock(lock, fcntl.LOCK_EX)
        self.addCleanup(fcntl.flock, lock, fcntl.LOCK_UN)
        path = self.sheepdog['knobs_file']
        with open(path, 'w') as f:
            json.dump(knobs, f)
        self.addCleanup(self._clear_knobs, path)

    @staticmethod
    def _clear_knobs(path):
        with open(path, 'w') as f:
            json.dump({}, f)

    # Tests -------------------------------------------------------------

    def test_failure_mid_download_is_a_failed_transfer(self):
        data = payload(SIZE, self.id())
        image = self.uploaded_image(data)
        self.assertEqual(self.glance['fault_backend'], image['stores'])
        self.set_knobs({'fail_after_bytes': 2 * MIB,
                        'fault_vdi': image['id']})
        received = 0
        failed = False
        try:
            with requests.get(self.url + '/v2/images/%s/file' % image['id'],
                              headers=HEADERS, stream=True,
                              timeout=TIMEOUT) as resp:
                if resp.status_code != 200:
                    failed = True
                else:
                    for block in resp.iter_content(256 * 1024):
                        received += len(block)
        except (requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ConnectionError):
            failed = True
        # Not a hang (the timeout above would raise ReadTimeout and fail
        # the test), and not a "successful" short or complete body.
        self.assertTrue(failed, 'download reported success after %d of %d '
                        'bytes' % (received, SIZE))
        self.assertLess(received, SIZE)

    def test_failed_upload_leaves_nothing(self):
        data = payload(SIZE, self.id())
        image = self.create_image()
        # Fails after the first 4 MiB object is stored: the driver must
        # delete the partial VDI.
        self.set_knobs({'fail_after_bytes': 6 * MIB,
                        'fault_vdi': image['id']})
        resp = self.upload(image['id'], data)
        self.assertGreaterEqual(resp.status_code, 400, resp.text)
        self.assertNotEqual('active', self.show(image['id'])['status'])
        self.assertEqual([], self.vdis_of_image(image['id']))


class EventletGlanceFaultTestCase(GlanceFaultTestCase):
    """The fault tests on glance 32's standalone eventlet glance-api."""

    glance_key = 'glance_eventlet'
