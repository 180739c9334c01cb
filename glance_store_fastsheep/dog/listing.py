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
"""What ``dog vdi list -r`` prints, parsed.

Kept apart from the command that runs it: a parser has no process, no
timeout and no error mapping, and its tests need no ``dog``.
"""

import collections

# `vdi list -r` states of a VDI that can be read and written ('s' is a
# snapshot of the same name, which is not what glance stored).
_WRITABLE_STATES = ('=', 'c')

VdiInfo = collections.namedtuple('VdiInfo', ['state', 'name', 'snapshot_id',
                                             'size', 'fields'])


def split_list_line(line):
    """Split one `vdi list -r` line on unescaped single spaces.

    Empty fields are kept (an empty tag shows as two spaces), and ``\\ ``
    inside a name is an escaped space.
    """
    fields = []
    current = []
    escaped = False
    for char in line:
        if escaped:
            current.append(char)
            escaped = False
        elif char == '\\':
            escaped = True
        elif char == ' ':
            fields.append(''.join(current))
            current = []
        else:
            current.append(char)
    fields.append(''.join(current))
    return fields


def parse_list(output):
    """Parse `vdi list -r` output into VdiInfo tuples; ValueError if odd."""
    infos = []
    for line in output.splitlines():
        if not line.strip():
            continue
        fields = split_list_line(line)
        if len(fields) < 4:
            raise ValueError('unexpected `vdi list -r` line: %r' % line)
        try:
            size = int(fields[3])
            snapshot_id = int(fields[2])
        except ValueError:
            raise ValueError('unexpected `vdi list -r` line: %r' % line)
        infos.append(VdiInfo(fields[0], fields[1], snapshot_id, size,
                             tuple(fields)))
    return infos


def is_current(info):
    """Whether info is a current VDI, not a snapshot."""
    return info.state in _WRITABLE_STATES


def find_current(infos, name):
    for info in infos:
        if info.name == name and is_current(info):
            return info
    return None
