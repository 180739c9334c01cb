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
"""``fastsheep-locations``: which backend of a glance config serves a location.

A cloud that leaves Pike's single ``[glance_store]`` for multi-store
config keeps its image locations as they were written. Current glance
gives a location that carries no backend id to the backend whose
``url_prefix`` begins it (glance's ``store_utils._get_store_id_from_uri``,
run lazily by ``authorization.lazy_update_store_info``), so a location
written through another sheep's address, or in the pre-Mitaka
``sheepdog://IMAGE`` form, belongs to no backend and cannot be read. This
command tells the operator which locations a config serves before glance
runs on it.

It builds the stores with glance_store's own code, as glance-api does at
start-up (``multi_backend.create_multi_stores``, or ``backend.create_stores``
for a single-store config), so every driver computes its own
``url_prefix`` and parses its own locations. That also means it configures
every backend as glance-api would: it asks each sheepdog cluster to answer,
and the file store checks (and creates) its directory. Run it where
glance-api runs, as its user, with its config. See
doc/source/migration.rst.
"""

from __future__ import print_function

import collections
import io
import json
import logging
import sys

from glance_store import backend as gs_backend
from glance_store import exceptions
from glance_store import location as gs_location
from oslo_config import cfg
import six
from six.moves.urllib import parse as urlparse

try:
    from glance_store import multi_backend
except ImportError:
    # glance_store before 0.26 (Pike, Queens): single store only.
    multi_backend = None

LOG = logging.getLogger(__name__)

# Exit statuses: every location served, some not, or nothing checked.
ALL_SERVED = 0
SOME_UNSERVED = 1
ERROR = 2

Location = collections.namedtuple('Location', 'image uri metadata')
# how: what gave the backend. ``store``: the location's own store id;
# ``url_prefix``: glance's attribution; ``search``: glance_store's
# fallback for a location glance attributes to none; ``scheme``: single
# store.
Result = collections.namedtuple('Result', 'location backend how reason')


class InputError(ValueError):
    """Locations the command cannot read."""


class ConfigError(ValueError):
    """A glance config the command cannot build stores from."""


# glance's own definition (glance/common/config.py); glance_store reads it
# but leaves registering it to the service.
ENABLED_BACKENDS = cfg.DictOpt(
    'enabled_backends',
    help='Key:value pairs of store identifier and store type, as glance '
         'reads them.')

CLI_OPTS = [
    cfg.BoolOpt('unserved-only',
                default=False,
                help='Print only the locations no backend serves.'),
    cfg.StrOpt('locations',
               positional=True,
               required=False,
               default='-',
               help='File of locations (default: standard input): one URI '
                    'per line, or the JSON of `openstack image show -f '
                    'json` (one or several), a list of such objects, or '
                    'glance\'s GET /v2/images.'),
]

DESCRIPTION = ('Say which backend of a glance-api config serves each image '
               'location, and name the ones no backend serves. Exit status: '
               '0 all served, 1 some served by no backend, 2 bad config or '
               'input.')


def load_config(args, cli_opts=None, prog='fastsheep-locations',
                description=DESCRIPTION):
    """A ConfigOpts read as glance-api reads its files, and the CLI options.

    args are command-line arguments: ``--config-file``/``--config-dir``
    as glance-api takes them, else glance-api's own default files.
    cli_opts are the command's own (this one's by default).
    """
    conf = cfg.ConfigOpts()
    conf.register_opt(ENABLED_BACKENDS)
    conf.register_cli_opts(CLI_OPTS if cli_opts is None else cli_opts)
    try:
        conf(args=args, project='glance', prog=prog,
             description=description,
             default_config_files=cfg.find_config_files(
                 project='glance', prog='glance-api'))
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError) as exc:
        raise ConfigError(str(exc))
    if not conf.config_file and not conf.config_dir:
        raise ConfigError('no glance-api.conf found where glance-api looks '
                          'for it; give --config-file')
    return conf


class Checker(object):
    """The stores one glance config builds, and which one serves a URI.

    ``mode`` is ``multi`` (``[DEFAULT] enabled_backends``) or ``single``
    (Pike's ``[glance_store] stores``), whichever the config uses; a
    multi-store config needs a glance_store that has multi-store.
    """

    def __init__(self, conf):
        self.conf = conf
        try:
            backends = conf.enabled_backends
        except cfg.ConfigFileValueError as exc:
            raise ConfigError('[DEFAULT] enabled_backends: %s' % exc)
        self.backends = backends or {}
        if self.backends:
            self.mode = 'multi'
            self._build_multi()
        else:
            self.mode = 'single'
            self._build_single()

    def _build_multi(self):
        if multi_backend is None:
            raise ConfigError(
                'the config sets [DEFAULT] enabled_backends, but the '
                'installed glance_store has no multi-store (before 0.26, '
                'Rocky): run this command where the new release\'s '
                'glance_store is installed')
        # Module state of glance_store: start from the stores of this
        # config only, as a fresh glance-api process does.
        gs_location.SCHEME_TO_CLS_BACKEND_MAP.clear()
        try:
            multi_backend.register_store_opts(self.conf)
            default = self.conf.glance_store.default_backend
            multi_backend.create_multi_stores(self.conf)
        except (cfg.Error, exceptions.GlanceStoreException) as exc:
            raise ConfigError(str(exc))
        # What glance's verify_store() refuses to start with.
        if not default:
            raise ConfigError('[glance_store] default_backend is not set; '
                              'glance-api does not start without it')
        if default not in self.backends:
            raise ConfigError('[glance_store] default_backend %s is not in '
                              '[DEFAULT] enabled_backends (%s)'
                              % (default, ', '.join(sorted(self.backends))))
        self.default = default
        self.prefixes = {}
        for scheme, stores in gs_location.SCHEME_TO_CLS_BACKEND_MAP.items():
            for backend_id, info in stores.items():
                self.prefixes.setdefault(backend_id, _prefix(info['store']))
        missing = [b for b in self.backends if b not in self.prefixes]
        if missing:
            raise ConfigError(
                'glance_store could not load backend(s) %s (types %s): '
                'is the driver installed here?'
                % (', '.join(sorted(missing)),
                   ', '.join(sorted(self.backends[b] for b in missing))))

    def _build_single(self):
        gs_location.SCHEME_TO_CLS_MAP.clear()
        try:
            gs_backend.register_opts(self.conf)
            stores = self.conf.glance_store.stores
            gs_backend.create_stores(self.conf)
        except (cfg.Error, exceptions.GlanceStoreException) as exc:
            raise ConfigError(str(exc))
        entries = set(info['store_entry']
                      for info in gs_location.SCHEME_TO_CLS_MAP.values())
        missing = [name for name in stores if name not in entries]
        if missing:
            raise ConfigError(
                'glance_store could not load store(s) %s listed in '
                '[glance_store] stores: is the driver installed here?'
                % ', '.join(missing))
        self.default = self._default_store()
        self.prefixes = {}

    def _default_store(self):
        """[glance_store] default_store, as glance-api checks it.

        glance-api refuses to start on a value outside the option's
        choices (glance_store 1.1.0, Ussuri, dropped ``sheepdog`` from
        them: a Pike config left as it was) and, in
        ``verify_default_store``, on a scheme no configured store has.
        """
        try:
            default = self.conf.glance_store.default_store
        except cfg.Error as exc:
            raise ConfigError('[glance_store] default_store: %s; glance-api '
                              'does not start with it' % exc)
        if default not in gs_location.SCHEME_TO_CLS_MAP:
            raise ConfigError(
                '[glance_store] default_store %s: no store of [glance_store] '
                'stores has that scheme; glance-api does not start with it'
                % default)
        return default

    def _backend_by_prefix(self, uri):
        """The backend glance gives a location without a backend id.

        The rule of glance's ``glance.common.store_utils.
        _get_store_id_from_uri``: among the stores registered for the
        URI's scheme, in registration order, the first whose
        ``url_prefix`` is set and begins the URI; none otherwise.
        """
        scheme = urlparse.urlparse(uri).scheme
        stores = gs_location.SCHEME_TO_CLS_BACKEND_MAP.get(scheme, {})
        for backend_id, info in stores.items():
            prefix = _prefix(info['store'])
            if prefix and uri.startswith(prefix):
                return backend_id
        return None

    def check(self, loc):
        """A Result: the backend that serves loc, or None and why not."""
        if self.mode == 'multi':
            return self._check_multi(loc)
        return self._check_single(loc)

    def _check_multi(self, loc):
        # glance's update_store_in_locations keeps a ``store`` that names
        # an enabled backend and replaces any other by the prefix rule.
        backend_id = loc.metadata.get('store')
        how = 'store'
        if backend_id not in self.backends:
            backend_id = self._backend_by_prefix(loc.uri)
            how = 'url_prefix'
        if backend_id is not None:
            try:
                gs_location.get_location_from_uri_and_backend(
                    loc.uri, backend_id, conf=self.conf)
            except (exceptions.BadStoreUri, exceptions.UnknownScheme) as exc:
                return Result(loc, None, None, 'backend %s cannot read it: %s'
                              % (backend_id, message(exc)))
            return Result(loc, backend_id, how, None)
        found = self._backend_by_search(loc.uri)
        if found is not None:
            return Result(loc, found, 'search', None)
        scheme = urlparse.urlparse(loc.uri).scheme
        stores = gs_location.SCHEME_TO_CLS_BACKEND_MAP.get(scheme)
        if not stores:
            reason = 'no backend has scheme %s' % (scheme or '(none)')
        else:
            reason = 'no url_prefix of %s begins it' % ', '.join(
                '%s (%s)' % (b, _prefix(stores[b]['store'])) for b in stores)
        return Result(loc, None, None, reason)

    def _backend_by_search(self, uri):
        """The backend glance_store reads a location without backend id from.

        ``multi_backend.get`` and ``delete``, given no backend, try each
        enabled backend whose store *type* (the entry-point name, not the
        scheme) begins the URI and whose location class parses it. A
        ``sheepdog://`` URI never begins with ``fastsheep``; a ``file://``
        one begins with ``file``.
        """
        for backend_id, store_type in self.backends.items():
            if not uri.startswith(store_type):
                continue
            try:
                gs_location.get_location_from_uri_and_backend(
                    uri, backend_id, conf=self.conf)
            except (exceptions.BadStoreUri, exceptions.UnknownScheme):
                continue
            return backend_id
        return None

    def _check_single(self, loc):
        try:
            parsed = gs_location.get_location_from_uri(loc.uri,
                                                       conf=self.conf)
        except (exceptions.BadStoreUri, exceptions.UnknownScheme) as exc:
            return Result(loc, None, None, message(exc))
        info = gs_location.SCHEME_TO_CLS_MAP[parsed.store_name]
        return Result(loc, info['store_entry'], 'scheme', None)


def _prefix(store_instance):
    # glance_store before 1.0.0 (Train) has no url_prefix.
    return getattr(store_instance, 'url_prefix', None)


def message(exc):
    return getattr(exc, 'msg', None) or six.text_type(exc)


def _label(item):
    for key in ('id', 'ID', 'name', 'Name'):
        if item.get(key):
            return six.text_type(item[key])
    return None


def _uri(value, where):
    """value if it is a URI; else InputError, as for a line of text."""
    if not isinstance(value, six.string_types) or '://' not in value:
        raise InputError('%s: %s is not a URI'
                         % (where, json.dumps(value)[:200]))
    return value


def _location(value, image, where):
    """The Location of a location object (url, metadata) or a URI.

    Anything else is an InputError: malformed input must exit ERROR,
    never SOME_UNSERVED (or a traceback, which exits 1 too).
    """
    if isinstance(value, dict):
        if 'url' not in value:
            raise InputError('%s: a location object without "url"' % where)
        metadata = value.get('metadata') or {}
        if not isinstance(metadata, dict):
            raise InputError('%s: the metadata of location %s is not an '
                             'object' % (where, json.dumps(value['url'])))
        return Location(image, _uri(value['url'], where), metadata)
    return Location(image, _uri(value, where), {})


def _locations_of(item, where):
    """The Locations of one JSON value: an image, a location or a URI."""
    if isinstance(item, six.string_types):
        return [_location(item, None, where)]
    if not isinstance(item, dict):
        raise InputError('%s: expected an image object, a location object '
                         'or a URI, got %s' % (where, type(item).__name__))
    if 'url' in item:
        return [_location(item, None, where)]
    image = _label(item)
    # glance's API puts them at the top; ``openstack image show`` moves
    # every field it does not list itself into ``properties``.
    fields = {}
    if isinstance(item.get('properties'), dict):
        fields.update(item['properties'])
    fields.update(item)
    found = fields.get('locations')
    if found:
        if not isinstance(found, list):
            raise InputError('%s: the locations of image %s are not a list'
                             % (where, image or '(no id)'))
        return [_location(loc, image, where) for loc in found]
    if fields.get('direct_url'):
        return [_location(fields['direct_url'], image, where)]
    raise InputError(
        '%s: image %s carries no locations nor direct_url. '
        '`openstack image list --long` never shows locations; give '
        '`openstack image show -f json IMAGE` output (glance shows '
        'locations to admins when show_multiple_locations is true, '
        'direct_url when show_image_direct_url is) or one URI per line'
        % (where, image or '(no id)'))


def parse_locations(text):
    """Locations in text: one URI per line, or JSON.

    JSON may be one value or several one after another (the output of
    ``openstack image show -f json`` run once per image): an image
    object with ``locations`` (or ``direct_url``), a list of them,
    glance's ``{"images": [...]}``, a location object (``url``,
    ``metadata``) or a URI string.
    """
    stripped = text.strip()
    if not stripped:
        raise InputError('no locations given')
    if stripped[0] not in '[{"':
        found = []
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if '://' not in line:
                raise InputError('line %d: %r is not a URI' % (number, line))
            found.append(Location(None, line, {}))
        return found
    decoder = json.JSONDecoder()
    found = []
    position = 0
    while position < len(stripped):
        try:
            value, end = decoder.raw_decode(stripped, position)
        except ValueError as exc:
            raise InputError('bad JSON: %s' % exc)
        where = 'JSON value at character %d' % position
        if isinstance(value, dict) and isinstance(value.get('images'),
                                                  list):
            value = value['images']
        for item in value if isinstance(value, list) else [value]:
            found.extend(_locations_of(item, where))
        position = end
        while position < len(stripped) and stripped[position].isspace():
            position += 1
    return found


def read_input(source_name, stdin=None):
    """The text of file source_name, or of stdin for ``-``."""
    try:
        if source_name == '-':
            text = (stdin or sys.stdin).read()
        else:
            with io.open(source_name, encoding='utf-8') as source:
                text = source.read()
    except (IOError, OSError, UnicodeDecodeError) as exc:
        raise InputError('cannot read %s: %s' % (source_name, exc))
    if isinstance(text, bytes):
        text = text.decode('utf-8')
    return text


def check_locations(conf, text):
    """The Checker of conf and one Result per location in text."""
    checker = Checker(conf)
    return checker, [checker.check(loc) for loc in parse_locations(text)]


def _summary(checker, results, out):
    unserved = [r for r in results if r.backend is None]
    searched = [r for r in results if r.how == 'search']
    print('%d location(s): %d served, %d served by no backend'
          % (len(results), len(results) - len(unserved), len(unserved)),
          file=out)
    if searched:
        print('  %d served only through glance_store\'s search by store type'
              % len(searched), file=out)
    if checker.mode != 'multi':
        return
    # Sheepdog locations that no backend takes, by the sheep they were
    # written through: each such address is a backend to add (same
    # cluster) or a set of locations to re-attribute.
    sheep = {}
    for result in unserved:
        uri = result.location.uri
        if uri.startswith(('sheepdog://', 'fastsheep://')):
            rest = uri.split('://', 1)[1]
            pieces = rest.rsplit(':', 2)
            if len(pieces) == 3:
                through = 'sheepdog://%s:%s:' % tuple(pieces[:2])
            else:
                through = 'sheepdog://IMAGE (no address)'
            sheep[through] = sheep.get(through, 0) + 1
    for prefix, count in sorted(sheep.items()):
        print('  %d unserved through %s' % (count, prefix), file=out)


def command_logging(err):
    """Warnings on err while the stores are built; the handler to remove.

    glance_store lists every installed driver's options; one whose
    library is missing is reported by stevedore, although only the
    configured ones matter (an unloadable one is a ConfigError).
    """
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter('%(levelname)s %(name)s: '
                                           '%(message)s'))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.WARNING)
    logging.getLogger('stevedore').setLevel(logging.CRITICAL)
    return handler


def main(argv=None, stdin=None, out=None, err=None):
    """The console script; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    handler = command_logging(err)
    try:
        conf = load_config(sys.argv[1:] if argv is None else argv)
        text = read_input(conf.locations, stdin)
        checker, results = check_locations(conf, text)
    except ConfigError as exc:
        print('fastsheep-locations: bad config: %s' % exc, file=err)
        return ERROR
    except InputError as exc:
        print('fastsheep-locations: bad input: %s' % exc, file=err)
        return ERROR
    finally:
        logging.getLogger().removeHandler(handler)
    for backend_id, prefix in sorted(checker.prefixes.items()):
        if not prefix:
            print('fastsheep-locations: backend %s has no url_prefix (see '
                  'the warnings above): glance gives it no location that '
                  'lacks a backend id' % backend_id, file=err)
    for result in results:
        loc = result.location
        if result.backend is not None:
            if conf.unserved_only:
                continue
            line = 'served    %s %s' % (result.backend, loc.uri)
            if result.how == 'search':
                line += (' (no backend id: glance_store finds it by store '
                         'type for reads and deletes only)')
        else:
            line = 'UNSERVED  - %s: %s' % (loc.uri, result.reason)
        if loc.image:
            line += ' (image %s)' % loc.image
        print(line, file=out)
    _summary(checker, results, out)
    if any(r.backend is None for r in results):
        return SOME_UNSERVED
    return ALL_SERVED


def console_main():
    sys.exit(main())
