"""devstack/lib/* on their own: both glance modes, ceilometer, cluster.

The harness runs the multi-store path against real glance, and
devstack/lib/sheepdog's cluster under it (test_devstack_cluster); the
Pike-era legacy path, the ini helpers' edge cases and what the cluster
functions refuse or compute are checked here on files, without sheepdog.
"""

import configparser
import hashlib
import os
import signal
import subprocess
import sys
import tempfile

import fixtures
import testtools

from fastpath_integration.harness import host

TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
LIB = os.path.join(TOPDIR, 'devstack', 'lib', 'fastpath')
LIB_SHEEPDOG = os.path.join(TOPDIR, 'devstack', 'lib', 'sheepdog')


def lib(function, *args, **env):
    full = dict(os.environ)
    full.update(env)
    return subprocess.run(
        ['bash', '-c', 'set -eu; source "$0"; %s "$@"' % function, LIB] +
        list(args), check=True, capture_output=True, text=True, env=full)


def sheepdog_lib(script, check=True, **env):
    """Run ``script`` after sourcing devstack/lib/sheepdog, as devstack.

    Only the FASTPATH_* settings given here: none from the caller's
    environment.
    """
    full = {k: v for k, v in os.environ.items()
            if not k.startswith('FASTPATH_') and k != 'LOGDIR'}
    full.update(env)
    return subprocess.run(
        ['bash', '-c', 'set -eu; source "$0"; ' + script, LIB_SHEEPDOG],
        check=check, capture_output=True, text=True, env=full)


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


class DevstackSheepdogLibTestCase(testtools.TestCase):
    """devstack/lib/sheepdog without a sheepdog: settings and refusals."""

    def setUp(self):
        super(DevstackSheepdogLibTestCase, self).setUp()
        self.data = self.useFixture(fixtures.TempDir()).path
        self.env = {'FASTPATH_SHEEPDOG_DATA_DIR': self.data,
                    'FASTPATH_CACHE_DIR': os.path.join(self.data, 'cache')}

    def run_lib(self, script, check=True, **env):
        return sheepdog_lib(script, check=check, **dict(self.env, **env))

    def test_ports_default_follow_the_first(self):
        self.assertEqual('7000 7001 7002', self.run_lib(
            'fastpath_cluster_ports').stdout.strip())
        self.assertEqual('7100 7101', self.run_lib(
            'fastpath_cluster_ports', FASTPATH_SHEEPDOG_PORT='7100',
            FASTPATH_SHEEPDOG_NODES='2').stdout.strip())
        self.assertEqual('41000 40999 52311', self.run_lib(
            'fastpath_cluster_ports',
            FASTPATH_SHEEPDOG_NODE_PORTS='41000,40999 52311').stdout.strip())

    def test_settings_refused(self):
        for env, message in (
                ({'FASTPATH_SHEEPDOG_COPIES': '4'}, 'COPIES=4'),
                ({'FASTPATH_SHEEPDOG_COPIES': '0'}, 'COPIES=0'),
                ({'FASTPATH_SHEEPDOG_NODE_PORTS': '41000 41001'},
                 'lists 2 ports for 3 nodes')):
            out = self.run_lib('fastpath_check_cluster_settings',
                               check=False, **env)
            self.assertNotEqual(0, out.returncode, env)
            self.assertIn(message, out.stderr)
        self.run_lib('fastpath_check_cluster_settings',
                     FASTPATH_SHEEPDOG_NODES='1', FASTPATH_SHEEPDOG_COPIES='1')

    def test_unverified_archive_is_not_built(self):
        archive = os.path.join(self.data, 'sheepdog-9.9.9.tar.gz')
        with open(archive, 'wb') as f:
            f.write(b'not sheepdog')
        digest = hashlib.sha256(b'not sheepdog').hexdigest()
        for env, message in (
                ({}, 'is not verified'),
                ({'FASTPATH_SHEEPDOG_SHA256': '0' * 64},
                 'has sha256 %s' % digest)):
            out = self.run_lib('install_fastpath_sheepdog', check=False,
                               FASTPATH_SHEEPDOG_SOURCE=archive, **env)
            self.assertNotEqual(0, out.returncode, env)
            self.assertIn(message, out.stderr)
            # Refused before anything was built or recorded.
            self.assertFalse(os.path.exists(os.path.join(self.data,
                                                         'prefix')))
            self.assertFalse(os.path.exists(os.path.join(
                self.data, 'cache', 'sheepdog')))

    def test_installed_prefix_and_sheep_command(self):
        prefix = os.path.join(self.data, 'installed')
        for name in ('sbin/sheep', 'bin/dog'):
            path = os.path.join(prefix, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\n')
            os.chmod(path, 0o755)
        env = {'FASTPATH_SHEEPDOG_PREFIX': prefix,
               'FASTPATH_SHEEPDOG_NODE_PORTS': '41000 41001 41002'}
        self.assertEqual('', self.run_lib('fastpath_sheepdog_packages',
                                          **env).stdout.strip())
        self.run_lib('install_fastpath_sheepdog', **env)
        self.assertEqual(
            '%s/sbin/sheep -f -l dst=stdout -c local:%s/shm -b 127.0.0.1 '
            '-p 41001 -z 1 %s/node1' % (prefix, self.data, self.data),
            self.run_lib('fastpath_sheep_command 1', **env).stdout.strip())
        self.assertEqual(
            '41000 %s/bin/dog' % prefix, self.run_lib(
                'fastpath_use_cluster; echo "$FASTPATH_SHEEPDOG_PORT '
                '$FASTPATH_SHEEPDOG_COMMAND"', **env).stdout.strip())
        # An operator's command is kept.
        self.assertEqual('/opt/dog', self.run_lib(
            'fastpath_use_cluster; echo "$FASTPATH_SHEEPDOG_COMMAND"',
            FASTPATH_SHEEPDOG_COMMAND='/opt/dog', **env).stdout.strip())

    def test_build_packages_are_the_build_tool_s(self):
        tool = subprocess.run(
            ['bash', os.path.join(TOPDIR, 'tools', 'build-sheepdog.sh'),
             '--packages'], check=True, capture_output=True, text=True)
        self.assertIn('liburcu-dev', tool.stdout)
        self.assertEqual(tool.stdout, self.run_lib(
            'fastpath_sheepdog_packages').stdout)

    def test_run_and_stop_process_without_devstack(self):
        logdir = os.path.join(self.data, 'logs')
        self.run_lib('run_process fastsheep-sheep0 "sleep 600"',
                     LOGDIR=logdir)
        pidfile = os.path.join(self.data, 'services', 'fastsheep-sheep0.pid')
        with open(pidfile) as f:
            pid = int(f.read())
        self.addCleanup(_kill_quietly, pid)
        self.assertTrue(host.alive(pid))
        self.assertTrue(os.path.exists(os.path.join(
            logdir, 'fastsheep-sheep0.log')))
        self.run_lib('stop_process fastsheep-sheep0')
        self.assertFalse(host.alive(pid))
        self.assertFalse(os.path.exists(pidfile))
        # Stopping what is not running is no error (unstack twice).
        self.run_lib('stop_process fastsheep-sheep0')


def _kill_quietly(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
