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
"""doc/source/migration.rst's procedure against a real glance-api.

``tox -e migration-glance``: glance's own WSGI application (the glance
release installed in the env) on one thread, multi-store with a
``fastsheep`` backend at 127.0.0.11:7000, SQLite, and the unit tests'
fake ``dog`` standing in for the cluster (it logs the sheep each read
went to). Images whose locations were written as a Pike cloud wrote
them (through 127.0.0.11, through 127.0.0.12, pre-Mitaka
``sheepdog://IMAGE``) go into the database directly, since current
glance refuses to add a location it attributes to no backend. Then:

1. download each image; ``fastsheep-locations`` on their ``GET
   /v2/images/ID`` JSON must call unserved exactly the ones glance
   cannot read;
2. record ``{"store": "fast"}`` on those with the same-URL ``replace``
   of ``/locations`` that the page gives; they must download byte-exact,
   the one written through 127.0.0.12 read through that sheep, and the
   command must call them served.

3. in this process, compare the command's attribution with glance's own
   ``store_utils._get_store_id_from_uri`` and ``update_store_in_locations``
   over the stores the command built, for locations of every form on a
   one-backend and a four-backend configuration.

Exit status 0 when every check holds. Everything started is stopped.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from urllib import error as urlerror
from urllib import request as urlrequest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE_DOG = os.path.join(ROOT, 'glance_store_fastsheep', 'tests', 'unit',
                        'fake_dog.py')
HEADERS = {'X-Identity-Status': 'Confirmed',
           'X-Roles': 'admin,member,reader',
           'X-Project-Id': 'migration-check', 'X-User-Id': 'operator'}
SERVE = '''
import sys
from wsgiref import simple_server
from glance.wsgi import api
server = simple_server.make_server('127.0.0.1', 0, api.application)
with open(sys.argv[1], 'w') as port:
    port.write(str(server.server_address[1]))
server.serve_forever()
'''
CONF = '''[DEFAULT]
enabled_backends = fast:fastsheep, fs:file
enabled_import_methods = [glance-direct]
show_multiple_locations = true
log_file = {tmp}/glance-api.log

[glance_store]
default_backend = fast

[fast]
# The fake dog: the native client would connect to the address.
sheepdog_store_client = dog
sheepdog_store_address = 127.0.0.11
sheepdog_store_port = 7000

[fs]
filesystem_store_datadir = {tmp}/images/

[os_glance_staging_store]
filesystem_store_datadir = {tmp}/staging/

[os_glance_tasks_store]
filesystem_store_datadir = {tmp}/tasks/

[database]
connection = sqlite:///{tmp}/glance.sqlite

[paste_deploy]
flavor = trusted
config_file = {tmp}/etc/glance-api-paste.ini

[oslo_policy]
enforce_new_defaults = false
'''


class Check(object):

    def __init__(self, tmp):
        self.tmp = tmp
        self.failures = []

    def expect(self, what, got, wanted):
        ok = got == wanted
        print('%-4s %s: %r' % ('ok' if ok else 'FAIL', what, got))
        if not ok:
            self.failures.append('%s: %r, wanted %r' % (what, got, wanted))

    def call(self, method, path, body=None, ctype='application/json'):
        req = urlrequest.Request(self.url + path, data=body, method=method,
                                 headers=dict(HEADERS))
        if body is not None:
            req.add_header('Content-Type', ctype)
        try:
            resp = urlrequest.urlopen(req, timeout=60)
        except urlerror.HTTPError as exc:
            return exc.code, exc.read()
        return resp.status, resp.read()

    def image(self, name):
        status, body = self.call('POST', '/v2/images', json.dumps({
            'name': name, 'disk_format': 'raw', 'container_format': 'bare',
            'visibility': 'private'}).encode())
        assert status == 201, (status, body)
        return json.loads(body)['id']

    def locations(self, ids):
        """fastsheep-locations on the images' JSON: {uri: backend or None}."""
        shows = [self.call('GET', '/v2/images/' + i)[1].decode() for i in ids]
        path = os.path.join(self.tmp, 'images.json')
        with open(path, 'w') as out:
            out.write('\n'.join(shows))
        proc = subprocess.Popen(
            [os.path.join(sys.prefix, 'bin', 'fastsheep-locations'),
             '--config-file', self.conf, path],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        out, _err = proc.communicate()
        found = {}
        for line in out.decode().splitlines():
            words = line.split()
            if line.startswith('served'):
                found[words[2]] = words[1]
            elif line.startswith('UNSERVED'):
                found[words[2].rstrip(':')] = None
        return proc.returncode, found

    def run(self):
        tmp = self.tmp
        for sub in ('etc', 'bin', 'vdis', 'images', 'staging', 'tasks'):
            os.mkdir(os.path.join(tmp, sub))
        dog = os.path.join(tmp, 'bin', 'dog')
        with open(dog, 'w') as script:
            script.write('#!/bin/sh\nexec %s %s "$@"\n'
                         % (sys.executable, FAKE_DOG))
        os.chmod(dog, 0o755)
        paste = os.path.join(tmp, 'etc', 'glance-api-paste.ini')
        with open(os.path.join(sys.prefix, 'etc', 'glance',
                               'glance-api-paste.ini')) as source:
            text = source.read()
        # No keystone: a pipeline that trusts identity headers.
        text = text.replace(
            '[composite:api]\npaste.composite_factory = '
            'glance.api:pipeline_factory\n',
            '[composite:api]\npaste.composite_factory = '
            'glance.api:pipeline_factory\ntrusted = cors http_proxy_to_wsgi '
            'versionnegotiation osprofiler context rootapp\n')
        text += ('\n[composite:glance-api-trusted]\n'
                 'paste.composite_factory = glance.api:root_app_factory\n'
                 '/: api\n/healthcheck: healthcheck\n')
        with open(paste, 'w') as out:
            out.write(text)
        self.conf = os.path.join(tmp, 'etc', 'glance-api.conf')
        with open(self.conf, 'w') as out:
            out.write(CONF.format(tmp=tmp))
        self.vdis = os.path.join(tmp, 'vdis')
        self.env = dict(os.environ,
                        PATH='%s:%s' % (os.path.join(tmp, 'bin'),
                                        os.environ['PATH']),
                        OS_GLANCE_CONFIG_DIR=os.path.join(tmp, 'etc'),
                        FAKE_DOG_DIR=self.vdis,
                        FAKE_DOG_LOG=os.path.join(tmp, 'dog.log'))
        subprocess.check_call(
            [os.path.join(sys.prefix, 'bin', 'glance-manage'),
             '--config-file', self.conf, 'db_sync'],
            stdout=open(os.path.join(tmp, 'db_sync.log'), 'w'),
            stderr=subprocess.STDOUT, env=self.env)
        port_file = os.path.join(tmp, 'port')
        server = subprocess.Popen(
            [sys.executable, '-c', SERVE, port_file],
            stdout=open(os.path.join(tmp, 'server.log'), 'w'),
            stderr=subprocess.STDOUT, env=self.env)
        try:
            self._wait(server, port_file)
            self._checks()
        finally:
            server.terminate()
            server.wait()
        return self.failures

    def _wait(self, server, port_file):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise RuntimeError('glance-api exited: see %s/server.log'
                                   % self.tmp)
            if os.path.exists(port_file) and os.path.getsize(port_file):
                with open(port_file) as port:
                    self.url = 'http://127.0.0.1:%s' % port.read()
                try:
                    if self.call('GET', '/v2/images')[0] == 200:
                        return
                except urlerror.URLError:
                    pass
            time.sleep(0.5)
        raise RuntimeError('glance-api did not answer in 120 s')

    def _checks(self):
        written = {}
        for name, form in (('via11', 'sheepdog://127.0.0.11:7000:%s'),
                           ('via12', 'sheepdog://127.0.0.12:7000:%s'),
                           ('premitaka', 'sheepdog://%s')):
            image_id = self.image(name)
            data = os.urandom(50000)
            with open(os.path.join(self.vdis, image_id), 'wb') as vdi:
                vdi.write(data)
            written[name] = (image_id, form % image_id, data)
        # One writer at a time: glance-api's SQLite is idle now.
        db = sqlite3.connect(os.path.join(self.tmp, 'glance.sqlite'))
        for image_id, uri, _data in written.values():
            db.execute("UPDATE images SET status = 'active', size = 50000 "
                       "WHERE id = ?", (image_id,))
            db.execute("INSERT INTO image_locations (image_id, value, "
                       "created_at, deleted, meta_data, status) VALUES "
                       "(?, ?, datetime('now'), 0, '{}', 'active')",
                       (image_id, uri))
        db.commit()
        db.close()
        ids = [written[n][0] for n in ('via11', 'via12', 'premitaka')]

        def download(name):
            status, body = self.call('GET',
                                     '/v2/images/%s/file' % written[name][0])
            return status, body == written[name][2]

        self.expect('via11 download before', download('via11'), (200, True))
        self.expect('via12 download before', download('via12'), (204, False))
        self.expect('premitaka download before', download('premitaka'),
                    (204, False))
        status, found = self.locations(ids)
        self.expect('command before: exit status', status, 1)
        self.expect('command before: backends', found, {
            written['via11'][1]: 'fast', written['via12'][1]: None,
            written['premitaka'][1]: None})
        for name in ('via12', 'premitaka'):
            image_id, uri, _data = written[name]
            patch = json.dumps([{'op': 'replace', 'path': '/locations',
                                 'value': [{'url': uri, 'metadata': {
                                     'store': 'fast'}}]}]).encode()
            status, _body = self.call(
                'PATCH', '/v2/images/' + image_id, patch,
                'application/openstack-images-v2.1-json-patch')
            self.expect('%s store id recorded' % name, status, 200)
        with open(os.path.join(self.tmp, 'dog.log')) as log:
            before = len(log.readlines())
        self.expect('via12 download after', download('via12'), (200, True))
        self.expect('premitaka download after', download('premitaka'),
                    (200, True))
        with open(os.path.join(self.tmp, 'dog.log')) as log:
            reads = [line.split() for line in log.readlines()[before:]]
        self.expect('sheep read through', [
            args[args.index('-a') + 1] for args in reads
            if args[1:3] == ['vdi', 'read']], ['127.0.0.12', '127.0.0.11'])
        status, found = self.locations(ids)
        self.expect('command after: exit status', status, 0)
        self.expect('command after: backends', found, {
            written['via11'][1]: 'fast', written['via12'][1]: 'fast',
            written['premitaka'][1]: 'fast'})


PARITY_CONFS = {
    'one backend': (
        '[DEFAULT]\nenabled_backends = fast:fastsheep, fs:file, web:http\n'
        '[glance_store]\ndefault_backend = fast\n'
        '[fast]\nsheepdog_store_address = 127.0.0.11\n'
        'sheepdog_store_client = dog\n'
        '[fs]\nfilesystem_store_datadir = {tmp}/images\n'),
    'one backend per sheep': (
        '[DEFAULT]\nenabled_backends = b:fastsheep, a:fastsheep, '
        'c:fastsheep, a2:fastsheep\n'
        '[glance_store]\ndefault_backend = a\n'
        '[backend_defaults]\nsheepdog_store_port = 7001\n'
        'sheepdog_store_client = dog\n'
        '[a]\nsheepdog_store_address = 127.0.0.11\n'
        '[a2]\nsheepdog_store_address = 127.0.0.11\n'
        '[b]\nsheepdog_store_address = 127.0.0.12\n'
        'sheepdog_store_port = 7000\n'
        '[c]\nsheepdog_store_address = fd00::11\n'),
}
PARITY_URIS = [
    'sheepdog://127.0.0.11:7000:a', 'sheepdog://127.0.0.11:7001:a',
    'sheepdog://127.0.0.12:7000:b', 'sheepdog://127.0.0.12:7001:b',
    'sheepdog://fd00::11:7001:c', 'sheepdog://fd00::11:7000:c',
    'sheepdog://plain', 'fastsheep://127.0.0.11:7000:a',
    'file://{tmp}/images/x', 'file:///elsewhere/y', 'http://h/z',
    'https://h/z', 'swift://a/b/c']
PARITY_METADATA = [{}, {'store': 'fast'}, {'store': 'a'},
                   {'store': 'gone'}, {'store': 'fs'}]


def parity(tmp):
    """Mismatches between the command's attribution and glance's own."""
    from unittest import mock

    from glance.common import store_utils

    from glance_store_fastsheep.cmd import glance_stores
    from glance_store_fastsheep.cmd import locations

    os.makedirs(os.path.join(tmp, 'images'), exist_ok=True)
    mismatches = []
    counted = [0, 0]
    for name, text in sorted(PARITY_CONFS.items()):
        path = os.path.join(tmp, 'parity.conf')
        with open(path, 'w') as out:
            out.write(text.format(tmp=tmp))
        checker = glance_stores.Checker(locations.load_config(
            ['--config-file', path]))
        for uri in (u.format(tmp=tmp) for u in PARITY_URIS):
            counted[0] += 1
            ours = checker._backend_by_prefix(uri)
            theirs = store_utils._get_store_id_from_uri(uri)
            if ours != theirs:
                mismatches.append((name, uri, ours, theirs))
            for metadata in PARITY_METADATA:
                counted[1] += 1
                image = mock.Mock(locations=[{'url': uri,
                                              'metadata': dict(metadata)}])
                with mock.patch.object(store_utils, 'CONF', mock.Mock(
                        enabled_backends=checker.backends)):
                    store_utils.update_store_in_locations(
                        mock.Mock(), image, mock.Mock())
                recorded = image.locations[0]['metadata'].get('store')
                if recorded not in checker.backends:
                    recorded = None  # a stale id glance could not replace
                store = metadata.get('store')
                ours = (store if store in checker.backends
                        else checker._backend_by_prefix(uri))
                if ours != recorded:
                    mismatches.append((name, uri, metadata, ours, recorded))
    print('parity with glance: %d prefix attributions, %d recorded store '
          'ids, %d mismatches' % (counted[0], counted[1], len(mismatches)))
    for mismatch in mismatches:
        print('FAIL parity %r' % (mismatch,))
    return mismatches


def main():
    tmp = tempfile.mkdtemp(prefix='migration-glance-')
    try:
        failures = Check(tmp).run()
        os.environ['PATH'] = '%s:%s' % (os.path.join(tmp, 'bin'),
                                        os.environ['PATH'])
        os.environ['FAKE_DOG_DIR'] = os.path.join(tmp, 'vdis')
        failures.extend(parity(tmp))
    except Exception:
        print('logs kept in %s' % tmp)
        raise
    if failures:
        print('%d check(s) failed; logs kept in %s' % (len(failures), tmp))
        return 1
    shutil.rmtree(tmp)
    print('every check held (glance %s)' % _glance_version())
    return 0


def _glance_version():
    from importlib import metadata
    return metadata.version('glance')


if __name__ == '__main__':
    sys.exit(main())
