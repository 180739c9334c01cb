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
"""The stores a glance config builds, and which one serves a location.

What ``fastsheep-locations`` and ``fastsheep-orphans`` check, apart from
how they read their arguments and print: ``Checker`` builds the stores
with glance_store's own code, as glance-api does at start-up
(``multi_backend.create_multi_stores``, or ``backend.create_stores`` for
a single-store config), so every driver computes its own ``url_prefix``
and parses its own locations, and applies glance's rules for a location
that carries no backend id.
"""

import collections

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

# how: what gave the backend. ``store``: the location's own store id;
# ``url_prefix``: glance's attribution; ``search``: glance_store's
# fallback for a location glance attributes to none; ``scheme``: single
# store.
Result = collections.namedtuple('Result', 'location backend how reason')


class ConfigError(ValueError):
    """A glance config the command cannot build stores from."""


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
