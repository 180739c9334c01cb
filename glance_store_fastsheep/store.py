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
import unicodedata

from glance_store import capabilities
from glance_store.common import utils
from glance_store import driver
from glance_store import exceptions
from glance_store import location
from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import timeutils
from oslo_utils import units
import six

from glance_store_fastsheep import client as client_mod
from glance_store_fastsheep import image_data
from glance_store_fastsheep import names
from glance_store_fastsheep import opts
from glance_store_fastsheep import settings as settings_mod
from glance_store_fastsheep import stream

LOG = logging.getLogger(__name__)

SCHEMES = ('sheepdog', 'fastsheep')
# glance_store 0.26.0 (Rocky) added hashing_algo and the 5-tuple result.
MULTIHASH = hasattr(driver, 'back_compat_add')


def store_conf(conf, backend_group):
    """Where one store reads its options: an object with one per attribute.

    Pike (single store): ``[glance_store]``. With ``enabled_backends``:
    the backend id's group, read through glance_store's
    ``BackendGroupConfiguration`` where it has one (as rbd does), so that
    a value left unset there comes from ``[backend_defaults]``; older
    multi-store releases read the backend's group alone.
    """
    if not backend_group:
        return conf.glance_store
    grafted = getattr(driver, 'BackendGroupConfiguration', None)
    if grafted is None:
        return getattr(conf, backend_group)
    return grafted(opts.SHEEPDOG_OPTS, backend_group, conf=conf)


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
# Most characters of a URI a message repeats.
URI_SHOWN = 200


def escaped(text, limit=URI_SHOWN):
    """text as a message may repeat it: one line, at most limit long.

    Control characters and line or paragraph separators are escaped,
    the rest cut at limit characters. A location is whatever its author
    typed: a raw newline in a log line would forge the next one.
    """
    if not isinstance(text, six.text_type):
        text = text.decode('utf-8', 'replace')
    out = []
    for char in text[:limit]:
        if char == '\\':
            out.append('\\\\')
        elif unicodedata.category(char) in ('Cc', 'Cf', 'Zl', 'Zp'):
            code = ord(char)
            out.append('\\x%02x' % code if code < 0x100
                       else '\\u%04x' % code)
        else:
            out.append(char)
    if len(text) > limit:
        out.append('...')
    return ''.join(out)


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


class StoreLocation(location.StoreLocation):
    """``sheepdog://ADDRESS:PORT:IMAGE``, exactly as the Pike driver wrote it.

    ``sheepdog://IMAGE`` (the pre-Mitaka form) means the configured
    address and port. An IPv6 address is written bare, as Pike did; the
    port and image are the last two ``:`` fields.
    """

    def process_specs(self):
        self.image = self.specs.get('image')
        self.addr = self.specs.get('addr')
        self.port = int(self.specs.get('port'))

    def get_uri(self):
        return 'sheepdog://%s:%d:%s' % (self.addr, self.port, self.image)

    def parse_uri(self, uri):
        for scheme in SCHEMES:
            prefix = scheme + '://'
            if uri.startswith(prefix):
                rest = uri[len(prefix):]
                break
        else:
            raise exceptions.BadStoreUri(
                message='URI must start with sheepdog:// (got %s)'
                % escaped(uri))
        pieces = rest.rsplit(':', 2)
        try:
            if len(pieces) == 3:
                self.addr = names.validate_address(pieces[0])
                self.port = names.validate_port(pieces[1])
                self.image = names.validate_name(pieces[2])
            elif len(pieces) == 1:
                # Pike's StoreLocation has no backend_group.
                group = store_conf(self.conf,
                                   getattr(self, 'backend_group', None))
                self.addr = names.validate_address(
                    group.sheepdog_store_address)
                self.port = names.validate_port(
                    group.sheepdog_store_port)
                self.image = names.validate_name(pieces[0])
            else:
                raise ValueError('expected ADDRESS:PORT:IMAGE')
        except ValueError as exc:
            raise exceptions.BadStoreUri(
                message='bad sheepdog location %s: %s'
                % (escaped(uri), escaped(six.text_type(exc))))


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
        self._register_options()
        self.store_conf = store_conf(self.conf, backend)

    def _register_options(self):
        """Register every option that is not registered yet, one by one.

        ``opts`` shares the in-tree driver's option objects where
        glance_store has one, so ``glance_store.register_opts`` and the
        base class see no duplicate. Any other earlier registration of
        those names with other objects would still make the base class's
        single ``register_opts`` call stop at the first duplicate and
        leave the options added here unregistered; one by one, only the
        duplicate is skipped.
        """
        groups = [self.backend_group or 'glance_store']
        shared = getattr(driver, 'SHARED_CONF_GROUP', None)
        if self.backend_group and shared:
            # [backend_defaults], which store_conf falls back to.
            groups.append(shared)
        for group in groups:
            for opt in self.OPTIONS:
                try:
                    self.conf.register_opt(opt, group=group)
                except cfg.DuplicateOptError:
                    pass

    def get_schemes(self):
        return SCHEMES

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
        self._warn_ignored_defaults(name)
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

    def _warn_ignored_defaults(self, name):
        """WARNING when the config has a section this store never reads.

        ``[backend_defaults]`` came with glance_store 5.0.0 (2025.2), and
        only a backend of ``enabled_backends`` reads it: an earlier
        glance_store, or a single store (``[glance_store]``), ignores
        all of it, silently (on Yoga a port set only there fell back to
        7000).
        """
        if self.backend_group and getattr(driver, 'SHARED_CONF_GROUP',
                                          None):
            return
        if 'backend_defaults' not in self.conf.list_all_sections():
            return
        LOG.warning('fastsheep store %s: the config has a [backend_defaults] '
                    'section, which %s never reads: set the store\'s '
                    'options in [%s]', name, 'a single store' if not
                    self.backend_group else 'this glance_store (before '
                    '5.0.0, 2025.2)', self.backend_group or 'glance_store')

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
        if not current.serve_any_name:
            image_id = getattr(location, 'image_id', None)
            if image_id and not serves_name(loc.image, image_id):
                reason = ('it names VDI %s, not the image\'s own %s (or '
                          '%s.<16 hex digits>)'
                          % (escaped(loc.image), escaped(image_id),
                             escaped(image_id)))
                raise refused(message=self._refusal(loc, reason))
            if not image_id and not serves_name(loc.image, None):
                reason = ('VDI %s is not named like a glance image (a '
                          'UUID, or a UUID and .<16 hex digits); '
                          'sheepdog_store_serve_any_name = True serves any '
                          'name' % escaped(loc.image))
                raise refused(message=self._refusal(loc, reason))
        if not self.client.admits(loc.addr, loc.port):
            reason = ('sheep %s:%d is neither an entry point of this store '
                      '(sheepdog_store_address, sheepdog_store_addresses) '
                      'nor a member they name' % (escaped(loc.addr),
                                                  loc.port))
            raise refused(message=self._refusal(loc, reason))
        return loc

    def _refusal(self, loc, reason):
        message = 'fastsheep store refuses location %s: %s' % (
            escaped(loc.get_uri()), reason)
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
