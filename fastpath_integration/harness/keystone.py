"""keystone under uWSGI, as devstack's lib/keystone deploys it.

Fernet tokens, ``keystone-manage bootstrap`` (the admin user, project
and roles, RegionOne and the identity endpoints), then a ``service``
project with the service users a deployment gives its services (glance
validates tokens as its ``glance`` user), and the catalog entries of the
services once they listen (``add_service``). The database is one of the
harness's PostgreSQL databases; ports are free ones.

After set-up: ``url`` (the identity endpoint, ``/v3`` included),
``admin_password``, ``region`` and ``passwords`` (``{service user:
password}``).
"""

import grp
import logging
import os
import pwd
import signal
import uuid

import fixtures
import requests

from fastpath_integration.harness import devstack
from fastpath_integration.harness import host
from fastpath_integration.harness import processes
from fastpath_integration.harness import venvs

LOG = logging.getLogger(__name__)

REGION = 'RegionOne'
DOMAIN = 'default'
SERVICE_PROJECT = 'service'


class Keystone(fixtures.Fixture):
    """keystone-wsgi-public under uWSGI, bootstrapped.

    ``venv``: the cached venv keystone is installed in (the line's
    services venv); ``db_url``: its PostgreSQL database;
    ``service_users``: the users made in the ``service`` project with
    the ``admin`` and ``service`` roles, as devstack gives them.
    """

    def __init__(self, rundir, venv, db_url, service_users=('glance',)):
        super(Keystone, self).__init__()
        self.rundir = rundir
        self.venv_service = venv
        self.db_url = db_url
        self.service_users = service_users
        self.region = REGION
        self.admin_password = uuid.uuid4().hex
        self.passwords = {}

    def _setUp(self):
        venv = venvs.ensure_venv(self.venv_service)
        bindir = os.path.join(venv, 'bin')
        base = os.path.join(self.rundir, 'keystone')
        etc = os.path.join(base, 'etc')
        os.makedirs(etc)
        port = host.free_port()
        self.url = 'http://127.0.0.1:%d/v3' % port
        conf = os.path.join(etc, 'keystone.conf')
        devstack.write_ini(conf, [
            ('DEFAULT', 'log_file', os.path.join(self.rundir,
                                                 'keystone.log')),
            ('database', 'connection', self.db_url.replace(
                'postgresql://', 'postgresql+psycopg2://')),
            ('token', 'provider', 'fernet'),
            ('fernet_tokens', 'key_repository',
             os.path.join(base, 'fernet-keys')),
            ('fernet_receipts', 'key_repository',
             os.path.join(base, 'fernet-keys')),
            ('credential', 'key_repository',
             os.path.join(base, 'credential-keys')),
        ])
        env = venvs.venv_env(venv)
        log = os.path.join(self.rundir, 'keystone-manage.log')
        manage = [os.path.join(bindir, 'keystone-manage'),
                  '--config-file', conf]
        # The key repositories belong to the user uWSGI runs as: us.
        owner = ['--keystone-user', pwd.getpwuid(os.getuid()).pw_name,
                 '--keystone-group', grp.getgrgid(os.getgid()).gr_name]
        for args in (['db_sync'], ['fernet_setup'] + owner,
                     ['credential_setup'] + owner,
                     ['bootstrap',
                      '--bootstrap-password', self.admin_password,
                      '--bootstrap-region-id', self.region,
                      '--bootstrap-admin-url', self.url,
                      '--bootstrap-internal-url', self.url,
                      '--bootstrap-public-url', self.url]):
            processes.run(manage + args, log=log, env=env, cwd=base)
        ini = os.path.join(etc, 'keystone-uwsgi.ini')
        with open(ini, 'w') as f:
            # What devstack's write_uwsgi_config writes, on a port.
            f.write('[uwsgi]\n'
                    '%s\n'
                    'env = OS_KEYSTONE_CONFIG_FILES=%s\n'
                    'http-socket = 127.0.0.1:%d\n'
                    'chdir = %s\n'
                    'master = true\nprocesses = 2\nthreads = 2\n'
                    'enable-threads = true\nsingle-interpreter = true\n'
                    'lazy-apps = true\nneed-app = true\n'
                    'die-on-term = true\nbuffer-size = 65535\n'
                    'add-header = Connection: close\n' % (
                        venvs.uwsgi_app(venv, 'keystone.wsgi.api',
                                        'keystone-wsgi-public'),
                        conf, port, base))
        service = self.useFixture(processes.Service(
            'keystone', [os.path.join(bindir, 'uwsgi'), '--ini', ini],
            os.path.join(self.rundir, 'keystone-server.log'), env=env,
            cwd=base, stop_signal=signal.SIGINT))
        service.wait_ready(
            lambda: requests.get(self.url, timeout=5).status_code == 200,
            120)
        self.pid = service.pid
        self._service_users()
        LOG.info('keystone: %s (fernet, region %s)', self.url, self.region)

    # -- the admin API -----------------------------------------------------

    def admin_token(self):
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': 'admin', 'domain': {'id': DOMAIN},
                'password': self.admin_password}}},
            'scope': {'project': {'name': 'admin',
                                  'domain': {'id': DOMAIN}}}}}
        resp = requests.post(self.url + '/auth/tokens', json=body,
                             timeout=30)
        resp.raise_for_status()
        return resp.headers['X-Subject-Token']

    def _call(self, method, path, token, body=None):
        resp = requests.request(method, self.url + path, json=body,
                                headers={'X-Auth-Token': token}, timeout=30)
        if resp.status_code >= 400:
            raise RuntimeError('keystone %s %s: %d %s' % (
                method, path, resp.status_code, resp.text))
        return resp.json() if resp.content else None

    def _id(self, token, collection, name):
        found = self._call('GET', '/%s?name=%s' % (collection, name),
                           token)[collection]
        return found[0]['id']

    def _service_users(self):
        token = self.admin_token()
        project = self._call('POST', '/projects', token, {'project': {
            'name': SERVICE_PROJECT, 'domain_id': DOMAIN}})['project']['id']
        # ``service`` is the role services' policies know them by;
        # bootstrap makes it from keystone 2024.2 on.
        if not self._call('GET', '/roles?name=service', token)['roles']:
            self._call('POST', '/roles', token,
                       {'role': {'name': 'service'}})
        roles = [self._id(token, 'roles', name)
                 for name in ('admin', 'service')]
        for name in self.service_users:
            password = uuid.uuid4().hex
            user = self._call('POST', '/users', token, {'user': {
                'name': name, 'domain_id': DOMAIN, 'password': password,
                'default_project_id': project}})['user']['id']
            for role in roles:
                self._call('PUT', '/projects/%s/users/%s/roles/%s' % (
                    project, user, role), token)
            self.passwords[name] = password

    def add_service(self, service_type, name, url):
        """The service and its public, internal and admin endpoints."""
        token = self.admin_token()
        service = self._call('POST', '/services', token, {'service': {
            'type': service_type, 'name': name}})['service']['id']
        for interface in ('public', 'internal', 'admin'):
            self._call('POST', '/endpoints', token, {'endpoint': {
                'service_id': service, 'interface': interface,
                'region_id': self.region, 'url': url}})

    def authtoken_settings(self, user):
        """glance's [keystone_authtoken] for service user ``user``."""
        auth_url = self.url[:-len('/v3')]
        return [('keystone_authtoken', option, value) for option, value in (
            ('auth_type', 'password'),
            ('auth_url', auth_url),
            ('www_authenticate_uri', auth_url),
            ('username', user),
            ('password', self.passwords[user]),
            ('project_name', SERVICE_PROJECT),
            ('user_domain_id', DOMAIN),
            ('project_domain_id', DOMAIN),
            ('region_name', self.region),
            ('service_token_roles_required', 'true'),
        )]
