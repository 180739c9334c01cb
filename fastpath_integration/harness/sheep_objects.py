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
"""What the sheep of a local cluster hold, read from their stores.

``dog vdi list`` shows VDIs; an object a late request created after its
VDI was deleted is in no list, only in a sheep's ``obj/`` directory (one
file per object, named by its 16-hex-digit id). ``Census`` reads those
directories of every node of a ``sheepdog.SheepdogCluster``:

* data objects (neither bit 63 nor bit 61 of the id), by VDI id;
* inode objects (bit 63): a VDI, live while its name (the object's first
  256 bytes) is set; sheep keeps a deleted VDI's inode with the name
  zeroed, as it does after ``dog vdi delete``;
* attribute objects (bit 61): live while their VDI name is set; sheep
  deletes an attribute by zeroing that name and keeps the object.

``leaks(live)`` is what no live VDI of ``live`` (names) accounts for: a
data object of a VDI id that is not a live one's, a live inode or a live
attribute of any other name.
"""

import os

NAME_SIZE = 256
VDI_BIT = 1 << 63
ATTR_BIT = 1 << 61
# struct sheepdog_vdi_attr: name, tag, ctime, snap_id, value_len, key.
ATTR_KEY_OFFSET = 256 + 256 + 8 + 4 + 4


def vid_of(oid):
    return (oid >> 32) & 0xffffff


def _text(raw):
    return raw.split(b'\0')[0].decode('utf-8', 'replace')


class Census(object):
    """The objects every node of cluster holds now.

    ``objects`` maps each object id to the node indexes holding it;
    ``inodes`` a VDI id to its name ('' once deleted); ``attrs`` an
    attribute object's id to (VDI name, key), '' names once deleted.
    """

    def __init__(self, cluster):
        self.objects = {}
        paths = {}
        for node in cluster.nodes:
            directory = os.path.join(node.directory, 'obj')
            try:
                names = os.listdir(directory)
            except OSError:
                continue
            for name in names:
                if len(name) != 16:
                    continue
                try:
                    oid = int(name, 16)
                except ValueError:
                    continue
                self.objects.setdefault(oid, []).append(node.index)
                paths.setdefault(oid, os.path.join(directory, name))
        self.inodes = {}
        self.attrs = {}
        for oid, path in paths.items():
            if oid & VDI_BIT:
                self.inodes[vid_of(oid)] = _text(self._head(path))
            elif oid & ATTR_BIT:
                head = self._head(path, ATTR_KEY_OFFSET + NAME_SIZE)
                self.attrs[oid] = (_text(head[:NAME_SIZE]),
                                   _text(head[ATTR_KEY_OFFSET:]))

    @staticmethod
    def _head(path, size=NAME_SIZE):
        try:
            with open(path, 'rb') as source:
                return source.read(size)
        except (IOError, OSError):
            # Moved by recovery meanwhile: read as deleted.
            return b''

    @property
    def data(self):
        """{object id: nodes} of the data objects."""
        return dict((oid, nodes) for oid, nodes in self.objects.items()
                    if not oid & (VDI_BIT | ATTR_BIT))

    def live_vdis(self):
        """{name: [VDI ids]} of the inodes whose name is set."""
        live = {}
        for vid, name in self.inodes.items():
            if name:
                live.setdefault(name, []).append(vid)
        return live

    def leaks(self, live=()):
        """What no VDI named in live accounts for, as readable lines."""
        live = set(live)
        names = self.live_vdis()
        vids = set(vid for name in live for vid in names.get(name, ()))
        found = []
        for name in sorted(set(names) - live):
            found.append('VDI %s (vdi %s) is not referenced' % (
                name, ', '.join('%x' % vid for vid in names[name])))
        orphans = {}
        for oid in self.data:
            if vid_of(oid) not in vids:
                orphans.setdefault(vid_of(oid), []).append(oid)
        for vid in sorted(orphans):
            found.append('%d data object(s) of vdi %x (%s), which no live '
                         'VDI owns: %s' % (
                             len(orphans[vid]), vid,
                             self.inodes.get(vid) or 'deleted' if vid in
                             self.inodes else 'no inode',
                             ' '.join('%016x' % oid
                                      for oid in sorted(orphans[vid])[:8])))
        for oid, (name, key) in sorted(self.attrs.items()):
            if name and name not in live:
                found.append('attribute %s of %s is set (object %016x)' % (
                    key, name, oid))
        return found

    def attributes(self, name):
        """The keys of the set attributes of VDI name."""
        return sorted(key for vdi_name, key in self.attrs.values()
                      if vdi_name == name)
