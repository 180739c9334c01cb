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

    def revived(self, down):
        """{object id: holders} of what only nodes of down hold now.

        Taken while those sheep are still down: a copy a down sheep
        keeps (a removal it missed) comes back with it, and recovery
        may then copy it to the others. ``revived=`` of a later census
        still counts it as the down sheep's, not as a leak.
        """
        down = set(down)
        return dict((oid, frozenset(holders))
                    for oid, holders in self.objects.items()
                    if holders and set(holders) <= down)

    def leaks(self, live=(), down=(), known=(), revived=None):
        """What no VDI named in live accounts for, as readable lines.

        Objects (data and attribute) held only by nodes of down (indexes
        of sheep that were down while they were removed) are not among
        them: see ``down_leftovers``. Neither is what known names
        (``unaccounted_ids`` of an earlier census), wherever it is now.
        """
        return [line for line, holders in self.unaccounted(live, known,
                                                           revived)
                if not holders or not holders <= set(down)]

    def down_leftovers(self, live=(), down=(), known=(), revived=None):
        """The lines of leaks that only nodes of down hold.

        A sheep that is down while an object is removed keeps its copy:
        sheep's removal (REMOVE_OBJ, and its own deletion work) goes to
        the holders alive at the time, and a sheep restarted with its
        store keeps the copy in obj/ when it still holds the object in
        the new epoch; sheepdog has no tombstone for it. ``dog vdi
        delete`` leaves the same. Counted apart from leaks.
        """
        return [line for line, holders in self.unaccounted(live, known,
                                                           revived)
                if holders and holders <= set(down)]

    def unaccounted_ids(self, live=()):
        """The VDI names and object ids ``unaccounted`` would list.

        What a later census leaves out (its ``known``): a leftover that
        was there before stays the earlier one's, even once recovery
        has copied it from a restarted sheep to others.
        """
        live = set(live)
        names = self.live_vdis()
        vids = set(vid for name in live for vid in names.get(name, ()))
        ids = set(name for name in names if name not in live)
        ids.update(oid for oid in self.data if vid_of(oid) not in vids)
        ids.update(oid for oid, (name, _key) in self.attrs.items()
                   if name and name not in live)
        return ids

    def unaccounted(self, live=(), known=(), revived=None):
        """(line, holders) of what live does not account for.

        holders: the node indexes holding the line's objects (a set),
        None for a VDI (an inode a live name carries); for an object of
        revived (``revived()`` of a census taken while sheep were down),
        the holders it had then. What known names (VDI names, object
        ids) is left out.
        """
        revived = revived or {}
        live = set(live)
        known = set(known)
        names = self.live_vdis()
        vids = set(vid for name in live for vid in names.get(name, ()))
        for name in sorted(set(names) - live - known):
            yield ('VDI %s (vdi %s) is not referenced' % (
                name, ', '.join('%x' % vid for vid in names[name])), None)
        orphans = {}
        for oid in self.data:
            if vid_of(oid) not in vids and oid not in known:
                holders = revived.get(oid, frozenset(self.objects[oid]))
                orphans.setdefault((vid_of(oid), holders), []).append(oid)
        for vid, holders in sorted(orphans, key=lambda key: (
                key[0], sorted(key[1]))):
            oids = sorted(orphans[(vid, holders)])
            yield ('%d data object(s) of vdi %x (%s), which no live VDI '
                   'owns, on node %s: %s' % (
                       len(oids), vid,
                       self.inodes.get(vid) or 'deleted' if vid in
                       self.inodes else 'no inode',
                       ','.join(str(node) for node in sorted(holders)),
                       ' '.join('%016x' % oid for oid in oids[:8])),
                   set(holders))
        for oid, (name, key) in sorted(self.attrs.items()):
            if name and name not in live and oid not in known:
                holders = set(revived.get(oid, self.objects[oid]))
                yield ('attribute %s of %s is set (object %016x, node %s)'
                       % (key, name, oid, ','.join(
                           str(node) for node in sorted(holders))),
                       holders)

    def attributes(self, name):
        """The keys of the set attributes of VDI name."""
        return sorted(key for vdi_name, key in self.attrs.values()
                      if vdi_name == name)
