# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""How a current glance-api is configured: devstack's way, trimmed.

What devstack's lib/glance and devstack/lib/fastpath write for a
current release (multi-store, the staging and tasks stores, the
fastsheep backends), the paste pipeline that trusts identity headers
when there is no keystone, and uWSGI's ini. It stands apart from the
Glance fixture, which starts the service and writes Pike's
configuration itself: the fixture holds the service's life, this module
what a current release is told.
"""

import configparser
import os
import shutil

from fastpath_integration.harness import devstack
from fastpath_integration.harness import venvs


def configure(glance, backend, venv, base, etc, port, log):
    """Write a current glance-api's configuration; its default backend.

    ``glance`` is the Glance fixture being set up: its options are read
    here, nothing of it is set. ``backend`` is the id its own sheepdog
    gets (devstack/lib/fastpath's default), ``venv`` the glance venv,
    ``base`` and ``etc`` its directories, ``port`` where it listens and
    ``log`` where the configuration steps write.
    """
    paste = os.path.join(etc, 'glance-api-paste.ini')
    shutil.copy(os.path.join(venv, 'etc', 'glance',
                             'glance-api-paste.ini'), paste)
    # What devstack's lib/glance writes (trimmed to what runs here):
    # multi-store with a file backend, staging and tasks stores.
    settings = [
        ('DEFAULT', 'enabled_backends', 'fs:file'),
        ('DEFAULT', 'enabled_import_methods', '[glance-direct]'),
        ('DEFAULT', 'log_file', os.path.join(
            glance.rundir, '%s-api.log' % glance.name)),
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
         glance.db_url.replace('postgresql://', 'postgresql+psycopg2://')),
        # No keystone: a pipeline that trusts identity headers.
        ('paste_deploy', 'flavor', 'trusted'),
        ('paste_deploy', 'config_file', paste),
        ('oslo_policy', 'enforce_new_defaults', 'false'),
    ]
    if glance.keystone is not None:
        settings += [('paste_deploy', 'flavor',
                      'keystone+cachemanagement'),
                     # Where the other workers reach this one (the
                     # centralized_db image cache, glance-direct
                     # staged on another worker), as devstack sets.
                     ('DEFAULT', 'worker_self_reference_url',
                      'http://127.0.0.1:%d' % port)]
        settings += glance.keystone.authtoken_settings('glance')
    settings += glance.settings
    if glance.server == 'eventlet':
        settings += [('DEFAULT', 'bind_host', '127.0.0.1'),
                     ('DEFAULT', 'bind_port', str(port)),
                     ('DEFAULT', 'workers', str(glance.workers))]
    for section, option, value in settings:
        devstack.run('iniset', [glance.conf, section, option, value],
                     log=log)
    if glance.keystone is not None and not any(
            option[:2] == ('oslo_policy', 'enforce_new_defaults')
            for option in glance.settings):
        # The release's own policy defaults, which its tempest
        # expects (the new ones from 2023.2 on), unless the caller
        # sets them (tempest.LINES, for 2023.1's tempest).
        devstack.run('inidelete', [glance.conf, 'oslo_policy',
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
    backends = list(glance.backends.items())
    if glance.sheepdog is not None:
        backends.append((backend, glance.sheepdog))
    for backend_id, sheepdog in backends:
        env = devstack.sheepdog_env(sheepdog, backend_id)
        devstack.run('configure_fastpath_glance',
                     [glance.conf, devstack.glance_store_mode(venv, env)],
                     env=env, log=log)
    if glance.keystone is not None:
        _sort_backends(glance.conf, log)
    return backend if glance.sheepdog is not None else (
        backends[-1][0] if backends else 'fs')


def _sort_backends(conf, log):
    """enabled_backends by id, the order tempest expects.

    An import to all stores writes them in enabled_backends order,
    glance lists an image's stores in the order written (before
    2024.1's store weights), and tempest's import waiter compares
    that list with the sorted store ids.
    """
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(conf)
    backends = sorted((b.strip() for b in parser.get(
        'DEFAULT', 'enabled_backends').split(',')),
        key=lambda backend: backend.split(':')[0])
    devstack.run('iniset', [conf, 'DEFAULT', 'enabled_backends',
                            ','.join(backends)], log=log)


def uwsgi_ini(etc, port, cwd, venv, workers):
    """The uWSGI ini of a current glance-api: its path under ``etc``.

    ``venv`` is the cached venv's name, ``workers`` uWSGI's processes.
    """
    path = os.path.join(etc, 'glance-api-uwsgi.ini')
    with open(path, 'w') as f:
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
                % (venvs.uwsgi_app(venvs.venv_path(venv),
                                   'glance.wsgi.api', 'glance-wsgi-api'),
                   etc, port, cwd, workers))
    return path
