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
"""The native client: the store's interface over sheep's protocol.

No sheepdog package is needed on the glance host: every operation is a
few requests on one TCP connection, which starts at the location's
sheep (reads, lookups, deletes) or the configured one (writes) and
moves to another member of the cluster if that sheep fails (``cluster``);
a download also reads each object from a node holding a copy of it, on
a connection of that node's. A location's sheep is used only when it is
an entry point or a member the entry points named (``admits``; the
store asks before anything connects to it). The configure-time check
asks the entry points in turn until one answers. See ``vdi``, ``read``
and ``write`` for what is sent.
"""

from glance_store import exceptions
from oslo_log import log as logging

from glance_store_fastsheep import client
from glance_store_fastsheep.native import cluster
from glance_store_fastsheep.native import connection
from glance_store_fastsheep.native import deletion
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import failover
from glance_store_fastsheep.native import listing
from glance_store_fastsheep.native import markers
from glance_store_fastsheep.native import ops
from glance_store_fastsheep.native import proto
from glance_store_fastsheep.native import read
from glance_store_fastsheep.native import vdi as vdi_ops
from glance_store_fastsheep.native import write
from glance_store_fastsheep import stream

LOG = logging.getLogger(__name__)


class NativeClient(client.Client):
    """``client.Client`` speaking sheep's protocol directly."""

    def describe(self):
        return "sheep's protocol"

    def _session(self, address, port, name):
        """A session starting at address:port, failing over to the rest.

        The location's sheep is where to start, not the only one to try.
        """
        return failover.FailoverSession(self.settings, name, (address, port))

    def admits(self, address, port):
        """An entry point, or a member the entry points named.

        The first time, the members are asked for from the entry points
        (never from address:port itself).
        """
        try:
            return cluster.Cluster(self.settings).admits((address, port))
        except errors.ConnectionLost:
            return False

    def check(self):
        """An entry point speaks our protocol; its cluster runs.

        The entry points are asked in turn (the configured sheep first)
        until one answers; the error names every one when none does.
        ``STAT_CLUSTER`` is an internal operation: sheep refuses it with
        VER_MISMATCH unless it carries sheep's own internal version, so
        the versions of the releases this client knows are tried in
        turn, which also tells which release line answers. With no log
        asked for, the result is the cluster's state.
        """
        failures = []
        for address, port in self.settings.addresses:
            try:
                return self._check_one(address, port)
            except client.ClientError as exc:
                failures.append(str(exc))
        raise client.ClientError('; '.join(failures))

    def _check_one(self, address, port):
        settings = self.settings
        where = '%s:%s' % (address, port)
        try:
            session = connection.Connection(
                address, port, 'cluster check',
                settings.command_timeout, settings.transfer_timeout,
                settings.stall_timeout)
        except errors.Unreachable as exc:
            raise client.ClientError(
                'sheepdog_store_client = native: %s' % exc)
        try:
            for version, line in sorted(proto.SHEEP_VERSIONS.items(),
                                        reverse=True):
                stat = session.call_raw(ops.Request(
                    proto.OP_STAT_CLUSTER,
                    header_data=lambda req_id, v=version:
                        proto.pack_stat_cluster(req_id, v)), retry=False)
                if stat.result == proto.VER_MISMATCH:
                    continue
                if stat.result == proto.SUCCESS:
                    LOG.info('Sheepdog cluster at %s is running (%s, '
                             'internal protocol 0x%02x)', where, line,
                             version)
                    return line
                if stat.result == proto.WAIT_FOR_FORMAT:
                    raise client.ClientError(
                        'the sheepdog cluster at %s is not formatted yet '
                        '(dog cluster format)' % where)
                raise client.ClientError(
                    'the sheepdog cluster at %s is not running: %s'
                    % (where, proto.result_text(stat.result)))
            raise client.ClientError(
                'the sheep at %s speaks an internal protocol version the '
                'native client does not know (it knows %s); %s'
                % (where, ', '.join('0x%02x' % v for v in sorted(
                    proto.SHEEP_VERSIONS)), errors.USE_DOG))
        except errors.Unsupported as exc:
            # Its message already names the dog client as the way out.
            raise client.ClientError(
                'sheepdog_store_client = native cannot use the sheep at '
                '%s: %s' % (where, exc))
        except exceptions.BackendException as exc:
            raise client.ClientError(
                'sheepdog_store_client = native cannot use the sheep at '
                '%s: %s; %s' % (where, exc, errors.USE_DOG))
        finally:
            session.close()

    def lookup(self, address, port, name):
        session = self._session(address, port, name)
        try:
            found = vdi_ops.find(session, name)
            if found is not None:
                # A half-deleted image has no size worth reporting.
                markers.check_readable(session, name, found)
            return found
        finally:
            session.close()

    def read(self, address, port, name, offset, length):
        return stream.Stream(read.pieces, self.settings, address, port,
                             name, offset, length, transfer=stream.Transfer(
                                 client.NATIVE, address, port, name, length))

    def write(self, name, source, digest, image_size, transfer=None):
        return write.write_image(self.settings, name, source, digest,
                                 image_size, transfer)

    def unowned_objects(self, address, port, name, length):
        """Indexes of the objects in VDI name's first length bytes not its own.

        For the dog client, whose ``dog vdi write`` can exit 0 for an
        object sheep lost the record of (vdi.unowned_objects says how);
        no ``dog`` command shows the object table. None when this
        cluster's table cannot be read here (a protocol this client does
        not speak: logged, as the dog client is the way around it);
        ClientError when no sheep answers.
        """
        try:
            return vdi_ops.unowned_objects(self.settings, address, port,
                                           name, length)
        except errors.Unsupported as exc:
            LOG.debug('Not checking the object table of %s: %s', name, exc)
            return None
        except errors.Unreachable as exc:
            raise client.ClientError(str(exc))

    def vdis(self):
        current = self.settings
        session = self._session(current.address, current.port,
                                '(vdi list)')
        try:
            return [(image.name, image.size)
                    for image in listing.images(session)]
        finally:
            session.close()

    def delete(self, address, port, name):
        session = self._session(address, port, name)
        try:
            deletion.delete(session, name)
        finally:
            session.close()
