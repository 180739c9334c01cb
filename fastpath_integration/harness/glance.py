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
from devstack/lib/fastpath (multi-store, one backend per sheepdog);
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

import configparser
import logging
import os
import shutil

import fixtures
import requests

from fastpath_integration.harness import devstack
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
            self._configure_current(venv, base, etc, port, log)
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
            cmd = [os.path.join(bindir, 'uwsgi'),
                   '--ini', self._uwsgi_ini(etc, port, cwd)]
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

    # -- current ---------------------------------------------------------

    def _configure_current(self, venv, base, etc, port, log):
        paste = os.path.join(etc, 'glance-api-paste.ini')
        shutil.copy(os.path.join(venv, 'etc', 'glance',
                                 'glance-api-paste.ini'), paste)
        # What devstack's lib/glance writes (trimmed to what runs here):
        # multi-store with a file backend, staging and tasks stores.
        settings = [
            ('DEFAULT', 'enabled_backends', 'fs:file'),
            ('DEFAULT', 'enabled_import_methods', '[glance-direct]'),
            ('DEFAULT', 'log_file', os.path.join(
                self.rundir, '%s-api.log' % self.name)),
            ('DEFAULT', 'debug', 'false'),
            # The tests check locations: where the image went, and that a
            # location written by the Pike driver can be added.
            ('DEFAULT', 'show_image_direct_url', 'true'),
            ('DEFAULT', 'show_multiple_locations', 'true'),
            ('glance_store', 'default_backend', 'fs'),
            ('fs', 'filesystem_store_datadir', os.path.join(base, 'images')),
            ('os_glance_staging_store', 'filesystem_store_datadir',
             os.path.join(base, 'staging')),
            ('os_glance_tasks_store', 'filesystem_store_datadir',
             os.path.join(base, 'tasks')),
            ('database', 'connection',
             self.db_url.replace('postgresql://', 'postgresql+psycopg2://')),
            # No keystone: a pipeline that trusts identity headers.
            ('paste_deploy', 'flavor', 'trusted'),
            ('paste_deploy', 'config_file', paste),
            ('oslo_policy', 'enforce_new_defaults', 'false'),
        ]
        if self.keystone is not None:
            settings += [('paste_deploy', 'flavor',
                          'keystone+cachemanagement'),
                         # Where the other workers reach this one (the
                         # centralized_db image cache, glance-direct
                         # staged on another worker), as devstack sets.
                         ('DEFAULT', 'worker_self_reference_url',
                          'http://127.0.0.1:%d' % port)]
            settings += self.keystone.authtoken_settings('glance')
        settings += self.settings
        if self.server == 'eventlet':
            settings += [('DEFAULT', 'bind_host', '127.0.0.1'),
                         ('DEFAULT', 'bind_port', str(port)),
                         ('DEFAULT', 'workers', str(self.workers))]
        for section, option, value in settings:
            devstack.run('iniset', [self.conf, section, option, value],
                         log=log)
        if self.keystone is not None and not any(
                option[:2] == ('oslo_policy', 'enforce_new_defaults')
                for option in self.settings):
            # The release's own policy defaults, which its tempest
            # expects (the new ones from 2023.2 on), unless the caller
            # sets them (tempest.LINES, for 2023.1's tempest).
            devstack.run('inidelete', [self.conf, 'oslo_policy',
                                       'enforce_new_defaults'], log=log)
        for section, option, value in (
                ('composite:glance-api-trusted', 'paste.composite_factory',
                 'glance.api:root_app_factory'),
                ('composite:glance-api-trusted', '/', 'api'),
                ('composite:glance-api-trusted', '/healthcheck',
                 'healthcheck'),
                ('composite:api', 'trusted',
                 'cors http_proxy_to_wsgi versionnegotiation osprofiler '
                 'context rootapp')):
            devstack.run('iniset', [paste, section, option, value], log=log)
        # The extra backends first: devstack's function makes the last
        # backend it configures the default.
        backends = list(self.backends.items())
        if self.sheepdog is not None:
            backends.append((BACKEND, self.sheepdog))
        for backend_id, sheepdog in backends:
            env = devstack.sheepdog_env(sheepdog, backend_id)
            devstack.run('configure_fastpath_glance',
                         [self.conf, devstack.glance_store_mode(venv, env)],
                         env=env, log=log)
        if self.keystone is not None:
            self._sort_backends(log)
        self.backend = BACKEND if self.sheepdog is not None else (
            backends[-1][0] if backends else 'fs')

    def _sort_backends(self, log):
        """enabled_backends by id, the order tempest expects.

        An import to all stores writes them in enabled_backends order,
        glance lists an image's stores in the order written (before
        2024.1's store weights), and tempest's import waiter compares
        that list with the sorted store ids.
        """
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(self.conf)
        backends = sorted((b.strip() for b in parser.get(
            'DEFAULT', 'enabled_backends').split(',')),
            key=lambda backend: backend.split(':')[0])
        devstack.run('iniset', [self.conf, 'DEFAULT', 'enabled_backends',
                                ','.join(backends)], log=log)

    def _uwsgi_ini(self, etc, port, cwd):
        uwsgi_ini = os.path.join(etc, 'glance-api-uwsgi.ini')
        with open(uwsgi_ini, 'w') as f:
            f.write('[uwsgi]\n'
                    '%s\n'
                    'env = OS_GLANCE_CONFIG_DIR=%s\n'
                    'http-socket = 127.0.0.1:%d\n'
                    'chdir = %s\n'
                    'master = true\nprocesses = %d\nthreads = 4\n'
                    'enable-threads = true\nsingle-interpreter = true\n'
                    'lazy-apps = true\nneed-app = true\n'
                    'die-on-term = true\nhttp-auto-chunked = true\n'
                    'http-raw-body = true\nbuffer-size = 65535\n'
                    'add-header = Connection: close\n'
                    % (venvs.uwsgi_app(venvs.venv_path(self.venv),
                                       'glance.wsgi.api', 'glance-wsgi-api'),
                       etc, port, cwd, self.workers))
        return uwsgi_ini

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
