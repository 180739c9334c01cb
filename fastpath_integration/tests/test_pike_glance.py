"""Pike's glance-api 15.0.2 on CPython 2.7, three ways, one real cluster.

Its standalone eventlet server over the run's real sheepdog cluster (3
nodes, 2 copies), with the fastsheep plugin enabled the way README tells
Pike operators; with glance_store 0.22.0's in-tree driver, unmodified
(what it writes is what Pike clouds already hold, and fastsheep must
serve it); and with that driver patched by ``patches/glance_store``.
"""

import hashlib
import json
import re
import subprocess
import uuid

import requests

from fastpath_integration.tests import base
from fastpath_integration.tests import test_glance

# test_glance's identity headers, plus the tenant header Pike reads.
HEADERS = dict(test_glance.HEADERS, **{'X-Tenant-Id': 'fastpath-project'})
MIB = test_glance.MIB
SIZE = test_glance.SIZE
TIMEOUT = test_glance.TIMEOUT


class PikeGlanceClient(object):
    """The few v2 calls the tests make against one glance-api."""

    def __init__(self, test, url):
        self.test = test
        self.url = url
        self.session = requests.Session()
        self.session.headers.update(HEADERS)
        test.addCleanup(self.session.close)

    def create(self):
        resp = self.session.post(
            self.url + '/v2/images', json={
                'name': 'fastpath-pike-%s' % uuid.uuid4().hex[:8],
                'disk_format': 'raw', 'container_format': 'bare'},
            timeout=TIMEOUT)
        self.test.assertEqual(201, resp.status_code, resp.text)
        image = resp.json()
        self.test.addCleanup(self.session.delete,
                             self.url + '/v2/images/' + image['id'],
                             timeout=TIMEOUT)
        return image

    def upload(self, image_id, data):
        resp = self.session.put(
            self.url + '/v2/images/%s/file' % image_id, data=data,
            headers={'Content-Type': 'application/octet-stream'},
            timeout=TIMEOUT)
        self.test.assertEqual(204, resp.status_code, resp.text)

    def show(self, image_id):
        resp = self.session.get(self.url + '/v2/images/' + image_id,
                                timeout=TIMEOUT)
        self.test.assertEqual(200, resp.status_code, resp.text)
        return resp.json()

    def download(self, image_id):
        resp = self.session.get(self.url + '/v2/images/%s/file' % image_id,
                                timeout=TIMEOUT)
        self.test.assertEqual(200, resp.status_code, resp.text[:200])
        return resp.content

    def delete(self, image_id):
        return self.session.delete(self.url + '/v2/images/' + image_id,
                                   timeout=TIMEOUT)


class PikeGlanceTestCase(base.IntegrationTestCase):

    def setUp(self):
        super(PikeGlanceTestCase, self).setUp()
        self.sheepdog = self.real_cluster()
        self.fast = PikeGlanceClient(self, self.env['glance_pike']['url'])
        self.intree = PikeGlanceClient(
            self, self.env['glance_pike_intree']['url'])
        self.patched = PikeGlanceClient(
            self, self.env['glance_pike_patched']['url'])

    def vdi_exists(self, name):
        out = subprocess.run(
            [self.sheepdog['dog'], 'vdi', 'list', '-r',
             '-a', self.sheepdog['address'], '-p', self.sheepdog['port'],
             name], capture_output=True, timeout=TIMEOUT)
        self.assertEqual(0, out.returncode, out.stderr)
        return any(line.split(' ')[1:2] == [name]
                   for line in out.stdout.decode().splitlines())

    def add_location(self, client, url):
        """A new image of ``client`` whose location is ``url``."""
        image = client.create()
        resp = client.session.patch(
            client.url + '/v2/images/' + image['id'],
            data=json.dumps([{
                'op': 'add', 'path': '/locations/-',
                'value': {'url': url, 'metadata': {}}}]),
            headers={'Content-Type':
                     'application/openstack-images-v2.1-json-patch'},
            timeout=TIMEOUT)
        self.assertEqual(200, resp.status_code, resp.text)
        return client.show(image['id'])

    def test_stores_as_configured(self):
        """Each glance-api runs the driver its configuration names."""
        with open(self.env['glance_pike']['conf']) as f:
            conf = f.read()
        self.assertIn('stores = file,http,fastsheep', conf)
        self.assertIn('default_store = sheepdog', conf)
        for key in ('glance_pike_intree', 'glance_pike_patched'):
            with open(self.env[key]['conf']) as f:
                self.assertIn('stores = file,http,sheepdog', f.read())
        # The patched driver is a copy with the series pushed, not the
        # venv's module.
        self.assertNotEqual(self.env['glance_pike_intree']['driver_file'],
                            self.env['glance_pike_patched']['driver_file'])

    def _upload_download_delete(self, client):
        data = test_glance.payload(SIZE, self.id())
        image = client.create()
        client.upload(image['id'], data)
        image = client.show(image['id'])
        self.assertEqual('active', image['status'])
        self.assertEqual(SIZE, image['size'])
        self.assertEqual(hashlib.md5(data).hexdigest(), image['checksum'])
        prefix = 'sheepdog://%s:%s:%s' % (
            self.sheepdog['address'], self.sheepdog['port'], image['id'])
        # Pike's drivers name the VDI by the image id; fastsheep names
        # each upload's own: the image id, '.' and 16 hex digits.
        if client is self.fast:
            self.assertRegex(image['direct_url'],
                             '^%s\\.[0-9a-f]{16}$' % re.escape(prefix))
        else:
            self.assertEqual(prefix, image['direct_url'])
        vdi = image['direct_url'].rsplit(':', 1)[1]
        self.assertTrue(self.vdi_exists(vdi))

        body = client.download(image['id'])
        self.assertEqual(len(data), len(body))
        self.assertEqual(hashlib.sha256(data).hexdigest(),
                         hashlib.sha256(body).hexdigest())

        resp = client.delete(image['id'])
        self.assertEqual(204, resp.status_code, resp.text)
        self.assertEqual(404, client.session.get(
            client.url + '/v2/images/' + image['id'],
            timeout=TIMEOUT).status_code)
        self.assertFalse(self.vdi_exists(vdi))

    def test_upload_download_delete(self):
        self._upload_download_delete(self.fast)

    def test_upload_download_delete_intree(self):
        self._upload_download_delete(self.intree)

    def test_upload_download_delete_patched(self):
        self._upload_download_delete(self.patched)

    def test_intree_written_image_read_by_fastsheep(self):
        """The in-tree Pike driver writes; the plugin serves the location.

        The location is the one the in-tree glance-api recorded, added
        unchanged to an image of the fastsheep glance-api.
        """
        data = test_glance.payload(3 * MIB + 5, self.id())
        written = self.intree.create()
        self.intree.upload(written['id'], data)
        written = self.intree.show(written['id'])
        self.assertEqual('active', written['status'])
        self.assertTrue(self.vdi_exists(written['id']))

        image = self.add_location(self.fast, written['direct_url'])
        self.assertEqual('active', image['status'])
        self.assertEqual(len(data), image['size'])
        body = self.fast.download(image['id'])
        self.assertEqual(hashlib.sha256(data).hexdigest(),
                         hashlib.sha256(body).hexdigest())
        # And the in-tree driver still reads what it wrote.
        self.assertEqual(hashlib.sha256(data).hexdigest(), hashlib.sha256(
            self.intree.download(written['id'])).hexdigest())

    def test_fastsheep_written_image_read_by_intree_and_patched(self):
        """The reverse: a Pike cloud can go back from the plugin.

        What fastsheep wrote, under the location it recorded, is served
        byte-exact by the in-tree driver and by the patched one.
        """
        data = test_glance.payload(3 * MIB + 5, self.id())
        written = self.fast.create()
        self.fast.upload(written['id'], data)
        written = self.fast.show(written['id'])
        self.assertEqual('active', written['status'])
        for client in (self.intree, self.patched):
            image = self.add_location(client, written['direct_url'])
            self.assertEqual('active', image['status'])
            self.assertEqual(len(data), image['size'])
            self.assertEqual(hashlib.sha256(data).hexdigest(),
                             hashlib.sha256(client.download(
                                 image['id'])).hexdigest())
