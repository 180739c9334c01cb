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
"""The emulator's codecs: text to bytes, and its own JSON files.

Shared by the ``dog`` program (Python 3, started per call) and the
set-up helpers (imported on Python 2.7 as well as 3): standard library
only, nothing heavy imported at module level (``parse_json`` says why
``json`` is left for writing and for unusual content).
"""

import os

try:
    _unichr = unichr  # noqa: F821 (Python 2.7)
except NameError:
    _unichr = chr


def encode(text):
    """Text as the bytes a file name, a message or a log line holds."""
    return text.encode('utf-8', 'surrogateescape')


_JSON_CONST = {'true': True, 'false': False, 'null': None}
_JSON_ESC = {'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f',
             'n': '\n', 'r': '\r', 't': '\t'}
_JSON_NUM = frozenset('+-0123456789.eE')


def parse_json(text):
    """A small JSON reader for the emulator's own files.

    ``import json`` pulls in ``re`` and compiles the decoder's patterns,
    which every ``dog`` call would pay: measured side by side, whole
    ``vdi list`` calls took longer with ``json.loads`` (the figures are in
    doc/source/emulator.rst, "The emulator's JSON reader"). The files
    are the emulator's own and tiny, so a plain recursive reader does.
    """
    pos = [0]

    def skip():
        while pos[0] < len(text) and text[pos[0]] in ' \t\r\n':
            pos[0] += 1

    def value():
        skip()
        char = text[pos[0]]
        if char == '{':
            pos[0] += 1
            obj = {}
            skip()
            if text[pos[0]] == '}':
                pos[0] += 1
                return obj
            while True:
                skip()
                key = value()
                skip()
                if text[pos[0]] != ':':
                    raise ValueError('expected : at %d' % pos[0])
                pos[0] += 1
                obj[key] = value()
                skip()
                pos[0] += 1
                if text[pos[0] - 1] == '}':
                    return obj
                if text[pos[0] - 1] != ',':
                    raise ValueError('expected , at %d' % pos[0])
        if char == '[':
            pos[0] += 1
            items = []
            skip()
            if text[pos[0]] == ']':
                pos[0] += 1
                return items
            while True:
                items.append(value())
                skip()
                pos[0] += 1
                if text[pos[0] - 1] == ']':
                    return items
                if text[pos[0] - 1] != ',':
                    raise ValueError('expected , at %d' % pos[0])
        if char == '"':
            pos[0] += 1
            parts = []
            while True:
                char = text[pos[0]]
                pos[0] += 1
                if char == '"':
                    return ''.join(parts)
                if char == '\\':
                    esc = text[pos[0]]
                    pos[0] += 1
                    if esc == 'u':
                        parts.append(_unichr(int(text[pos[0]:pos[0] + 4],
                                                 16)))
                        pos[0] += 4
                    else:
                        parts.append(_JSON_ESC[esc])
                else:
                    parts.append(char)
        for word, const in _JSON_CONST.items():
            if text.startswith(word, pos[0]):
                pos[0] += len(word)
                return const
        start = pos[0]
        while pos[0] < len(text) and text[pos[0]] in _JSON_NUM:
            pos[0] += 1
        number = text[start:pos[0]]
        if not number:
            raise ValueError('unexpected %r at %d' % (char, start))
        if '.' in number or 'e' in number or 'E' in number:
            return float(number)
        return int(number)

    result = value()
    skip()
    if pos[0] != len(text):
        raise ValueError('trailing data at %d' % pos[0])
    return result


def read_json(path, default=None):
    try:
        with open(path, 'rb') as src:
            data = src.read()
    except (IOError, OSError):
        return default
    text = data.decode('utf-8')
    if not text.strip():
        return default
    try:
        return parse_json(text)
    except (ValueError, IndexError, KeyError):
        import json  # unusual content: let the real parser judge it
        return json.loads(text)


def write_json(path, obj):
    import json
    tmp = '%s.tmp-%d' % (path, os.getpid())
    with open(tmp, 'w') as dst:
        json.dump(obj, dst, sort_keys=True)
    os.rename(tmp, path)
