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
"""The image locations ``fastsheep-locations`` and ``fastsheep-orphans`` read.

Operators hand the commands what they have: one URI per line, or the
JSON that ``openstack image show -f json`` or glance's API prints. Every
form is read into ``Location`` tuples here, and anything the commands
cannot read is an ``InputError`` naming where it is, so that malformed
input exits with the commands' ERROR status, never as a location that
no backend serves.
"""

import collections
import io
import json
import sys

import six

Location = collections.namedtuple('Location', 'image uri metadata')


class InputError(ValueError):
    """Locations the command cannot read."""


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
