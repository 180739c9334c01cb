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
"""The names a location and the options hold: VDI, sheep address, port.

Every location and every option is checked here, whichever client runs:
the rules are the strictest either client needs. A name reaches the
``dog`` command line as one argv item (no shell), so it must not read
as an option or split differently from what glance meant, and it must
fit sheep's own limit; the native client sends the same names.
"""

import re

from oslo_utils import encodeutils
from oslo_utils import netutils
import six

# SD_MAX_VDI_LEN in sheepdog is 256 bytes including the terminating NUL.
MAX_NAME_BYTES = 255
# Control characters and whitespace break `vdi list` lines, a leading
# '-' is read as an option, ':' cannot survive the sheepdog://a:p:name
# location form and '\\' is the escape character of `vdi list -r`. The
# control characters are C0, DEL and C1 (U+0080-U+009F, U+0085 among
# them), and the line and paragraph separators U+2028 and U+2029: with
# \n, \r, \v, \f and \x1c-\x1e, every character str.splitlines splits
# `vdi list` output on (dog.listing.parse_list).
_BAD_NAME = re.compile(u'[\x00-\x20\x7f-\x9f\u2028\u2029\\\\:]')
_HOSTNAME = re.compile(r'^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\Z')

# The sheepdog command line tool's name (the default of
# sheepdog_store_command), and its name in older sheepdog releases.
DEFAULT_COMMAND = 'dog'
OLD_COMMAND = 'collie'


def validate_name(name):
    """Return name as text, or raise ValueError saying what is wrong."""
    if isinstance(name, bytes):
        name = encodeutils.safe_decode(name)
    elif not isinstance(name, six.text_type):
        name = six.text_type(name)
    if not name:
        raise ValueError('empty VDI name')
    if len(encodeutils.safe_encode(name, 'utf-8')) > MAX_NAME_BYTES:
        raise ValueError('VDI name longer than %d bytes' % MAX_NAME_BYTES)
    if name.startswith('-'):
        raise ValueError('VDI name %r starts with "-"' % name)
    if _BAD_NAME.search(name):
        raise ValueError('VDI name %r contains whitespace, a control '
                         'character, ":" or "\\"' % name)
    return name


def validate_address(address):
    """Return the address without IPv6 brackets, or raise ValueError."""
    if not address:
        raise ValueError('empty sheep address')
    if address.startswith('[') and address.endswith(']'):
        address = address[1:-1]
    if netutils.is_valid_ipv4(address) or netutils.is_valid_ipv6(address):
        return address
    if address.startswith('-') or not _HOSTNAME.match(address):
        raise ValueError('%r is not an IP address or host name' % address)
    return address


def validate_port(port):
    try:
        port = int(port)
    except (TypeError, ValueError):
        raise ValueError('%r is not a port number' % (port,))
    if not 0 < port < 65536:
        raise ValueError('port %d out of range' % port)
    return port
