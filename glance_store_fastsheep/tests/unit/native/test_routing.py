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
"""routing.ReadRoutes on its own: no sheep, no connection.

The members are a real 3-node cluster's GET_NODE_LIST (one zone a
node, 16 vnodes each); which node holds what is ``placement``'s and is
checked there (test_cluster's PlacementTest): here, only which of the
holders a request goes to.
"""

from oslotest import base

from glance_store_fastsheep.native import node_list
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import placement
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import routing
from glance_store_fastsheep.tests.unit import sheep_wire

VID = 0xd27584
NODES = (('127.0.0.1', 7000, 0), ('127.0.0.1', 7001, 1),
         ('127.0.0.1', 7002, 2))


def members(vnodes=16):
    body = b''.join(
        sheep_wire.node_entry(address, port, proto.NODE_SIZES[0], vnodes,
                              zone)
        for address, port, zone in NODES)
    return tuple(node_list.unpack(body, len(NODES)))


class Membership(object):
    """What ReadRoutes reads of a membership.Membership: its members."""

    def __init__(self, members=()):
        self.members = members


class Connection(object):
    """A stand-in connection: open until closed."""

    def __init__(self, node):
        self.node = node
        self.sock = object()


def read(index):
    return ops.Request(proto.OP_READ_OBJ, proto.data_oid(VID, index), 0, 8)


def inode_read():
    return ops.Request(proto.OP_READ_OBJ, proto.vdi_oid(VID), 0, 8)


class ReadRoutesTest(base.BaseTestCase):

    def setUp(self):
        super(ReadRoutesTest, self).setUp()
        self.membership = Membership(members())
        self.failed = set()
        self.routes = routing.ReadRoutes(self.membership, self.failed)
        self.ring = placement.Ring.of(self.membership.members)
        # A gateway that is not a member: every routed read leaves it.
        self.gateway = ('127.0.0.2', 7000)

    def holders(self, request, copies=2):
        return self.ring.holders(request.oid, copies)

    def test_a_routed_read_goes_to_its_first_holder(self):
        self.routes.route(VID, 2)
        for index in range(8):
            request = read(index)
            self.assertEqual(self.holders(request)[0],
                             self.routes.target(request, self.gateway))

    def test_unrouted_vdis_and_other_requests_go_to_the_gateway(self):
        self.assertIsNone(self.routes.target(read(0), self.gateway))
        self.routes.route(VID, 2)
        write = ops.Request(proto.OP_WRITE_OBJ, proto.data_oid(VID, 0), 0,
                            8, payload=[b'x' * 8])
        self.assertIsNone(self.routes.target(write, self.gateway))
        other = ops.Request(proto.OP_READ_OBJ, proto.data_oid(VID + 1, 0),
                            0, 8)
        self.assertIsNone(self.routes.target(other, self.gateway))

    def test_without_data_only_the_inode_is_routed(self):
        self.routes.route(VID, 2, data=False)
        self.assertIsNone(self.routes.target(read(0), self.gateway))
        inode = inode_read()
        self.assertEqual(self.holders(inode)[0],
                         self.routes.target(inode, self.gateway))

    def test_no_copies_or_no_placement_routes_nothing(self):
        self.routes.route(VID, 0)
        self.assertEqual({}, self.routes.routed)
        self.membership.members = members(vnodes=0)
        routes = routing.ReadRoutes(self.membership, self.failed)
        routes.route(VID, 2)
        self.assertIsNone(routes.ring)
        self.assertEqual({}, routes.routed)
        self.assertIsNone(routes.target(read(0), self.gateway))

    def test_failed_holders_are_passed_over_then_the_gateway(self):
        self.routes.route(VID, 2)
        request = read(3)
        first, second = self.holders(request)
        self.failed.add(first)
        self.assertEqual(second, self.routes.target(request, self.gateway))
        self.failed.add(second)
        self.assertIsNone(self.routes.target(request, self.gateway))

    def test_a_gateway_holding_a_copy_keeps_the_read(self):
        self.routes.route(VID, 2)
        request = read(5)
        self.assertIsNone(self.routes.target(request,
                                             self.holders(request)[1]))

    def test_the_ring_follows_the_members(self):
        self.routes.route(VID, 2)
        ring = self.routes.ring
        self.routes.refresh()
        self.assertIs(ring, self.routes.ring)
        self.membership.members = members(vnodes=0)
        self.routes.refresh()
        self.assertIsNone(self.routes.ring)
        self.assertIsNone(self.routes.target(read(0), self.gateway))

    def test_batches_keep_the_order_of_nodes_and_requests(self):
        self.routes.route(VID, 2)
        lookup = ops.vdi_request(proto.OP_GET_VDI_INFO, 'img')
        requests = [read(index) for index in range(6)]
        batches = self.routes.batches([lookup] + requests, self.gateway)
        self.assertEqual(None, batches[0][0])
        self.assertEqual([lookup], batches[0][1])
        nodes = []
        for request in requests:
            node = self.holders(request)[0]
            if node not in nodes:
                nodes.append(node)
        self.assertEqual(nodes, [node for node, _batch in batches[1:]])
        for node, batch in batches[1:]:
            self.assertEqual(
                [request for request in requests
                 if self.holders(request)[0] == node], batch)

    def test_answers_are_awaited_where_the_request_was_sent(self):
        gateway = Connection(self.gateway)
        holder = Connection(NODES[0][:2])
        request = read(0)
        self.assertIs(gateway, self.routes.carrier(request, gateway))
        self.routes.carried([request], holder)
        self.assertIs(holder, self.routes.carrier(request, gateway))
        # A bare receive (no request waited on) is the gateway's.
        self.assertIs(gateway, self.routes.carrier(None, gateway))
        holder.sock = None
        self.assertIs(gateway, self.routes.carrier(request, gateway))
        holder.sock = object()
        self.routes.settled(request)
        self.assertIs(gateway, self.routes.carrier(request, gateway))

    def test_clear_forgets_connections_and_carriers(self):
        gateway = Connection(self.gateway)
        holder = Connection(NODES[0][:2])
        request = read(0)
        self.routes.connections[holder.node] = holder
        self.routes.carried([request], holder)
        self.routes.clear()
        self.assertEqual({}, self.routes.connections)
        self.assertIs(gateway, self.routes.carrier(request, gateway))
