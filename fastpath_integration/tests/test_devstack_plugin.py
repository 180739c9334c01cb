"""devstack/plugin.sh through its phases, devstack's own calls stubbed.

devstack itself needs a dedicated VM; what the plugin adds to a stack.sh
run is its dispatch of devstack's phases to devstack/lib/*. Here each
phase is sourced as stack.sh, unstack.sh and clean.sh source it, after
devstack/settings, with devstack's functions replaced by stubs that
record their calls (``install_package``, ``pip_install``...) and with a
stand-in for the interpreter of glance's environment. The cluster is
real: ``fastsheep-cluster`` builds (or reuses the cached build of) the
sheepdog archive, starts its sheep with the lib's own run_process (no
systemd here), and is stopped by ``unstack`` and removed by ``clean``.
"""

import configparser
import os
import subprocess

import fixtures
import testtools

from fastpath_integration.harness import devstack
from fastpath_integration.harness import host
from fastpath_integration.harness import sheepdog
from fastpath_integration.harness import venvs
from fastpath_integration.tests import base

# devstack's functions that the plugin calls, recording their calls.
STUBS = r'''
function define_plugin { :; }
function echo_summary { :; }
function is_service_enabled {
    local service
    for service in "$@"; do
        [[ ",$ENABLED_SERVICES," == *",$service,"* ]] && return 0
    done
    return 1
}
function enable_service {
    local service
    for service in "$@"; do
        is_service_enabled "$service" || ENABLED_SERVICES+=",$service"
    done
}
function die { shift; echo "die: $*" >&2; exit 1; }
function install_package { echo "install_package $*" >>"$CALLS"; }
function pip_install { echo "pip_install $*" >>"$CALLS"; }
function pip_uninstall { echo "pip_uninstall $*" >>"$CALLS"; }
'''

# glance's interpreter: its glance_store has multi-store, and both entry
# points load (what verify_fastpath asks of it).
PYTHON = '#!/bin/sh\necho "python $*" >>"$CALLS"\n'


class PluginPhasesTestCase(testtools.TestCase):

    def setUp(self):
        super(PluginPhasesTestCase, self).setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.calls = os.path.join(self.dir, 'calls')
        venv = os.path.join(self.dir, 'venv')
        os.makedirs(os.path.join(venv, 'bin'))
        python = os.path.join(venv, 'bin', 'python')
        with open(python, 'w') as f:
            f.write(PYTHON)
        os.chmod(python, 0o755)
        with open(os.path.join(self.dir, 'stubs.sh'), 'w') as f:
            f.write(STUBS)
        self.glance_conf = os.path.join(self.dir, 'glance-api.conf')
        with open(self.glance_conf, 'w') as f:
            f.write('[DEFAULT]\nenabled_backends = fs:file\n\n'
                    '[glance_store]\ndefault_backend = fs\n')
        self.env = {
            'CALLS': self.calls,
            'DEST': self.dir,
            'DATA_DIR': os.path.join(self.dir, 'data'),
            'LOGDIR': os.path.join(self.dir, 'logs'),
            'DEVSTACK_VENV': venv,
            'FASTPATH_DIR': devstack.TOPDIR,
            'GLANCE_API_CONF': self.glance_conf,
            'CEILOMETER_CONF_DIR': os.path.join(self.dir, 'ceilometer'),
        }

    def phase(self, services, *args, **kwargs):
        """Source settings and plugin.sh ARGS as devstack does."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('FASTPATH_')}
        env.update(self.env, ENABLED_SERVICES=services)
        script = ('set -o errexit; source "$0/stubs.sh"; '
                  'source "$FASTPATH_DIR/devstack/settings"; '
                  'source "$FASTPATH_DIR/devstack/plugin.sh" "$@"')
        return subprocess.run(
            list(kwargs.get('prefix', ())) +
            ['bash', '-c', script, self.dir] + list(args),
            capture_output=True, text=True, env=env)

    def recorded(self):
        if not os.path.exists(self.calls):
            return []
        with open(self.calls) as f:
            return f.read().splitlines()

    def test_emulator_and_cluster_are_exclusive(self):
        out = self.phase('g-api,fastsheep-emulator,fastsheep-cluster',
                         'stack', 'pre-install')
        self.assertEqual(1, out.returncode, out.stderr)
        self.assertIn('die: fastsheep-cluster and fastsheep-emulator are '
                      'exclusive', out.stderr)
        self.assertEqual([], self.recorded())

    def test_cluster_through_every_phase(self):
        try:
            prefix = sheepdog.prefix()
        except sheepdog.Unavailable as exc:
            if os.environ.get(base.REQUIRE_REAL_SHEEPDOG):
                self.fail('%s is set but %s' % (base.REQUIRE_REAL_SHEEPDOG,
                                                exc))
            sheepdog.record_skip('the devstack plugin\'s cluster', exc)
            self.skipTest('real sheepdog cluster: %s' % exc)
        ports = [host.free_port() for _ in range(3)]
        self.env.update({
            'FASTPATH_SHEEPDOG_NODE_PORTS': ','.join(map(str, ports)),
            'FASTPATH_CACHE_DIR': os.path.dirname(venvs.cache_root()),
            'FASTPATH_SHEEPDOG_SOURCE': os.environ.get('SHEEPDOG_SOURCE') or
            os.path.join(devstack.TOPDIR, '..', 'shared', 'sheepdog',
                         'sheepdog-1.0.1.tar.gz'),
        })
        if os.environ.get('SHEEPDOG_PREFIX'):
            self.env['FASTPATH_SHEEPDOG_PREFIX'] = prefix
        data = os.path.join(self.env['DATA_DIR'], 'sheepdog')
        services = 'g-api,fastsheep-cluster'
        self.addCleanup(self.phase, services, 'unstack')

        for args in (('stack', 'pre-install'), ('stack', 'install')):
            out = self.phase(services, *args)
            self.assertEqual(0, out.returncode, out.stderr[-3000:])
        calls = self.recorded()
        self.assertIn('install_package %s' % subprocess.run(
            ['bash', os.path.join(devstack.TOPDIR, 'tools',
                                  'build-sheepdog.sh'), '--packages'],
            check=True, capture_output=True, text=True).stdout.strip(),
            calls)
        self.assertIn('pip_install %s' % devstack.TOPDIR, calls)
        with open(os.path.join(data, 'prefix')) as f:
            self.assertEqual(prefix, f.read().strip())

        out = self.phase(services, 'stack', 'post-config',
                         prefix=devstack.PRIVATE_LOCKS
                         if os.geteuid() == 0 else ())
        self.assertEqual(0, out.returncode, out.stderr[-3000:])
        pids = []
        for index in range(3):
            with open(os.path.join(data, 'services',
                                   'fastsheep-sheep%d.pid' % index)) as f:
                pids.append(int(f.read()))
        self.assertTrue(all(host.alive(pid) for pid in pids))
        conf = configparser.RawConfigParser()
        conf.read(self.glance_conf)
        self.assertEqual('fs:file,fastsheep:fastsheep',
                         conf.get('DEFAULT', 'enabled_backends'))
        self.assertEqual('fastsheep',
                         conf.get('glance_store', 'default_backend'))
        self.assertEqual(str(ports[0]),
                         conf.get('fastsheep', 'sheepdog_store_port'))
        self.assertEqual(os.path.join(prefix, 'bin', 'dog'),
                         conf.get('fastsheep', 'sheepdog_store_command'))
        dog = [os.path.join(prefix, 'bin', 'dog')]
        nodes = subprocess.run(
            dog + ['node', 'list', '-r', '-p', str(ports[2])],
            check=True, capture_output=True, text=True).stdout
        self.assertEqual(3, len(nodes.splitlines()))

        out = self.phase(services, 'stack', 'extra')
        self.assertEqual(0, out.returncode, out.stderr[-3000:])
        self.assertIn('glance_store.drivers', '\n'.join(self.recorded()))

        out = self.phase(services, 'unstack')
        self.assertEqual(0, out.returncode, out.stderr[-3000:])
        self.assertEqual([], [pid for pid in pids if host.alive(pid)])
        self.assertFalse(host.port_open(ports[0]))

        out = self.phase(services, 'clean')
        self.assertEqual(0, out.returncode, out.stderr[-3000:])
        self.assertFalse(os.path.exists(data))
        self.assertIn('pip_uninstall openstack-fastpath', self.recorded())
