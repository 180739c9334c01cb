"""glance-api, from Pike on CPython 2.7 to the current release.

One fixture, three ways glance-api runs:

- ``release='current', server='uwsgi'``: glance 33 under uWSGI
  (threads, no eventlet), the only way it runs;
- ``release='current', server='eventlet'``: glance 32's standalone
  eventlet ``glance-api``, the last release that had it, which runs the
  store under eventlet's monkey-patching;
- ``release='pike'``: glance 15.0.2's standalone eventlet server on
  CPython 2.7 from the cached ``pike27-glance`` venv, one worker as the
  seeds measured it, where the project's users run the sheepdog driver.

No keystone: a paste pipeline that trusts identity headers
(``ADMIN_HEADERS``). The current releases get their store configuration
from devstack/lib/fastpath (multi-store, one backend per sheepdog;
``glance_current`` writes it);
Pike gets what README tells Pike operators, with ``store`` one of:

- ``fastsheep``: the plugin (``stores = file,http,fastsheep``,
  ``default_store = sheepdog``);
- ``sheepdog``: glance_store 0.22.0's in-tree driver, unmodified;
- ``patched``: the same in-tree driver from a copy of glance_store 0.22.0
  with the quilt series ``patches/glance_store`` pushed, ahead of the
  installed one on PYTHONPATH (the installed entry points name the same
  modules).

A sheepdog is a real cluster (fastpath_integration.harness.sheepdog) or
the emulator (infrastructure.SheepdogEmulator): anything with
``address``, ``port``, ``dog_path`` and ``bin_dir``.
"""

import logging
import os
import shutil

import fixtures
import requests

from fastpath_integration.harness import devstack
from fastpath_integration.harness import glance_current
from fastpath_integration.harness import host
from fastpath_integration.harness import pike_sources
from fastpath_integration.harness import processes
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)

# The cached venv of each (release, server).
VENVS = {
    ('current', 'uwsgi'): 'glance',
    ('current', 'eventlet'): 'glance-eventlet',
    ('pike', 'eventlet'): 'pike27-glance',
}
PIKE_STORES = ('fastsheep', 'sheepdog', 'patched')
# The backend id devstack/lib/fastpath gives the plugin by default.
BACKEND = 'fastsheep'

# The identity headers the trusting paste pipelines turn into a request
# context; Pike reads the tenant header, later releases the project one.
ADMIN_HEADERS = {
    'X-Identity-Status': 'Confirmed',
    'X-Roles': 'admin,member,reader',
    'X-Tenant-Id': 'fastpath-project',
    'X-Project-Id': 'fastpath-project',
    'X-User-Id': 'fastpath-user',
}


class Glance(fixtures.Fixture):
    """One glance-api.

    ``sheepdog``: the default store's cluster; None keeps a current
    glance on the stock file store. ``backends``: more sheepdog backends
    of a current glance, ``{backend id: sheepdog}``, which an upload
    selects with ``X-Image-Meta-Store`` (the suite's fault tests use the
    emulator's this way). ``db_url``: a PostgreSQL database for a current
    glance; Pike uses SQLite (see _pike_settings).

    ``keystone``: a keystone.Keystone fixture; a current glance then
    authenticates with ``flavor = keystone+cachemanagement`` as its
    ``glance`` service user instead of trusting identity headers, with
    the release's default policies.
    ``venv``: another cached venv of a current glance than VENVS names
    (a release line's services venv). ``settings``: more (section,
    option, value) triples, set after the harness's own and before the
    fastsheep backends are added.

    After set-up: ``url``, ``pid``, ``conf``, ``service``, ``backend``
    (the default backend id of a current glance) and, on Pike,
    ``driver_file`` (where the sheepdog driver module was imported from).
    """

    def __init__(self, rundir, name, sheepdog=None, release='current',
                 server='uwsgi', store='fastsheep', db_url=None,
                 backends=None, workers=None, keystone=None, venv=None,
                 settings=()):
        super(Glance, self).__init__()
        if (release, server) not in VENVS:
            raise ValueError('glance %s has no %s server'
                             % (release, server))
        if release == 'pike' and (store not in PIKE_STORES or
                                  sheepdog is None):
            raise ValueError('Pike glance needs a sheepdog and a store of '
                             '%s, not %r' % (PIKE_STORES, store))
        self.rundir = rundir
        self.name = name
        self.sheepdog = sheepdog
        self.release = release
        self.server = server
        self.store = store
        self.db_url = db_url
        self.backends = backends or {}
        self.workers = workers or (1 if release == 'pike' else 2)
        self.backend = None
        self.driver_file = None
        self.keystone = keystone
        self.venv = venv or VENVS[release, server]
        self.settings = list(settings)

    def _setUp(self):
        venv = venvs.ensure_venv(self.venv)
        base = os.path.join(self.rundir, self.name)
        etc = os.path.join(base, 'etc')
        cwd = os.path.join(base, 'cwd')
        for d in (etc, cwd, os.path.join(base, 'images'),
                  os.path.join(base, 'staging'), os.path.join(base, 'tasks')):
            os.makedirs(d)
        log = os.path.join(base, 'configure.log')
        self.conf = os.path.join(etc, 'glance-api.conf')
        port = host.free_port()
        extra = {}
        if self.release == 'pike':
            extra = self._configure_pike(venv, base, etc, port, log)
        else:
            self.backend = glance_current.configure(
                self, BACKEND, venv, base, etc, port, log)
        env = venvs.venv_env(venv, extra)
        bindir = os.path.join(venv, 'bin')
        processes.run([os.path.join(bindir, 'glance-manage'),
                       '--config-file', self.conf, 'db_sync'],
                      log=os.path.join(base, 'db_sync.log'), cwd=cwd,
                      env=env)
        if self.server == 'eventlet':
            cmd = [os.path.join(bindir, 'glance-api'),
                   '--config-file', self.conf]
        else:
            cmd = [os.path.join(bindir, 'uwsgi'), '--ini',
                   glance_current.uwsgi_ini(etc, port, cwd, self.venv,
                                            self.workers)]
        self.service = self.useFixture(processes.Service(
            '%s-api' % self.name, cmd,
            os.path.join(self.rundir, '%s-server.log' % self.name), cwd=cwd,
            env=env))
        self.url = 'http://127.0.0.1:%d' % port
        # With keystone, the version document is what answers without a
        # token.
        probe = (self.url + '/versions' if self.keystone
                 else self.url + '/v2/images')
        self.service.wait_ready(lambda: requests.get(
            probe, headers=ADMIN_HEADERS,
            timeout=5).status_code == 200, 120)
        self.pid = self.service.pid
        if self.release == 'pike':
            self._check_pike_driver(venv, env)
        LOG.info('%s-api (%s, %s): %s (store %s)', self.name, self.release,
                 self.server, self.url, self.backend or self.store)

    # -- Pike ------------------------------------------------------------

    def _configure_pike(self, venv, base, etc, port, log):
        paste = os.path.join(etc, 'glance-api-paste.ini')
        shutil.copy(os.path.join(pike_sources.glance_etc(venv, log),
                                 'glance-api-paste.ini'), paste)
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
            ('glance_store', 'default_store', 'sheepdog'),
            ('glance_store', 'sheepdog_store_address',
             self.sheepdog.address),
            ('glance_store', 'sheepdog_store_port', str(self.sheepdog.port)),
        ]
        if self.store == 'fastsheep':
            # README, "Enabling the sheepdog driver", Pike.
            settings += [('glance_store', 'stores', 'file,http,fastsheep'),
                         ('glance_store', 'sheepdog_store_command',
                          self.sheepdog.dog_path),
                         ('glance_store', 'sheepdog_store_client',
                          self.sheepdog.client)]
        else:
            settings.append(('glance_store', 'stores', 'file,http,sheepdog'))
        devstack.write_ini(self.conf, settings)
        # The in-tree driver runs ``collie`` from PATH.
        extra = {'PATH': '%s:%s:%s' % (
            os.path.join(venv, 'bin'), self.sheepdog.bin_dir,
            os.environ.get('PATH', ''))}
        if self.store == 'patched':
            extra['PYTHONPATH'] = pike_sources.patched_tree(
                'glance_store', os.path.join(base, 'patched'), log)
        return extra

    def _check_pike_driver(self, venv, env):
        """Fail now if glance-api loaded another driver than asked for.

        The in-tree and patched configurations must run the sheepdog
        module they name; a stray PYTHONPATH would silently swap them.
        """
        where = pike_sources.module_file(
            venv, 'glance_store._drivers.sheepdog', env)
        patched = self.store == 'patched'
        if patched != (not where.startswith(venvs.cache_root())):
            raise RuntimeError('%s: glance_store sheepdog driver loaded '
                               'from %s' % (self.name, where))
        self.driver_file = where
