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
"""The glance_store driver: ``fastsheep``, serving ``sheepdog://`` URIs.

Loaded by entry-point name ``fastsheep`` (a second ``sheepdog`` entry
point would collide with the in-tree one and glance would disable both).
It answers to two URI schemes: ``sheepdog``, the form every in-tree
location was written in and the one it writes, and ``fastsheep``, because
current glance_store finds a backend by looking its entry-point name up
as a scheme. The same class works with Pike's ``Store(conf)`` and with
multi-store ``Store(conf, backend)``; ``add`` follows whichever contract
the installed glance_store has.
"""

import binascii
import hashlib
import os
import re

from glance_store import capabilities
from glance_store.common import utils
from glance_store import driver
from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import units

from glance_store_fastsheep import client as client_mod
from glance_store_fastsheep import image_data
from glance_store_fastsheep import names
from glance_store_fastsheep import opts
from glance_store_fastsheep import settings as settings_mod
from glance_store_fastsheep import store_location
from glance_store_fastsheep import store_options
from glance_store_fastsheep import stream

LOG = logging.getLogger(__name__)

# glance_store's base class loads the location class of a driver by name,
# as the ``StoreLocation`` of the module that defines the store.
StoreLocation = store_location.StoreLocation

# glance_store 0.26.0 (Rocky) added hashing_algo and the 5-tuple result.
MULTIHASH = hasattr(driver, 'back_compat_add')


def _hasher(algo):
    get_hasher = getattr(utils, 'get_hasher', None)
    if get_hasher is not None:
        return get_hasher(algo, False)
    return hashlib.new(str(algo))


# What this driver appends to an image id to name the VDI of one upload
# attempt (vdi_name): a '.' and 16 lowercase hex digits.
ATTEMPT_SUFFIX = r'\.[0-9a-f]{16}'
ATTEMPT_BYTES = 8
# The name of a VDI this driver wrote for a glance image: its id, a UUID
# (glance's image schema accepts either case), alone (the in-tree driver
# and releases before per-attempt names) or with an attempt's suffix.
IMAGE_VDI = re.compile(r'^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}'
                       r'(%s)?\Z' % ATTEMPT_SUFFIX)
_SUFFIX_ONLY = re.compile(r'%s\Z' % ATTEMPT_SUFFIX)


def vdi_name(image_id):
    """The name of a new VDI for image_id: unique to this upload attempt.

    The image id, a '.' and 16 random hex digits. No other attempt, of
    this image or another, on this store or another store of the same
    cluster, ever takes it; so a VDI found under it after a ``NEW_VDI``
    whose reply was lost can only be this attempt's own (the client
    adopts it), two backends on one cluster each keep their own copy of
    an image (glance's copy-image, an import to several stores), and a
    failed attempt's leftover never blocks a retry. URI-safe, with no
    ':' (the location's separator) or '@'; within sheep's
    SD_MAX_VDI_LEN (``names.validate_name``).
    """
    suffix = binascii.hexlify(os.urandom(ATTEMPT_BYTES)).decode('ascii')
    return names.validate_name('%s.%s' % (image_id, suffix))


def serves_name(name, image_id):
    """Whether VDI name may be what this driver wrote for image_id.

    The image id itself, or the image id and one attempt's suffix
    (``vdi_name``), nothing looser. Without an image id (glance does
    not always pass it): a UUID, with or without the suffix.
    """
    if image_id:
        return (name == image_id or
                (name.startswith(image_id) and
                 _SUFFIX_ONLY.match(name[len(image_id):]) is not None))
    return IMAGE_VDI.match(name) is not None


class Store(driver.Store):
    """Sheepdog images through the client ``sheepdog_store_client`` names.

    Every operation goes through ``client.Client`` (``native``: sheep's
    protocol, ``dog``: the CLI); the store keeps what glance_store asks
    of a driver: options, locations, ranges, hashing and the result.
    """

    # What the in-tree driver declared, plus ranged reads, which it
    # accepted but ignored and which this driver serves.
    _CAPABILITIES = (capabilities.BitMasks.RW_ACCESS |
                     capabilities.BitMasks.READ_RANDOM |
                     capabilities.BitMasks.DRIVER_REUSABLE)
    OPTIONS = opts.SHEEPDOG_OPTS
    EXAMPLE_URL = 'sheepdog://addr:port:image'

    def __init__(self, conf, backend=None):
        if backend is None:
            # Pike's base class takes no backend argument.
            super(Store, self).__init__(conf)
        else:
            super(Store, self).__init__(conf, backend=backend)
        self.backend_group = backend
        self._settings = None
        self._client = None
        store_options.register_options(self.conf, backend, self.OPTIONS)
        self.store_conf = store_options.store_conf(self.conf, backend)

    def get_schemes(self):
        return store_location.SCHEMES

    @property
    def settings(self):
        """Checked option values; built on first use if never configured."""
        if self._settings is None:
            try:
                self._settings = settings_mod.Settings(self.store_conf)
            except client_mod.ConfigError as exc:
                raise exceptions.BackendException(
                    'fastsheep store misconfigured: %s' % exc)
        return self._settings

    @property
    def client(self):
        """The client of ``settings``; built on first use, as they are."""
        if self._client is None:
            self._client = client_mod.get_client(self.settings)
        return self._client

    def configure_add(self):
        """Check the options; ask whether the cluster answers.

        Only a configuration error raises BadStoreConfiguration, on
        which glance_store disables uploads and deletes for the life of
        the process (and glance, deleting images meanwhile, would leave
        their VDIs behind). A cluster that does not answer now, at any
        entry point, is a WARNING: every operation asks it again and
        fails clearly until it is back, as glance_store's rbd driver
        connects per operation.
        """
        name = self.backend_group or 'fastsheep'
        try:
            current = settings_mod.Settings(self.store_conf)
            configured = client_mod.get_client(current, strict=True)
        except client_mod.ConfigError as exc:
            LOG.error('fastsheep store %s: %s', name, exc)
            raise exceptions.BadStoreConfiguration(store_name=name,
                                                   reason=str(exc))
        self._settings = current
        self._client = configured
        # Current glance attributes a location that carries no backend id
        # (every location a Pike cloud wrote) to the backend whose
        # url_prefix it starts with.
        self._url_prefix = 'sheepdog://%s:%d:' % (current.address,
                                                  current.port)
        self.READ_CHUNKSIZE = current.read_size
        self.WRITE_CHUNKSIZE = current.chunk_size
        store_options.warn_ignored_defaults(self.conf, self.backend_group,
                                            name)
        try:
            self._client.check()
        except client_mod.ClientError as exc:
            LOG.warning('fastsheep store %s: the sheepdog cluster does not '
                        'serve yet; every operation will try again and '
                        'fail until it does: %s', name, exc)
        LOG.info('fastsheep store %s: %s client (%s) at %s:%d, read size '
                 '%d, pipe %d, chunk %d MiB, %d writes in flight', name,
                 current.client, self._client.describe(),
                 current.address, current.port, current.read_size,
                 current.pipe_size, current.chunk_size // units.Mi,
                 current.write_concurrency)

    def _served(self, location, refused):
        """location's store location, once this store may serve it.

        Refused (raised as refused, the glance_store exception the
        caller's glance path handles best) without any connection to the
        location's sheep: a VDI not named like a glance image, unless
        ``sheepdog_store_serve_any_name``; a sheep that is neither an
        entry point nor a member the entry points named.
        """
        loc = location.store_location
        current = self.settings
        shown = store_location.escaped
        if not current.serve_any_name:
            image_id = getattr(location, 'image_id', None)
            if image_id and not serves_name(loc.image, image_id):
                reason = ('it names VDI %s, not the image\'s own %s (or '
                          '%s.<16 hex digits>)'
                          % (shown(loc.image), shown(image_id),
                             shown(image_id)))
                raise refused(message=self._refusal(loc, reason))
            if not image_id and not serves_name(loc.image, None):
                reason = ('VDI %s is not named like a glance image (a '
                          'UUID, or a UUID and .<16 hex digits); '
                          'sheepdog_store_serve_any_name = True serves any '
                          'name' % store_location.escaped(loc.image))
                raise refused(message=self._refusal(loc, reason))
        if not self.client.admits(loc.addr, loc.port):
            reason = ('sheep %s:%d is neither an entry point of this store '
                      '(sheepdog_store_address, sheepdog_store_addresses) '
                      'nor a member they name' % (shown(loc.addr), loc.port))
            raise refused(message=self._refusal(loc, reason))
        return loc

    def _refusal(self, loc, reason):
        message = 'fastsheep store refuses location %s: %s' % (
            store_location.escaped(loc.get_uri()), reason)
        LOG.warning('%s', message)
        return message

    def _location(self, name, address, port):
        specs = {'image': name, 'addr': address, 'port': port}
        if self.backend_group:
            return StoreLocation(specs, self.conf,
                                 backend_group=self.backend_group)
        return StoreLocation(specs, self.conf)

    @capabilities.check
    def get(self, location, offset=0, chunk_size=None, context=None):
        """Return (iterable of bytes, number of bytes it will yield).

        A location this store does not serve: StoreGetNotSupported,
        which glance answers with 400 and the reason.
        """
        loc = self._served(location, exceptions.StoreGetNotSupported)
        size = self.client.size(loc.addr, loc.port, loc.image)
        offset = offset or 0
        if offset < 0 or offset > size:
            raise exceptions.BackendException(
                'offset %d outside sheepdog image %s of %d bytes'
                % (offset, loc.image, size))
        length = size - offset
        if chunk_size is not None:
            length = min(length, chunk_size)
        return (self.client.read(loc.addr, loc.port, loc.image, offset,
                                 length), length)

    def get_size(self, location, context=None):
        """The image's size.

        A location this store does not serve: BadStoreUri, which glance
        answers, when a location is added, with "Invalid location".
        """
        loc = self._served(location, exceptions.BadStoreUri)
        return self.client.size(loc.addr, loc.port, loc.image)

    @capabilities.check
    def delete(self, location, context=None):
        """Delete the VDI; NotFound when missing.

        A location this store does not serve: StoreDeleteNotSupported,
        on which glance deletes the image record with a warning and
        leaves the VDI alone.
        """
        loc = self._served(location, exceptions.StoreDeleteNotSupported)
        self.client.delete(loc.addr, loc.port, loc.image)
        LOG.info('Deleted sheepdog image %s at %s:%d', loc.image, loc.addr,
                 loc.port)

    def _add(self, image_id, image_file, image_size, hashing_algo,
             verifier):
        current = self.settings
        try:
            name = vdi_name(image_id)
        except ValueError as exc:
            raise exceptions.Invalid(message='cannot store image %s in '
                                     'sheepdog: %s' % (image_id, exc))
        checksum = _hasher('md5')
        hashers = [checksum]
        multihash = None
        if hashing_algo == 'md5':
            # back_compat_add asks for md5 when the caller gave no
            # algorithm: the checksum already is that hash.
            multihash = checksum
        elif hashing_algo:
            multihash = _hasher(hashing_algo)
            hashers.append(multihash)
        digest = image_data.Digest(hashers, verifier)
        started = timeutils.now()
        if not image_size or image_size < 0:
            image_size = 0  # unknown: a chunked upload
        transfer = stream.Transfer(current.client, current.address,
                                   current.port, name, image_size)
        # The client deletes what it created when it fails.
        written = self.client.write(name, image_data.Source(image_file),
                                    digest, image_size, transfer)
        elapsed = max(timeutils.now() - started, 1e-6)
        LOG.info('Stored image %s in sheepdog VDI %s at %s:%d (%s client): '
                 '%d bytes in %.2fs (%.1f MB/s), %d failover(s)', image_id,
                 name, current.address, current.port, current.client,
                 written, elapsed, written / elapsed / 1e6,
                 transfer.failovers)
        metadata = {}
        if self.backend_group:
            metadata['store'] = self.backend_group
        uri = self._location(name, current.address, current.port).get_uri()
        return (uri, written, checksum.hexdigest(),
                multihash.hexdigest() if multihash else None, metadata)

    if MULTIHASH:
        @driver.back_compat_add
        @capabilities.check
        def add(self, image_id, image_file, image_size, hashing_algo,
                context=None, verifier=None):
            """Store an image; return the 5-tuple of glance_store >= 0.26.

            (``back_compat_add`` turns it into the old 4-tuple for
            callers that pass no hashing_algo.)
            """
            return self._add(image_id, image_file, image_size, hashing_algo,
                             verifier)
    else:
        @capabilities.check
        def add(self, image_id, image_file, image_size, context=None,
                verifier=None):
            """Store an image; return Pike's (uri, size, md5, metadata)."""
            uri, written, checksum, _multihash, metadata = self._add(
                image_id, image_file, image_size, None, verifier)
            return (uri, written, checksum, metadata)
