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
"""``fastsheep-locations`` on generated configs, through glance_store.

The stores are built by the installed glance_store (0.22.0 in py27, the
newest in py3, each line's in line-*), so what a test expects is what
that glance_store's own location code does with the config. The
``dog`` on PATH is the fake one: configuring a fastsheep backend asks
its cluster to answer, and the fake answers for any address.
"""

import json
import os

import fixtures
from glance_store import backend as gs_backend
from glance_store import exceptions
from oslotest import base as oslo_base
import six

from glance_store_fastsheep.cmd import glance_stores
from glance_store_fastsheep.cmd import location_input
from glance_store_fastsheep.cmd import locations
from glance_store_fastsheep import store
from glance_store_fastsheep.tests.unit import base

MULTI = glance_stores.multi_backend is not None
NO_MULTI = ('glance_store before 0.26 (Pike, Queens) has no multi-store; '
            'py3 and line-ussuri on run this test')
DEFAULTS = ('this glance_store has no [backend_defaults] (before 5.0.0, '
            '2025.2); py3 and line-2026.1 run this test')

# A Pike cloud with three glance-api nodes, each talking to the sheep on
# its own host (one cluster), plus what Mitaka and earlier wrote.
# Whether glance-api of this glance_store starts with Pike's
# ``default_store = sheepdog``: the oracle is glance_store's own option.
SHEEPDOG_DEFAULT_ALLOWED = 'sheepdog' in [
    opt for opt in gs_backend._STORE_OPTS
    if opt.dest == 'default_store'][0].type.choices

IMAGES = {
    'via11': 'sheepdog://127.0.0.11:7000:via11',
    'via12': 'sheepdog://127.0.0.12:7000:via12',
    'via13': 'sheepdog://127.0.0.13:7000:via13',
    'via12b': 'sheepdog://127.0.0.12:7000:via12b',
    'ipv6': 'sheepdog://fd00::11:7000:ipv6',
    'premitaka': 'sheepdog://premitaka',
    'web': 'http://images.example.com/cirros.img',
}


class LocationsTest(oslo_base.BaseTestCase):

    def setUp(self):
        super(LocationsTest, self).setUp()
        self.dog = self.useFixture(base.FakeDog())
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.datadir = os.path.join(self.tmp, 'images')
        os.mkdir(self.datadir)
        self.images = dict(IMAGES)
        self.images['local'] = 'file://%s/local' % self.datadir

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as conf:
            conf.write(text)
        return path

    def pike_conf(self, default_store=None):
        """Pike's single-store config, as this glance_store allows it.

        default_store: sheepdog, Pike's, where glance_store still has it
        among its choices (before 1.1.0, Ussuri), else file.
        """
        if default_store is None:
            default_store = ('sheepdog' if SHEEPDOG_DEFAULT_ALLOWED
                             else 'file')
        return self.write('pike.conf', (
            '[glance_store]\n'
            'stores = file,http,fastsheep\n'
            'default_store = %s\n'
            'sheepdog_store_client = dog\n'
            'sheepdog_store_address = 127.0.0.11\n'
            'filesystem_store_datadir = %s\n'
            % (default_store, self.datadir)))

    def multi_conf(self, backends, groups, default):
        """A multi-store config; groups maps a section to its options."""
        lines = ['[DEFAULT]', 'enabled_backends = %s' % ', '.join(
            '%s:%s' % pair for pair in backends), '',
            '[glance_store]', 'default_backend = %s' % default, '']
        ours = set(name for name, kind in backends if kind == 'fastsheep')
        ours.add('backend_defaults')
        for section, options in groups:
            lines.append('[%s]' % section)
            if section in ours:
                # The fake dog, which never opens a connection: the
                # native client would reach for the configured sheep.
                lines.append('sheepdog_store_client = dog')
            lines.extend('%s = %s' % option for option in options)
            lines.append('')
        return self.write('new.conf', '\n'.join(lines))

    def new_conf(self):
        """The multi-store config matching pike_conf, option for option.

        With the other glance-api hosts' sheep as entry points, as
        doc/source/migration.rst has the operator list them (the dog
        client learns no members), and any VDI name served: the fake
        images have short names.
        """
        return self.multi_conf(
            [('fast', 'fastsheep'), ('fs', 'file'), ('web', 'http')],
            [('fast', [('sheepdog_store_address', '127.0.0.11'),
                       ('sheepdog_store_addresses',
                        '127.0.0.12:7000,127.0.0.13:7000'),
                       ('sheepdog_store_serve_any_name', 'true')]),
             ('fs', [('filesystem_store_datadir', self.datadir)])],
            'fast')

    def uri_lines(self):
        return '\n'.join(sorted(self.images.values())) + '\n'

    def load(self, path):
        return locations.load_config(['--config-file', path])

    def served(self, conf, text):
        _checker, results = locations.check_locations(
            self.load(conf), text)
        return dict((r.location.uri, r.backend) for r in results)

    def run_main(self, *args, **kwargs):
        out = six.StringIO()
        err = six.StringIO()
        status = locations.main(list(args), stdin=kwargs.get('stdin'),
                                out=out, err=err)
        return status, out.getvalue(), err.getvalue()

    def unserved_named(self, output):
        return sorted(line.split()[2].rstrip(':')
                      for line in output.splitlines()
                      if line.startswith('UNSERVED'))


class PikeConfigTest(LocationsTest):
    """Pike's single store: the scheme decides, the URI names the sheep."""

    def test_every_location_of_the_cloud_is_served(self):
        served = self.served(self.pike_conf(), self.uri_lines())
        expected = dict((uri, 'fastsheep') for uri in self.images.values()
                        if uri.startswith('sheepdog://'))
        expected[self.images['web']] = 'http'
        expected[self.images['local']] = 'file'
        self.assertEqual(expected, served)

    def test_exit_status_all_served(self):
        path = self.write('locs.txt', self.uri_lines())
        status, out, _err = self.run_main('--config-file', self.pike_conf(),
                                          path)
        self.assertEqual(locations.ALL_SERVED, status)
        self.assertEqual([], self.unserved_named(out))
        self.assertIn('8 location(s): 8 served, 0 served by no backend',
                      out)

    def test_unchanged_pike_config_as_glance_api_takes_it(self):
        path = self.write('locs.txt', self.uri_lines())
        status, out, err = self.run_main(
            '--config-file', self.pike_conf(default_store='sheepdog'), path)
        if SHEEPDOG_DEFAULT_ALLOWED:
            self.assertEqual((locations.ALL_SERVED, ''), (status, err))
        else:
            # glance-api of this release refuses it: so does the command.
            self.assertEqual((locations.ERROR, ''), (status, out))
            self.assertIn('bad config: [glance_store] default_store: ', err)
            self.assertIn("'sheepdog'", err)

    def test_default_store_no_store_has(self):
        path = self.write('locs.txt', self.uri_lines())
        status, out, err = self.run_main(
            '--config-file', self.pike_conf(default_store='rbd'), path)
        self.assertEqual((locations.ERROR, ''), (status, out))
        self.assertIn('default_store rbd: no store of [glance_store] stores '
                      'has that scheme', err)

    def test_scheme_no_store_serves(self):
        served = self.served(self.pike_conf(),
                             'swift://acct/container/obj\nrbd://a/b/c/d\n')
        self.assertEqual({'swift://acct/container/obj': None,
                          'rbd://a/b/c/d': None}, served)

    def test_malformed_sheepdog_location(self):
        _checker, results = locations.check_locations(
            self.load(self.pike_conf()), 'sheepdog://127.0.0.11:img\n')
        self.assertIsNone(results[0].backend)
        self.assertIn('127.0.0.11:img', results[0].reason)


class MultiConfigTest(LocationsTest):
    """Current glance: a location without a backend id goes by url_prefix."""

    def setUp(self):
        super(MultiConfigTest, self).setUp()
        if not MULTI:
            self.skipTest(NO_MULTI)

    def test_hold_out_names_exactly_the_unserved(self):
        # Only the locations written through the sheep the new config
        # names (127.0.0.11:7000) and the file and http ones are served.
        path = self.write('locs.txt', self.uri_lines())
        status, out, _err = self.run_main('--config-file', self.new_conf(),
                                          path)
        self.assertEqual(locations.SOME_UNSERVED, status)
        self.assertEqual(sorted([
            'sheepdog://127.0.0.12:7000:via12',
            'sheepdog://127.0.0.12:7000:via12b',
            'sheepdog://127.0.0.13:7000:via13',
            'sheepdog://fd00::11:7000:ipv6',
            'sheepdog://premitaka']), self.unserved_named(out))
        self.assertIn('8 location(s): 3 served, 5 served by no backend', out)
        self.assertIn('2 unserved through sheepdog://127.0.0.12:7000:', out)
        self.assertIn('1 unserved through sheepdog://IMAGE (no address)',
                      out)

    def test_backends_that_serve(self):
        served = self.served(self.new_conf(), self.uri_lines())
        self.assertEqual('fast', served[self.images['via11']])
        self.assertEqual('fs', served[self.images['local']])
        self.assertEqual('web', served[self.images['web']])

    def test_search_by_store_type(self):
        # A location glance attributes to no backend is still read by
        # glance_store's search, which compares the store type, not the
        # scheme: file:// begins with "file", sheepdog:// never with
        # "fastsheep", fastsheep:// does.
        outside = 'file://%s/elsewhere/img' % self.tmp
        text = '\n'.join([outside, self.images['via12'],
                          'fastsheep://127.0.0.12:7000:via12'])
        _checker, results = locations.check_locations(
            self.load(self.new_conf()), text)
        self.assertEqual(
            [(outside, 'fs', 'search'),
             (self.images['via12'], None, None),
             ('fastsheep://127.0.0.12:7000:via12', 'fast', 'search')],
            [(r.location.uri, r.backend, r.how) for r in results])
        status, out, _err = self.run_main(
            '--config-file', self.new_conf(), stdin=six.StringIO(outside))
        self.assertEqual(locations.ALL_SERVED, status)
        self.assertIn('served    fs %s (no backend id' % outside, out)
        self.assertIn("1 served only through glance_store's search", out)

    def test_unserved_only(self):
        path = self.write('locs.txt', self.uri_lines())
        _status, out, _err = self.run_main(
            '--config-file', self.new_conf(), '--unserved-only', path)
        self.assertFalse([line for line in out.splitlines()
                          if line.startswith('served')])
        self.assertEqual(5, len(self.unserved_named(out)))

    def test_one_backend_per_sheep_serves_them_all(self):
        conf = self.multi_conf(
            [('fast11', 'fastsheep'), ('fast12', 'fastsheep'),
             ('fast13', 'fastsheep'), ('fs', 'file'), ('web', 'http')],
            [('fast11', [('sheepdog_store_address', '127.0.0.11')]),
             ('fast12', [('sheepdog_store_address', '127.0.0.12')]),
             ('fast13', [('sheepdog_store_address', '127.0.0.13')]),
             ('fs', [('filesystem_store_datadir', self.datadir)])],
            'fast11')
        served = self.served(conf, self.uri_lines())
        self.assertEqual('fast12', served[self.images['via12']])
        self.assertEqual('fast12', served[self.images['via12b']])
        self.assertEqual('fast13', served[self.images['via13']])
        # Neither names an address any backend's url_prefix starts with.
        self.assertIsNone(served[self.images['ipv6']])
        self.assertIsNone(served[self.images['premitaka']])

    def test_ipv6_backend(self):
        conf = self.multi_conf(
            [('v6', 'fastsheep')],
            [('v6', [('sheepdog_store_address', 'fd00::11')])], 'v6')
        served = self.served(conf, self.uri_lines())
        self.assertEqual('v6', served[self.images['ipv6']])
        self.assertIsNone(served[self.images['via11']])

    def test_first_backend_with_the_prefix_wins(self):
        conf = self.multi_conf(
            [('b', 'fastsheep'), ('a', 'fastsheep')],
            [('a', [('sheepdog_store_address', '127.0.0.11')]),
             ('b', [('sheepdog_store_address', '127.0.0.11')])], 'a')
        served = self.served(conf, self.images['via11'])
        self.assertEqual('b', served[self.images['via11']])

    def test_location_store_metadata_is_kept(self):
        # What an operator sets through the locations API: glance keeps
        # a store id that names an enabled backend.
        images = [{'id': 'img12', 'locations': [
            {'url': self.images['via12'], 'metadata': {'store': 'fast'}}]},
            {'id': 'img13', 'locations': [
                {'url': self.images['via13'],
                 'metadata': {'store': 'gone'}}]}]
        _checker, results = locations.check_locations(
            self.load(self.new_conf()), json.dumps(images))
        self.assertEqual([('img12', 'fast'), ('img13', None)],
                         [(r.location.image, r.backend) for r in results])

    def test_store_metadata_of_another_scheme(self):
        _checker, results = locations.check_locations(
            self.load(self.new_conf()),
            json.dumps({'url': self.images['via11'],
                        'metadata': {'store': 'fs'}}))
        self.assertIsNone(results[0].backend)
        self.assertIn('backend fs cannot read it', results[0].reason)

    def test_cluster_down_keeps_the_prefix(self):
        # glance-api starts with a cluster down (reads stay enabled); the
        # backend still owns its locations.
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_DOWN', '1'))
        status, out, err = self.run_main(
            '--config-file', self.new_conf(),
            stdin=six.StringIO(self.images['via11'] + '\n'))
        self.assertEqual(locations.ALL_SERVED, status, out + err)
        self.assertIn('served    fast %s' % self.images['via11'], out)

    def test_backend_without_prefix_is_reported(self):
        # No dog at all. A driver that cannot configure its dog client
        # gets no url_prefix, as in glance-api on such a host, and owns
        # no location that lacks a backend id: the command says so.
        self.useFixture(fixtures.EnvironmentVariable('PATH', self.tmp))
        conf = self.multi_conf(
            [('fast', 'fastsheep')],
            [('fast', [('sheepdog_store_address', '127.0.0.11')])], 'fast')
        status, out, err = self.run_main(
            '--config-file', conf,
            stdin=six.StringIO(self.images['via11']))
        checker, _results = locations.check_locations(
            self.load(conf), self.images['via11'])
        # configure_add refuses the settings before it sets the prefix.
        self.assertIsNone(checker.prefixes['fast'])
        self.assertEqual(locations.SOME_UNSERVED, status)
        self.assertIn('backend fast has no url_prefix', err)


class GlanceStoreReadTest(LocationsTest):
    """The command's verdicts against glance_store's own read path.

    glance reads a location with ``multi_backend.get(url, store id)``,
    the store id being what glance recorded (None when it attributed the
    location to no backend).
    """

    def setUp(self):
        super(GlanceStoreReadTest, self).setUp()
        if not MULTI:
            self.skipTest(NO_MULTI)
        for name in ('via11', 'via12', 'premitaka'):
            self.dog.put(name, name.encode('ascii') * 1000)
        text = '\n'.join(self.images[name]
                         for name in ('via11', 'via12', 'premitaka'))
        checker, self.results = locations.check_locations(
            self.load(self.new_conf()), text)
        # glance_store reads its module's global configuration.
        self.useFixture(fixtures.MockPatchObject(
            glance_stores.multi_backend, 'CONF', checker.conf))

    def read(self, uri, backend):
        data, _size = glance_stores.multi_backend.get(uri, backend)
        return b''.join(data)

    def reads_through(self):
        return [args[args.index('-a') + 1] for args in self.dog.calls()
                if args[:2] == ['vdi', 'read']]

    def test_served_and_unserved_as_glance_reads_them(self):
        for result in self.results:
            uri = result.location.uri
            name = uri.rsplit(':', 1)[-1].rsplit('/', 1)[-1]
            if result.backend is None:
                self.assertRaises(exceptions.NotFound, self.read, uri, None)
            else:
                self.assertEqual(name.encode('ascii') * 1000,
                                 self.read(uri, result.backend))
        self.assertEqual(['fast', None, None],
                         [r.backend for r in self.results])

    def test_recorded_store_id_reads_through_the_uri_sheep(self):
        # What doc/source/migration.rst has the operator set.
        self.assertEqual(b'via12' * 1000,
                         self.read(self.images['via12'], 'fast'))
        self.assertEqual(b'premitaka' * 1000,
                         self.read(self.images['premitaka'], 'fast'))
        # The location's own sheep; the backend's for sheepdog://IMAGE.
        self.assertEqual(['127.0.0.12', '127.0.0.11'], self.reads_through())


class BackendDefaultsTest(LocationsTest):
    """Options every sheepdog backend shares, in ``[backend_defaults]``."""

    def setUp(self):
        super(BackendDefaultsTest, self).setUp()
        if not hasattr(store.driver, 'BackendGroupConfiguration'):
            self.skipTest(DEFAULTS)

    def test_port_from_backend_defaults(self):
        conf = self.multi_conf(
            [('fast11', 'fastsheep'), ('fast12', 'fastsheep')],
            [('backend_defaults', [('sheepdog_store_port', '7001')]),
             ('fast11', [('sheepdog_store_address', '127.0.0.11')]),
             ('fast12', [('sheepdog_store_address', '127.0.0.12'),
                         ('sheepdog_store_port', '7000')])], 'fast11')
        served = self.served(conf, '\n'.join([
            'sheepdog://127.0.0.11:7001:a', 'sheepdog://127.0.0.11:7000:b',
            'sheepdog://127.0.0.12:7000:c', 'sheepdog://127.0.0.12:7001:d']))
        self.assertEqual({'sheepdog://127.0.0.11:7001:a': 'fast11',
                          'sheepdog://127.0.0.11:7000:b': None,
                          'sheepdog://127.0.0.12:7000:c': 'fast12',
                          'sheepdog://127.0.0.12:7001:d': None}, served)


class NoMultiStoreTest(LocationsTest):
    """A multi-store config where glance_store has no multi-store."""

    def setUp(self):
        super(NoMultiStoreTest, self).setUp()
        if MULTI:
            self.skipTest('this glance_store has multi-store '
                          '(MultiConfigTest); py27 and line-queens run '
                          'this test')

    def test_refused_with_a_reason(self):
        status, _out, err = self.run_main(
            '--config-file', self.new_conf(),
            stdin=six.StringIO(self.images['via11']))
        self.assertEqual(locations.ERROR, status)
        self.assertIn('has no multi-store', err)


class BadConfigTest(LocationsTest):

    def check_error(self, conf, text):
        status, out, err = self.run_main('--config-file', conf,
                                         stdin=six.StringIO(self.images[
                                             'via11']))
        self.assertEqual(locations.ERROR, status)
        self.assertEqual('', out)
        self.assertIn('bad config', err)
        self.assertIn(text, err)

    def test_missing_file(self):
        self.check_error(os.path.join(self.tmp, 'nope.conf'), 'nope.conf')

    def test_no_file_given_nor_found(self):
        self.useFixture(fixtures.MockPatch(
            'oslo_config.cfg.find_config_files', return_value=[]))
        status, out, err = self.run_main(stdin=six.StringIO('sheepdog://a'))
        self.assertEqual(locations.ERROR, status)
        self.assertEqual('', out)
        self.assertIn('no glance-api.conf found', err)

    def test_unparsable_file(self):
        self.check_error(self.write('bad.conf', 'no section here\n'),
                         'bad.conf')

    def test_store_not_installed(self):
        self.check_error(self.write('pike.conf', (
            '[glance_store]\nstores = file,nosuchdriver\n'
            'filesystem_store_datadir = %s\n' % self.datadir)),
            'nosuchdriver')

    def test_backend_not_installed(self):
        if not MULTI:
            self.skipTest(NO_MULTI)
        self.check_error(self.multi_conf(
            [('fast', 'fastsheep'), ('odd', 'nosuchdriver')],
            [('fast', [('sheepdog_store_address', '127.0.0.11')])], 'fast'),
            'odd')

    def test_default_backend_unknown(self):
        if not MULTI:
            self.skipTest(NO_MULTI)
        self.check_error(self.multi_conf(
            [('fast', 'fastsheep')],
            [('fast', [('sheepdog_store_address', '127.0.0.11')])], 'slow'),
            'default_backend slow is not in')

    def test_default_backend_unset(self):
        if not MULTI:
            self.skipTest(NO_MULTI)
        self.check_error(self.write('new.conf', (
            '[DEFAULT]\nenabled_backends = fast:fastsheep\n'
            '[fast]\nsheepdog_store_client = dog\n')),
            'default_backend is not set')


class InputTest(LocationsTest):
    """Locations as URIs or as the JSON the client and the API print."""

    def parse(self, text):
        return [(loc.image, loc.uri, loc.metadata)
                for loc in location_input.parse_locations(text)]

    def test_uri_lines_with_comments(self):
        self.assertEqual(
            [(None, 'sheepdog://a', {}), (None, 'http://b/c', {})],
            self.parse('# from the database\n\nsheepdog://a\n  http://b/c\n'))

    def test_image_show_objects_one_after_another(self):
        one = {'id': 'i1', 'name': 'one', 'locations': [
            {'url': 'sheepdog://127.0.0.12:7000:i1',
             'metadata': {}}]}
        two = {'id': 'i2', 'direct_url': 'sheepdog://i2'}
        text = (json.dumps(one, indent=2) + '\n' +
                json.dumps(two, indent=2) + '\n')
        self.assertEqual([('i1', 'sheepdog://127.0.0.12:7000:i1', {}),
                          ('i2', 'sheepdog://i2', {})], self.parse(text))

    def test_api_image_list(self):
        text = json.dumps({'images': [{'id': 'i1', 'locations': [
            {'url': 'sheepdog://a', 'metadata': {'store': 'fast'}},
            {'url': 'http://b/c', 'metadata': {}}]}]})
        self.assertEqual([('i1', 'sheepdog://a', {'store': 'fast'}),
                          ('i1', 'http://b/c', {})], self.parse(text))

    def test_openstack_image_show_properties(self):
        # openstackclient's _format_image moves every field it does not
        # list itself, locations and direct_url among them, into
        # properties.
        text = json.dumps([
            {'id': 'i1', 'name': 'one', 'properties': {
                'locations': [{'url': 'sheepdog://a', 'metadata': {}}],
                'direct_url': 'sheepdog://a'}},
            {'id': 'i2', 'properties': {'direct_url': 'sheepdog://b',
                                        'os_hash_algo': 'sha512'}}])
        self.assertEqual([('i1', 'sheepdog://a', {}),
                          ('i2', 'sheepdog://b', {})], self.parse(text))

    def test_image_list_long_has_no_locations(self):
        text = json.dumps([{'ID': 'i1', 'Name': 'cirros',
                            'Disk Format': 'qcow2', 'Status': 'active'}])
        exc = self.assertRaises(location_input.InputError, self.parse, text)
        self.assertIn('image i1 carries no locations', str(exc))
        self.assertIn('openstack image show -f json', str(exc))

    def test_bad_json(self):
        exc = self.assertRaises(location_input.InputError, self.parse,
                                '[{"id": "i1",')
        self.assertIn('bad JSON', str(exc))

    def test_not_a_uri(self):
        exc = self.assertRaises(location_input.InputError, self.parse,
                                'sheepdog://a\nimage-name\n')
        self.assertIn("line 2: 'image-name' is not a URI", str(exc))

    def test_empty(self):
        self.assertRaises(location_input.InputError, self.parse, '\n \n')

    def test_malformed_json_exits_error(self):
        # Exit 1 says "some locations unserved": never for bad input, nor
        # by a traceback (which exits 1 too).
        conf = self.pike_conf()
        for text in ('{"locations": [{"metadata": {}}]}',
                     '{"locations": [5]}',
                     '{"url": 5}',
                     '[{"url": null}]',
                     '{"direct_url": 5}',
                     '{"locations": "sheepdog://a"}',
                     '{"id": "i1", "locations": {"url": "sheepdog://a"}}',
                     '{"properties": {"locations": 7}}',
                     '{"url": "sheepdog://a", "metadata": "x"}',
                     '"image-name"'):
            status, out, err = self.run_main('--config-file', conf,
                                             stdin=six.StringIO(text))
            self.assertEqual((locations.ERROR, ''), (status, out), text)
            self.assertIn('fastsheep-locations: bad input: JSON value at '
                          'character 0: ', err)

    def test_bad_input_exit_status(self):
        status, out, err = self.run_main(
            '--config-file', self.pike_conf(),
            os.path.join(self.tmp, 'missing.txt'))
        self.assertEqual(locations.ERROR, status)
        self.assertEqual('', out)
        self.assertIn('bad input: cannot read', err)
