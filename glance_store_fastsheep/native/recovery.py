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
"""Whether the members are still moving objects after a membership change.

When a sheep leaves or joins, the epoch moves on and every sheep copies
the objects it now holds from their earlier holders (sheep's recovery).
A write to an object that recovery is moving can be missing afterwards
from one of its copies, though the gateway acknowledged it: on a real
3-node 1.0.1 cluster keeping 2 copies, an upload during which a sheep
was killed ended with one copy of its inode naming 3 of its 5 objects
and the other naming all 5 (fault campaign seed 1277488203). A read
through the short copy returns zeros in place of data, and sheep's
deletion, reading it, leaves the objects it does not name. So an upload
that saw the epoch move rewrites what it wrote into its inode once no
member is recovering (``write.Writer``): each copy then holds it.

Each member answers ``STAT_RECOVERY`` (``dog node recovery``) for
itself; only the members the entry points named are asked.
"""

import time

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import timeutils

from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto

LOG = logging.getLogger(__name__)

# Seconds between two rounds of questions while a member recovers.
POLL_INTERVAL = 0.2


def _ask(cluster, node, name):
    """node's RecoveryState and the epoch it answered in.

    The state is None when the sheep cannot tell.

    A sheep that answers STAT_RECOVERY with an error knows no such
    operation (a fake or an emulator): it recovers nothing.
    ConnectionLost (a sheep that left, or answers nothing within the
    command timeout) is the caller's.
    """
    settings = cluster.settings
    session = cluster.open(node, name, stall_timeout=settings.command_timeout)
    try:
        for version in cluster.membership.versions():
            buf = bytearray(proto.RECOVERY_STATE_SIZE)
            request = ops.Request(
                proto.OP_STAT_RECOVERY, view=memoryview(buf),
                header_data=lambda req_id, v=version:
                    proto.pack_stat_recovery(req_id, v))
            answer = session.call_raw(request, retry=False)
            if answer.result == proto.VER_MISMATCH:
                continue
            cluster.membership.sheep_version = version
            epoch = answer.response.epoch if answer.response else None
            if answer.result != proto.SUCCESS:
                LOG.debug('%s does not tell its recovery state: %s',
                          session.where(), proto.result_text(answer.result))
                return None, epoch
            return proto.unpack_recovery_state(buf), epoch
        return None, None
    finally:
        # Nothing it sends changes anything: no late copy to park.
        session.close()


def recovering(cluster, name, epoch=None):
    """The members that are recovering objects, or that did not answer.

    A member that answers in an epoch older than epoch (the newest an
    operation saw) has not taken that membership change in, so it has
    not started the recovery it brings: it counts as recovering.
    """
    busy = []
    for node in cluster.membership.members:
        try:
            state, answered = _ask(cluster, node, name)
        except errors.Unreachable:
            # Refused: a sheep that left; the epoch moved on without it.
            continue
        except errors.ConnectionLost as exc:
            LOG.debug('No recovery state from sheep at %s:%d: %s',
                      node[0], node[1], exc)
            busy.append(node)
            continue
        if state is not None and state.in_recovery or (
                epoch is not None and answered is not None and
                answered < epoch):
            busy.append(node)
    return busy


UPLOAD_FAILS = ('written', 'the upload fails rather than keep an inode a '
                'copy of which may miss what was written')
DELETE_FAILS = ('deleted', 'the delete fails, leaving the image marked '
                'deleting (its reads fail) for a retried delete, rather '
                'than leave objects recovery may copy back')


def repeat_once_recovered(session, name, outcome, then, action):
    """action() once no member recovers; again until none started since.

    For an operation whose replies carried two epochs (session's
    ``epoch_moved``): what recovery may have undone meanwhile (an inode
    write, an object removal) is done again once it is over, and again
    if the epoch moved on or a member took the change in late, within
    the transfer timeout (BackendException past it). outcome: see
    ``wait_until_recovered``; then: what action does, for the log.
    """
    deadline = timeutils.now() + session.settings.transfer_timeout
    while True:
        epochs = session.epochs
        LOG.info('Sheepdog epoch moved from %d to %d while %s was %s: '
                 '%s once no member recovers objects', epochs[0],
                 epochs[1], name, outcome[0], then)
        wait_until_recovered(session.cluster, name, deadline, epochs[1],
                             outcome)
        action()
        if session.epochs == epochs and not recovering(
                session.cluster, name, epochs[1]):
            return


def wait_until_recovered(cluster, name, deadline, epoch=None,
                         outcome=UPLOAD_FAILS):
    """Return once no member recovers; BackendException at deadline.

    deadline: a ``timeutils.now()`` value; epoch: see ``recovering``;
    outcome: (what was being done to the image, what failing means),
    for the error.
    """
    while True:
        busy = recovering(cluster, name, epoch)
        if not busy:
            return
        if timeutils.now() >= deadline:
            raise exceptions.BackendException(
                'sheepdog image %s: the cluster moved to a new epoch while '
                'it was %s, and sheep at %s still recover objects or '
                'do not answer: %s' % (
                    name, outcome[0], ', '.join(
                        '%s:%d' % (node[0], node[1]) for node in busy),
                    outcome[1]))
        time.sleep(POLL_INTERVAL)
