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
"""Where sheep places an object: the vnode ring over the members.

For the reads ``failover.FailoverSession`` sends to a holder rather than
through the gateway, and for the hashes sheep names VDIs and
attributes by (``markers.marker_oid``).
"""

import bisect

from oslo_log import log as logging


LOG = logging.getLogger(__name__)


# 64-bit FNV-1a, as sheep hashes nodes and objects (include/sheepdog_proto.h
# of 0.9.5, 1.0.1 and master alike).
FNV1A_64_INIT = 0xcbf29ce484222325
FNV_64_PRIME = 0x100000001b3
_MASK = (1 << 64) - 1


def fnv_64a(data, hval=FNV1A_64_INIT):
    """FNV-1a of a byte string, continuing from hval."""
    for byte in bytearray(data):
        hval = ((hval ^ byte) * FNV_64_PRIME) & _MASK
    return hval


def fnv_64a_64(value, hval):
    """FNV-1a of value's 8 little-endian bytes (sheep's fnv_64a_64)."""
    for shift in range(0, 64, 8):
        hval = ((hval ^ ((value >> shift) & 0xff)) * FNV_64_PRIME) & _MASK
    return hval


def hash_next(hval):
    """The next vnode's hash after hval (sd_hash_next)."""
    return fnv_64a_64(hval, hval)


def oid_hash(oid):
    """Where an object id falls on the ring (sd_hash_oid)."""
    return hash_next(fnv_64a_64(oid, FNV1A_64_INIT))


def node_hash(node_id):
    """The seed of a node's vnode hashes: sd_hash of address and port."""
    return hash_next(fnv_64a(node_id))


# The most vnodes a Ring is built of. Sheep gives each node 1 to 65535
# (``sheep -V``, 16 bits in struct sd_node) and a cluster up to
# SD_MAX_NODES members (internal_proto.h), so one GET_NODE_LIST answer
# can name 400 million: minutes of hashing and tens of GiB here. With
# automatic vnodes (the default) sheep gives a node SD_DEFAULT_VNODES
# (128) weighted by its free space, about 128 a node in all
# (recalculate_vnodes, sheep/group.c): this bound is a 1024-node
# cluster's ring, built in well under a second. A larger one is not
# built: reads then go through the gateway, as without a placement.
MAX_RING_VNODES = 128 * 1024
# The vnode counts over MAX_RING_VNODES already warned of.
_TOO_LARGE = set()


class Ring(object):
    """The vnode ring sheep places objects on, built from the members.

    Each member contributes ``nr_vnodes`` points, the successive
    ``hash_next`` of its ``node_hash`` (node_to_vnodes); an object's
    first copy is on the first point at or after its ``oid_hash``,
    wrapping round, and each further copy on the next point of a zone
    not used yet (oid_to_vnodes, include/sheep.h). Sheep builds the
    ring from GET_NODE_LIST's own entries, whose nr_vnodes already has
    any automatic weighting applied.
    """

    def __init__(self, nodes):
        points = []
        for node in nodes:
            hval = node_hash(node.node_id)
            for _count in range(node.nr_vnodes):
                hval = hash_next(hval)
                points.append((hval, node.zone, node))
        points.sort(key=lambda point: point[0])
        self.hashes = [point[0] for point in points]
        self.points = [(point[2], point[1]) for point in points]
        # Gateway-only members (no vnodes) add no zone (sheep/group.c).
        self.nr_zones = len(set(node.zone for node in nodes
                                if node.nr_vnodes))

    @classmethod
    def of(cls, nodes):
        """The ring of nodes, or None where placement is not known.

        Unknown: no members, an entry without what placement needs (a
        fake sheep), a build with disk vnodes (placed by disk), or more
        vnodes than MAX_RING_VNODES.
        """
        if not nodes or any(getattr(node, 'node_id', None) is None or
                            node.disks for node in nodes):
            return None
        total = sum(node.nr_vnodes for node in nodes)
        if not total:
            return None
        if total > MAX_RING_VNODES:
            # Once per size of member list, not once per transfer.
            log = LOG.debug if total in _TOO_LARGE else LOG.warning
            _TOO_LARGE.add(total)
            log('The sheepdog members name %d vnodes on %d nodes, more '
                'than the %d this client places objects over: reads go '
                'through the gateway', total, len(nodes), MAX_RING_VNODES)
            return None
        return cls(nodes)

    def holders(self, oid, copies):
        """The nodes holding oid's copies, first copy first.

        copies is the VDI's; sheep keeps no more than there are zones.
        """
        copies = min(copies, self.nr_zones)
        count = len(self.points)
        first = bisect.bisect_left(self.hashes, oid_hash(oid)) % count
        node, zone = self.points[first]
        nodes, zones = [node], set([zone])
        index = first
        while len(nodes) < copies:
            index = (index + 1) % count
            if index == first:
                break
            node, zone = self.points[index]
            if zone not in zones:
                nodes.append(node)
                zones.add(zone)
        return nodes
