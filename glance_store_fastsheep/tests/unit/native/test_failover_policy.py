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
"""failover_policy.FailoverPolicy on its own: no sheep, a fake clock.

How a session fails over between fake sheep is test_cluster's; here,
only the bounds, what is resent, what is parked and the next gateway.
"""

import fixtures
from oslotest import base

from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import failover_policy
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto

VID = 0xd27584


class Clock(object):
    """timeutils.now for the policy: moved by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Session(object):
    """What the policy reads of a connection set aside."""

    def __init__(self, outstanding, garbled=False):
        self.outstanding = outstanding
        self.garbled = garbled


class Cluster(object):
    """A cluster whose connect refuses the first refused times."""

    def __init__(self, refused, adds=True):
        self.refused = refused
        self.adds = adds
        self.calls = []

    def connect(self, name):
        self.calls.append(('connect', name))
        if self.refused:
            self.refused -= 1
            raise errors.Unreachable('refused %d' % self.refused)
        return 'connection'

    def refresh(self, name, skip=None):
        self.calls.append(('refresh', name, skip))
        return self.adds


def sent(request):
    request.sent_at = 1.0
    return request


class FailoverPolicyTest(base.BaseTestCase):

    def setUp(self):
        super(FailoverPolicyTest, self).setUp()
        self.clock = Clock()
        self.useFixture(fixtures.MockPatchObject(
            failover_policy.timeutils, 'now', self.clock))

    def test_at_most_attempts_failovers(self):
        policy = failover_policy.FailoverPolicy(2, 10.0)
        self.assertTrue(policy.fail_over())
        self.assertTrue(policy.fail_over())
        self.assertFalse(policy.fail_over())
        self.assertEqual(2, policy.failovers)

    def test_zero_attempts_never_fails_over(self):
        policy = failover_policy.FailoverPolicy(0, 10.0)
        self.assertFalse(policy.fail_over())
        self.assertEqual(0, policy.failovers)

    def test_none_after_the_timeout_from_the_first(self):
        policy = failover_policy.FailoverPolicy(5, 10.0)
        self.assertTrue(policy.fail_over())
        self.assertEqual(110.0, policy.deadline)
        self.clock.now = 109.9
        self.assertTrue(policy.fail_over())
        self.clock.now = 110.0
        self.assertFalse(policy.fail_over())
        self.assertEqual(2, policy.failovers)

    def test_of_settings(self):
        settings = type('Settings', (object,), {
            'failover_attempts': 3, 'transfer_timeout': 7.5})
        policy = failover_policy.FailoverPolicy.of(settings)
        self.assertEqual((3, 7.5), (policy.attempts, policy.timeout))

    def test_at_most_attempts_plus_one_parked(self):
        policy = failover_policy.FailoverPolicy(2, 10.0)
        self.assertEqual([True, True, True, False, False],
                         [policy.park() for _count in range(5)])
        self.assertEqual(3, policy.parked)

    def test_node_list_requests_are_not_resent(self):
        carried = [ops.Request(proto.OP_READ_OBJ, proto.data_oid(VID, 9))]
        read = ops.Request(proto.OP_READ_OBJ, proto.data_oid(VID, 0))
        node_list = ops.Request(proto.OP_GET_NODE_LIST)
        write = ops.Request(proto.OP_WRITE_OBJ, proto.vdi_oid(VID))
        self.assertEqual(
            carried + [read, write],
            failover_policy.FailoverPolicy.resent(
                [read, node_list, write], carried))
        self.assertEqual([read], failover_policy.FailoverPolicy.resent(
            [node_list, read]))

    def test_changed_names_what_a_late_request_may_change(self):
        changed = failover_policy.FailoverPolicy.changed
        write = sent(ops.Request(proto.OP_WRITE_OBJ,
                                 proto.data_oid(VID, 1)))
        read = sent(ops.Request(proto.OP_READ_OBJ, proto.data_oid(7, 0)))
        self.assertEqual(set([VID]), changed(Session([read, write])))
        # Reads change nothing; a write not sent whole never lands.
        self.assertIsNone(changed(Session([read])))
        self.assertIsNone(changed(Session([ops.Request(
            proto.OP_WRITE_OBJ, proto.data_oid(VID, 1))])))
        # A stream that cannot be read is closed whatever it carried.
        self.assertIsNone(changed(Session([write], garbled=True)))
        # NEW_VDI changes a VDI not known by id: parked, no vid.
        new_vdi = sent(ops.vdi_request(proto.OP_NEW_VDI, 'img'))
        self.assertEqual(set(), changed(Session([new_vdi])))

    def test_next_gateway_is_the_clusters_next_node(self):
        cluster = Cluster(0)
        self.assertEqual('connection',
                         failover_policy.FailoverPolicy.next_gateway(
                             cluster, 'img'))
        self.assertEqual([('connect', 'img')], cluster.calls)

    def test_with_none_left_the_entry_points_are_asked_once(self):
        cluster = Cluster(1)
        self.assertEqual('connection',
                         failover_policy.FailoverPolicy.next_gateway(
                             cluster, 'img'))
        self.assertEqual([('connect', 'img'), ('refresh', 'img', ()),
                          ('connect', 'img')], cluster.calls)

    def test_nothing_new_is_the_first_refusal(self):
        cluster = Cluster(1, adds=False)
        exc = self.assertRaises(errors.Unreachable,
                                failover_policy.FailoverPolicy.next_gateway,
                                cluster, 'img')
        self.assertEqual('refused 0', str(exc))
        self.assertEqual([('connect', 'img'), ('refresh', 'img', ())],
                         cluster.calls)

    def test_new_members_refusing_too_is_their_refusal(self):
        cluster = Cluster(2)
        exc = self.assertRaises(errors.Unreachable,
                                failover_policy.FailoverPolicy.next_gateway,
                                cluster, 'img')
        self.assertEqual('refused 0', str(exc))
        self.assertEqual(3, len(cluster.calls))
