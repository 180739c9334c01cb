"""The devstack plugin's fastsheep-cluster under a real glance-api.

The harness built and started the cluster through devstack/lib/sheepdog
(``install_fastpath_sheepdog``, ``start_fastpath_cluster``: 3 sheep, 2
copies, as the plugin's defaults) and pointed a glance-api's default
store at it with ``fastpath_use_cluster`` and ``configure_fastpath_glance``,
as a stack.sh run with ``enable_service fastsheep-cluster`` does. One
image goes through glance's API and back; ``dog`` on the cluster is the
witness of what the plugin started and of where the image went. Stopping
the cluster (``stop_fastpath_cluster``) is the harness's clean-up, which
fails the run if a sheep outlives it.
"""

import hashlib
import json
import os
import re

from fastpath_integration.tests import test_glance


class DevstackClusterGlanceTestCase(test_glance.GlanceTestBase):
    """glance 33 (uWSGI) whose default store is the plugin's cluster."""

    glance_key = 'glance_devstack'

    def setUp(self):
        # The harness starts this glance-api only where the run has a real
        # sheepdog: without one, skip (or fail, in CI) as every
        # real-cluster test does, before the base class looks it up.
        path = os.environ.get('FASTPATH_INTEGRATION_ENV')
        if path:
            with open(path) as f:
                self.env = json.load(f)
            self.real_cluster()
        super(DevstackClusterGlanceTestCase, self).setUp()

    def store_sheepdog(self):
        return self.env['devstack_sheepdog']

    def test_cluster_nodes_and_copies(self):
        sheepdog = self.sheepdog
        out = self.dog('node', 'list', '-r', '-a', sheepdog['address'],
                       '-p', sheepdog['port'])
        self.assertEqual(0, out.returncode, out.stderr)
        ports = sorted(line.split()[1].rsplit(':', 1)[1]
                       for line in out.stdout.decode().splitlines())
        self.assertEqual(sheepdog['nodes'], len(ports))
        self.assertIn(sheepdog['port'], ports)
        out = self.dog('cluster', 'info', '-a', sheepdog['address'],
                       '-p', sheepdog['port'])
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertIn('running', out.stdout.decode().splitlines()[0])

    def test_image_round_trip(self):
        data = test_glance.payload(test_glance.SIZE, self.id())
        image = self.uploaded_image(data)
        self.assertEqual('active', image['status'])
        self.assertEqual(test_glance.SIZE, image['size'])
        self.assertEqual(self.glance['backend'], image['stores'])
        # The location names the plugin's gateway node, and the upload's
        # own VDI: the image id, '.' and 16 hex digits.
        prefix = 'sheepdog://%s:%s:%s' % (
            self.sheepdog['address'], self.sheepdog['port'], image['id'])
        self.assertRegex(image['direct_url'],
                         '^%s\\.[0-9a-f]{16}$' % re.escape(prefix))
        vdi = self.vdi_of(image)
        self.assertTrue(self.vdi_exists(vdi))
        out = self.dog('vdi', 'read', '-a', self.sheepdog['address'],
                       '-p', self.sheepdog['port'], vdi, '0',
                       str(len(data)))
        self.assertEqual(0, out.returncode, out.stderr)
        self.assertEqual(hashlib.sha256(data).hexdigest(),
                         hashlib.sha256(out.stdout).hexdigest())

        resp = self.download(image['id'])
        self.assertEqual(200, resp.status_code)
        self.assertEqual(len(data), len(resp.content))
        self.assertEqual(hashlib.sha256(data).hexdigest(),
                         hashlib.sha256(resp.content).hexdigest())

        resp = self.session.delete(self.url + '/v2/images/' + image['id'],
                                   timeout=test_glance.TIMEOUT)
        self.assertEqual(204, resp.status_code, resp.text)
        self.assertEqual(404, self.session.get(
            self.url + '/v2/images/' + image['id'],
            timeout=test_glance.TIMEOUT).status_code)
        self.assertFalse(self.vdi_exists(vdi))
