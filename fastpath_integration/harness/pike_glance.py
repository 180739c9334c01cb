"""Pike's glance-api (15.0.2) on CPython 2.7, in one of three stores.

Pike is where the project's users run the sheepdog driver, so its own
standalone eventlet server (one worker, as the seeds measured it) is
started from the cached ``pike27-glance`` venv with:

- ``fastsheep``: the plugin, enabled as README tells Pike operators
  (``stores = file,http,fastsheep``, ``default_store = sheepdog``);
- ``sheepdog``: glance_store 0.22.0's in-tree driver, unmodified;
- ``patched``: the same in-tree driver from a copy of glance_store
  0.22.0 with the quilt series ``patches/glance_store`` pushed, put
  ahead of the installed one on PYTHONPATH (the installed entry points
  name the same modules).
"""

import configparser
import logging
import os
import shutil

import fixtures
import requests

from fastpath_integration.harness import pike_sources
from fastpath_integration.harness import processes
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)

VENV = 'pike27-glance'
STORES = ('fastsheep', 'sheepdog', 'patched')

# The identity headers the ``trusted-auth`` flavour of Pike's paste
# pipeline turns into a request context (no keystone).
ADMIN_HEADERS = {
    'X-Identity-Status': 'Confirmed',
    'X-Roles': 'admin,member,reader',
    'X-Tenant-Id': 'fastpath-project',
    'X-Project-Id': 'fastpath-project',
    'X-User-Id': 'fastpath-user',
}


class PikeGlance(fixtures.Fixture):
    """Pike glance-api, standalone eventlet server, one worker.

    ``emulator`` is the SheepdogEmulator fixture's env (address, port,
    ``dog`` wrapper, and the ``bin`` directory holding ``collie``, the
    command the in-tree driver runs from PATH).
    """

    def __init__(self, rundir, emulator, store='fastsheep', name=None,
                 workers=1):
        super(PikeGlance, self).__init__()
        if store not in STORES:
            raise ValueError('store %r is not one of %s' % (store, STORES))
        self.rundir = rundir
        self.emulator = emulator
        self.store = store
        self.name = name or 'pike-glance-%s' % store
        self.workers = workers

    def _store_settings(self):
        address = self.emulator['FASTPATH_SHEEPDOG_ADDRESS']
        port = self.emulator['FASTPATH_SHEEPDOG_PORT']
        common = [('glance_store', 'default_store', 'sheepdog'),
                  ('glance_store', 'sheepdog_store_address', address),
                  ('glance_store', 'sheepdog_store_port', port)]
        if self.store == 'fastsheep':
            # README, "Enabling the sheepdog driver", Pike.
            return [('glance_store', 'stores', 'file,http,fastsheep'),
                    ('glance_store', 'sheepdog_store_command',
                     self.emulator['FASTPATH_SHEEPDOG_COMMAND'])] + common
        return [('glance_store', 'stores', 'file,http,sheepdog')] + common

    def _setUp(self):
        venv = venvs.ensure_venv(VENV)
        base = os.path.join(self.rundir, self.name)
        cwd = os.path.join(base, 'cwd')
        for d in (cwd, os.path.join(base, 'images')):
            os.makedirs(d)
        log = os.path.join(base, 'configure.log')
        paste = os.path.join(base, 'glance-api-paste.ini')
        shutil.copy(os.path.join(pike_sources.glance_etc(venv, log),
                                 'glance-api-paste.ini'),
                    paste)
        port = processes.free_port()
        self.conf = os.path.join(base, 'glance-api.conf')
        settings = [
            ('DEFAULT', 'bind_host', '127.0.0.1'),
            ('DEFAULT', 'bind_port', str(port)),
            ('DEFAULT', 'workers', str(self.workers)),
            ('DEFAULT', 'log_file', os.path.join(
                self.rundir, '%s-api.log' % self.name)),
            ('DEFAULT', 'show_image_direct_url', 'true'),
            ('DEFAULT', 'show_multiple_locations', 'true'),
            # SQLite, not the harness's PostgreSQL 15: Pike's SQLAlchemy
            # (1.1.12) reflects check constraints through
            # pg_constraint.consrc, which PostgreSQL 12 removed, and
            # ``glance-manage db_sync`` fails with "column cons.consrc
            # does not exist". One eventlet worker holds no concurrent
            # writers, so SQLite does not lock up as under uWSGI.
            ('database', 'connection', 'sqlite:///%s' % os.path.join(
                base, 'glance.sqlite')),
            # Pike's paste pipeline that trusts identity headers.
            ('paste_deploy', 'flavor', 'trusted-auth'),
            ('paste_deploy', 'config_file', paste),
            ('glance_store', 'filesystem_store_datadir',
             os.path.join(base, 'images')),
        ] + self._store_settings()
        parser = configparser.ConfigParser(interpolation=None)
        for section, option, value in settings:
            if section != 'DEFAULT' and not parser.has_section(section):
                parser.add_section(section)
            parser.set(section, option, value)
        with open(self.conf, 'w') as f:
            parser.write(f)
        extra = {'PATH': '%s:%s:%s' % (
            os.path.join(venv, 'bin'),
            os.path.dirname(self.emulator['FASTPATH_SHEEPDOG_COMMAND']),
            os.environ.get('PATH', ''))}
        if self.store == 'patched':
            extra['PYTHONPATH'] = pike_sources.patched_tree(
                'glance_store', os.path.join(base, 'patched'), log)
        env = venvs.venv_env(venv, extra)
        self.env = env
        bindir = os.path.join(venv, 'bin')
        processes.run([os.path.join(bindir, 'glance-manage'),
                       '--config-file', self.conf, 'db_sync'],
                      log=os.path.join(base, 'db_sync.log'), cwd=cwd,
                      env=env)
        self.service = self.useFixture(processes.Service(
            '%s-api' % self.name,
            [os.path.join(bindir, 'glance-api'), '--config-file', self.conf],
            os.path.join(self.rundir, '%s-server.log' % self.name), cwd=cwd,
            env=env))
        self.url = 'http://127.0.0.1:%d' % port
        self.service.wait_ready(lambda: requests.get(
            self.url + '/v2/images', headers=ADMIN_HEADERS,
            timeout=5).status_code == 200, 120)
        self.pid = self.service.pid
        self._check_driver(env)
        LOG.info('%s (Pike, eventlet, %s store): %s', self.name,
                 self.store, self.url)

    def _check_driver(self, env):
        """Fail now if glance-api loaded another driver than asked for.

        The in-tree and patched configurations must run the sheepdog
        module they name; a stray PYTHONPATH would silently swap them.
        """
        where = pike_sources.module_file(
            venvs.ensure_venv(VENV), 'glance_store._drivers.sheepdog', env)
        patched = self.store == 'patched'
        if patched != (not where.startswith(venvs.cache_root())):
            raise RuntimeError('%s: glance_store sheepdog driver loaded '
                               'from %s' % (self.name, where))
        self.driver_file = where
