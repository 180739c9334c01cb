"""devstack/lib/fastpath on its own: both glance modes and ceilometer.

The harness runs the multi-store path against real glance; the Pike-era
legacy path and the ini helpers' edge cases are checked here on files.
"""

import configparser
import os
import subprocess
import sys
import tempfile

import testtools

LIB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'devstack', 'lib', 'fastpath')


def lib(function, *args, **env):
    full = dict(os.environ)
    full.update(env)
    return subprocess.run(
        ['bash', '-c', 'set -eu; source "$0"; %s "$@"' % function, LIB] +
        list(args), check=True, capture_output=True, text=True, env=full)


def parse(path):
    parser = configparser.RawConfigParser(strict=True)
    parser.read(path)
    return parser


class DevstackLibTestCase(testtools.TestCase):

    def setUp(self):
        super(DevstackLibTestCase, self).setUp()
        fd, self.conf = tempfile.mkstemp(suffix='.conf')
        os.close(fd)
        self.addCleanup(os.unlink, self.conf)

    def write(self, text):
        with open(self.conf, 'w') as f:
            f.write(text)

    def test_legacy_mode_writes_glance_store_section(self):
        self.write('[DEFAULT]\ndebug = true\n\n[glance_store]\n'
                   'stores = file,http\ndefault_store = file\n')
        lib('configure_fastpath_glance', self.conf, 'legacy',
            FASTPATH_SHEEPDOG_PORT='7001',
            FASTPATH_SHEEPDOG_READ_SIZE='1048576')
        conf = parse(self.conf)
        self.assertEqual('fastsheep,file,http',
                         conf.get('glance_store', 'stores'))
        self.assertEqual('sheepdog', conf.get('glance_store', 'default_store'))
        self.assertEqual('7001',
                         conf.get('glance_store', 'sheepdog_store_port'))
        self.assertEqual('1048576',
                         conf.get('glance_store', 'sheepdog_store_read_size'))
        # Unset options keep the driver's defaults.
        self.assertFalse(conf.has_option('glance_store',
                                         'sheepdog_store_chunk_size'))
        self.assertFalse(conf.has_section('sheepdog'))
        self.assertEqual('true', conf.get('DEFAULT', 'debug'))

    def test_multi_mode_appends_backend_once(self):
        self.write('[DEFAULT]\nenabled_backends = fast:file\n\n'
                   '[glance_store]\ndefault_backend = fast\n'
                   'default_store = file\n\n[fast]\n'
                   'filesystem_store_datadir = /x\n')
        for _ in range(2):
            lib('configure_fastpath_glance', self.conf, 'multi',
                FASTPATH_GLANCE_BACKEND_ID='sheep',
                FASTPATH_SHEEPDOG_COMMAND='/opt/dog')
        conf = parse(self.conf)
        self.assertEqual('fast:file,sheep:fastsheep',
                         conf.get('DEFAULT', 'enabled_backends'))
        self.assertEqual('sheep', conf.get('glance_store', 'default_backend'))
        self.assertFalse(conf.has_option('glance_store', 'default_store'))
        self.assertEqual('/opt/dog',
                         conf.get('sheep', 'sheepdog_store_command'))
        self.assertEqual('127.0.0.1',
                         conf.get('sheep', 'sheepdog_store_address'))
        self.assertEqual('/x', conf.get('fast', 'filesystem_store_datadir'))
        self.assertFalse(conf.has_section('sheepdog'))

    def test_unknown_mode_fails(self):
        self.assertRaises(subprocess.CalledProcessError, lib,
                          'configure_fastpath_glance', self.conf, 'bogus')

    def test_store_mode_follows_glance_store(self):
        # The test env has no glance_store: legacy; forced: as told.
        self.assertRaises(ImportError, __import__, 'glance_store')
        self.assertEqual('legacy', lib('fastpath_glance_store_mode',
                                       sys.executable).stdout.strip())
        self.assertEqual('multi', lib(
            'fastpath_glance_store_mode', sys.executable,
            FASTPATH_GLANCE_STORE_MODE='multi').stdout.strip())

    def test_iniset_iniget_inidelete(self):
        self.write('[a]\nx = 1\ny=2\n[b]\nx = 3\n')
        lib('iniset', self.conf, 'a', 'x', 'one')
        lib('iniset', self.conf, 'c', 'z', 'new value')
        lib('inidelete', self.conf, 'a', 'y')
        conf = parse(self.conf)
        self.assertEqual('one', conf.get('a', 'x'))
        self.assertFalse(conf.has_option('a', 'y'))
        self.assertEqual('3', conf.get('b', 'x'))
        self.assertEqual('new value', conf.get('c', 'z'))
        self.assertEqual('3', lib('iniget', self.conf, 'b', 'x')
                         .stdout.strip())

    def test_ceilometer_pipelines_keep_query_and_revert(self):
        self.write('sinks:\n    - name: meter_sink\n      publishers:\n'
                   '          - gnocchi://?archive_policy=low&filter_'
                   'project=service\n          - notifier://\n')
        lib('configure_fastpath_ceilometer_pipelines', self.conf,
            '/nonexistent/event_pipeline.yaml')
        lib('configure_fastpath_ceilometer_pipelines', self.conf)
        with open(self.conf) as f:
            text = f.read()
        self.assertIn('          - gnocchi-metriccache://?archive_policy=low'
                      '&filter_project=service\n', text)
        self.assertIn('          - notifier://\n', text)
        self.assertNotIn('- gnocchi://', text)
        lib('unconfigure_fastpath_ceilometer_pipelines', self.conf)
        with open(self.conf) as f:
            self.assertIn('- gnocchi://?archive_policy=low', f.read())
