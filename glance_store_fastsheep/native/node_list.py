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
"""GET_NODE_LIST's answer: the members of the cluster, struct sd_node.

Each entry is sheep's own struct sd_node (``include/internal_proto.h``
of 0.9.5, 1.0.1 and master): 80 bytes, or 592 in a build with disk
vnodes; how many entries an answer may hold and of which size is the
answer's framing (``proto.node_entry_size``). ``Node`` keeps what the
driver connects to and what ``placement`` places objects by.
"""

import struct

from glance_store_fastsheep.native import proto

# In struct sd_node: the rb_node (three 8-byte words), then node_id's
# 16-byte address (IPv4 in its last 4 bytes, the first 12 zero) and port.
ADDR_OFFSET = 24
PORT_OFFSET = 40
# What sheep hashes a node by: node_id up to io_addr (address and port).
ID_SIZE = 18
# Then, after node_id's io_addr, io_port and padding: nr_vnodes (16
# bits) and, aligned, zone (32 bits).
VNODES_OFFSET = 64
ZONE_OFFSET = 68
_UINT16 = struct.Struct('<H')
_UINT32 = struct.Struct('<I')


class Node(tuple):
    """A member of the cluster: ``(address, port)``, and its placement.

    A tuple so that it stands for the node wherever an ``(address,
    port)`` does (entry points, failed nodes). ``node_id`` is the bytes
    sheep hashes the node by, ``nr_vnodes`` and ``zone`` place objects
    on it (``placement.Ring``); ``disks`` says the entry came from a
    build with disk vnodes, whose placement hashes disks instead.
    """

    def __new__(cls, address, port, node_id=None, nr_vnodes=0, zone=0,
                disks=False):
        node = tuple.__new__(cls, (address, port))
        node.node_id = node_id
        node.nr_vnodes = nr_vnodes
        node.zone = zone
        node.disks = disks
        return node

    def __getnewargs__(self):
        return (self[0], self[1], self.node_id, self.nr_vnodes, self.zone,
                self.disks)


def unpack(data, nr_nodes):
    """[Node] of GET_NODE_LIST's data of nr_nodes entries, in its order.

    The entry size tells the two builds apart (``proto.NODE_SIZES``). Each
    entry's nr_vnodes is 16 bits, as sheep's own (1 to 65535, ``sheep
    -V``; 0 for a gateway): ``placement.Ring`` bounds their sum.
    """
    if not nr_nodes:
        return []
    size = proto.node_entry_size(len(data), nr_nodes)
    nodes = []
    for index in range(nr_nodes):
        entry = bytes(data[index * size:(index + 1) * size])
        addr = entry[ADDR_OFFSET:ADDR_OFFSET + 16]
        port = _UINT16.unpack_from(entry, PORT_OFFSET)[0]
        nodes.append(Node(
            address_text(addr), port,
            entry[ADDR_OFFSET:ADDR_OFFSET + ID_SIZE],
            _UINT16.unpack_from(entry, VNODES_OFFSET)[0],
            _UINT32.unpack_from(entry, ZONE_OFFSET)[0],
            size != proto.NODE_SIZES[0]))
    return nodes


def address_text(addr):
    """A node_id's 16-byte address as text (IPv4 when mapped so)."""
    addr = bytearray(addr)
    if not any(addr[:12]) and addr[12]:
        return '.'.join(str(byte) for byte in addr[12:])
    return ':'.join('%x' % ((addr[i] << 8) | addr[i + 1])
                    for i in range(0, 16, 2))
