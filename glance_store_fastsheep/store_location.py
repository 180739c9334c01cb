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
"""The locations a fastsheep store reads and writes, and how it shows them.

``sheepdog://ADDRESS:PORT:IMAGE`` is the form the in-tree driver wrote
and glance keeps in its database: parsing it exactly as that driver did,
and checking every field with ``names``, is what lets a store read the
images a Pike cloud wrote and refuse a location no driver would have
written. A location is whatever its author typed, so every message that
repeats one goes through ``escaped``.
"""

import unicodedata

from glance_store import exceptions
from glance_store import location
import six

from glance_store_fastsheep import names
from glance_store_fastsheep import store_options

SCHEMES = ('sheepdog', 'fastsheep')

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
                group = store_options.store_conf(
                    self.conf, getattr(self, 'backend_group', None))
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
