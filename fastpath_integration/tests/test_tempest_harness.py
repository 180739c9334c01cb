"""The tempest harness's venvs and checks, without services.

The glance patch series of patches/lines/ go into the line's services
venv when it is built; the cache key must change with them, a patch that
no longer applies must fail the build, and the venv must not depend on
the tox env that built it. ``tox -e tempest-2026.1`` and
``tox -e tempest-2023.1`` run the deployment itself.
"""

import os
import subprocess
import sys
import tempfile
from unittest import mock

import fixtures
import testtools

from fastpath_integration.harness import tempest
from fastpath_integration.harness import venvs

ORIGINAL = 'def answer():\n    return None\n'
PATCH = """Description: test
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,2 +1,2 @@
 def answer():
-    return None
+    return 42
"""


class SeriesTestCase(testtools.TestCase):

    def setUp(self):
        super(SeriesTestCase, self).setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.patches = os.path.join(self.root, 'patches')
        os.makedirs(os.path.join(self.patches, 'lines', 'svc'))
        self.write('patches/lines/svc/series', 'one.patch\n')
        self.write('patches/lines/svc/one.patch', PATCH)
        self.useFixture(fixtures.MockPatchObject(
            venvs, 'PATCHES_DIR', self.patches))
        self.useFixture(fixtures.MockPatchObject(
            venvs, 'SERIES', {'openstack-2026.1': ('lines/svc',)}))
        self.useFixture(fixtures.EnvironmentVariable(
            'FASTPATH_CACHE_DIR', os.path.join(self.root, 'cache')))

    def write(self, path, text):
        with open(os.path.join(self.root, path), 'w') as f:
            f.write(text)

    def site_packages(self):
        site = os.path.join(self.root, 'venv', 'lib', 'python3.13',
                            'site-packages', 'pkg')
        os.makedirs(site)
        with open(os.path.join(site, 'mod.py'), 'w') as f:
            f.write(ORIGINAL)
        return os.path.join(site, 'mod.py')

    def test_series_changes_the_cache_key(self):
        before = venvs.venv_key('openstack-2026.1')
        other = venvs.venv_key('openstack-2023.1')
        self.write('patches/lines/svc/one.patch', PATCH + ' \n')
        self.assertNotEqual(before, venvs.venv_key('openstack-2026.1'))
        # A service without a series keeps its key.
        self.assertEqual(other, venvs.venv_key('openstack-2023.1'))

    def test_apply_series_patches_site_packages(self):
        module = self.site_packages()
        with tempfile.TemporaryFile() as log:
            venvs.apply_series(os.path.join(self.root, 'venv'),
                               'lines/svc', log)
        with open(module) as f:
            self.assertEqual('def answer():\n    return 42\n', f.read())

    def test_apply_series_refuses_fuzz(self):
        module = self.site_packages()
        with open(module, 'w') as f:
            f.write('def answer():\n    return 0\n')
        with tempfile.TemporaryFile() as log:
            self.assertRaises(subprocess.CalledProcessError,
                              venvs.apply_series,
                              os.path.join(self.root, 'venv'), 'lines/svc',
                              log)


class BasePythonTestCase(testtools.TestCase):

    def test_base_python_is_outside_any_venv(self):
        python = venvs.base_python()
        prefixes = subprocess.run(
            [python, '-c', 'import sys; print(sys.prefix == '
             'sys.base_prefix, sys.version_info[:2])'],
            check=True, capture_output=True, text=True).stdout.split(None, 1)
        self.assertEqual('True', prefixes[0])
        self.assertEqual(str(sys.version_info[:2]), prefixes[1].strip())


class LineSeriesTestCase(testtools.TestCase):

    def test_every_line_names_an_existing_series(self):
        for line in tempest.LINES.values():
            series = venvs.SERIES[line['services']]
            self.assertNotEqual((), series)
            for name in series:
                for path in venvs.series_files(name):
                    self.assertTrue(os.path.isfile(path), path)

    def test_2023_1_runs_glance_on_the_deprecated_policy_defaults(self):
        self.assertIn(('oslo_policy', 'enforce_new_defaults', 'false'),
                      tempest.LINES['2023.1']['glance'])

    def test_2023_1_leaves_out_only_the_cache_race(self):
        args = tempest.excluded('2023.1')
        self.assertEqual('--exclude-regex', args[0])
        self.assertRegex(
            'tempest.api.image.v2.admin.test_image_caching.'
            'ImageCachingTest.test_image_caching_cycle', args[1])
        self.assertNotRegex(
            'tempest.api.image.v2.admin.test_image_caching.'
            'ImageCachingTest.test_create_image_and_cache_it', args[1])
        self.assertIn('tempest-2026.1 runs', tempest.report_excluded(
            '2023.1'))
        self.assertEqual([], tempest.excluded('2026.1'))


class StoresDetailTestCase(testtools.TestCase):

    def deployment(self):
        deployment = mock.Mock(backends=['fastsheep', 'fastsheep2', 'fs',
                                         'web'])
        deployment.glance.url = 'http://glance.invalid'
        deployment.keystone.admin_token.return_value = 'token'
        return deployment

    def answer(self, status, stores=()):
        response = mock.Mock(status_code=status, text='body')
        response.json.return_value = {'stores': [
            {'id': store_id, 'type': store_type}
            for store_id, store_type in stores]}
        return self.useFixture(fixtures.MockPatch(
            'requests.get', return_value=response)).mock

    def test_every_backend_listed(self):
        get = self.answer(200, [('fastsheep', 'fastsheep'),
                                ('fastsheep2', 'fastsheep'),
                                ('fs', 'file'), ('web', 'http')])
        line = tempest.check_stores_detail(self.deployment())
        self.assertIn('fastsheep (fastsheep)', line)
        get.assert_called_once_with(
            'http://glance.invalid/v2/info/stores/detail',
            headers={'X-Auth-Token': 'token'}, timeout=30)

    def test_server_error_fails(self):
        # What unpatched glance answers with a fastsheep backend.
        self.answer(500)
        self.assertRaises(RuntimeError, tempest.check_stores_detail,
                          self.deployment())

    def test_missing_backend_fails(self):
        self.answer(200, [('fastsheep', 'fastsheep'), ('fs', 'file')])
        self.assertRaises(RuntimeError, tempest.check_stores_detail,
                          self.deployment())
