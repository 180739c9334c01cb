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
"""The ``dog`` client: every store operation through the sheepdog CLI.

``sheepdog_store_client = dog``. Downloads are ``dog vdi read``
processes (``dog.read``, ``dog.readahead``), uploads ``dog vdi write``
processes (``dog.write``), the rest ``dog vdi list``, ``create``,
``resize`` and ``delete`` (``dog.command``). It is kept for operators
whose cluster only the command line tool is known to reach; the store
does not look behind ``client.Client``.
"""

import os

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import excutils

from glance_store_fastsheep import client
from glance_store_fastsheep.dog import command
from glance_store_fastsheep.dog import listing
from glance_store_fastsheep.dog import read
from glance_store_fastsheep.dog import readahead
from glance_store_fastsheep.dog import write
from glance_store_fastsheep import stream

LOG = logging.getLogger(__name__)


class DogClient(client.Client):
    """Sheepdog through ``self.dog``, the resolved ``dog`` command.

    The command is looked for on PATH once, when the client is made, so
    that a later change of PATH in the service cannot swap the binary
    under the store (``command.find_command``).
    """

    def __init__(self, settings, strict=False):
        super(DogClient, self).__init__(settings, strict=strict)
        configured = settings.command
        found = command.find_command(configured)
        if found is None:
            if strict:
                if os.path.isabs(configured):
                    where = 'is not an executable file'
                else:
                    where = 'not found (looked for %s on PATH)' % (
                        ' and '.join(command.command_names(configured)))
                raise client.ConfigError(
                    'sheepdog command %r %s; the dog client '
                    '(sheepdog_store_client = dog) needs it'
                    % (configured, where))
            found = configured
        self.dog = command.DogCommand(found, settings.command_timeout)

    def describe(self):
        return self.dog.command

    def check(self):
        """``dog vdi list`` against the configured cluster must succeed.

        A cluster that does not answer the CLI now would fail every
        upload; the message names the command, so that an operator sees
        which ``dog`` was run.
        """
        current = self.settings
        try:
            self.dog.list(current.address, current.port)
        except Exception as exc:
            raise client.ClientError(
                'sheepdog cluster at %s:%d does not answer `%s vdi list`: '
                '%s' % (current.address, current.port, self.dog.command,
                        exc))

    def lookup(self, address, port, name):
        return self.dog.stat(address, port, name)

    def read(self, address, port, name, offset, length):
        """One ``dog vdi read`` stream, or read-ahead beyond one window."""
        current = self.settings
        pieces = read.pieces
        if current.read_concurrency > 1 and length > current.read_window:
            pieces = readahead.pieces
        return stream.Stream(pieces, self.dog, current, address, port, name,
                             offset, length, transfer=stream.Transfer(
                                 client.DOG, address, port, name, length))

    def delete(self, address, port, name):
        """Delete the VDI; NotFound when missing.

        ``dog vdi delete`` exits 0 for a missing VDI and even when the
        daemon is down, so existence is checked before and after. An
        image with snapshots is left intact (InUseByStore), as the native
        client leaves it (native.deletion.delete says why): ``vdi list``
        shows each snapshot of the name as an ``s`` line.
        """
        dog = self.dog
        infos = [info for info in dog.list(address, port, name)
                 if info.name == name]
        if listing.find_current(infos, name) is None:
            raise exceptions.NotFound(
                message='sheepdog image %s does not exist at %s:%d'
                % (name, address, port))
        snapshots = [info for info in infos if info.state == 's']
        if snapshots:
            raise exceptions.InUseByStore(
                message='sheepdog image %s has %d snapshot(s) at %s:%d: '
                'left intact; delete them first (dog vdi delete -s)'
                % (name, len(snapshots), address, port))
        dog.check('delete', address, port, name)
        if dog.stat(address, port, name) is not None:
            raise exceptions.BackendException(
                'sheepdog image %s still exists after `vdi delete`' % name)

    def vdis(self):
        current = self.settings
        return [(info.name, info.size)
                for info in self.dog.list(current.address, current.port)
                if listing.is_current(info)]

    def write(self, name, source, digest, image_size, transfer=None):
        """``dog vdi create`` + object-aligned ``dog vdi write`` processes.

        No existence check first: ``vdi create`` refuses an existing
        name (Duplicate, see dog.command.error_for), and a check would
        cost one more CLI call per upload without closing the race.
        After the last write the VDI's size and its object table are
        checked, because ``dog`` can exit 0 for data sheep did not keep.
        """
        current = self.settings
        uploader = write.Uploader(self.dog, current, current.address,
                                  current.port, name)
        try:
            if image_size and image_size > 0:
                written = uploader.write_known(source, digest, image_size)
            else:
                written = uploader.write_unknown(source, digest)
            info = self.dog.stat(current.address, current.port, name)
            if info is None or info.size != written:
                raise exceptions.BackendException(
                    'sheepdog image %s is %s bytes after writing %d'
                    % (name, info and info.size, written))
            self._check_object_table(name, written)
        except BaseException as exc:
            with excutils.save_and_reraise_exception():
                LOG.error('Upload of image %s to sheepdog failed: %s',
                          name, exc)
                uploader.abort()
                if uploader.created:
                    self._delete_partial(name)
        return written

    def _check_object_table(self, name, written):
        """Fail an upload whose objects the cluster did not record.

        A sheep that dies mid-upload can make sheepdog lose the record
        of an object ``dog vdi write`` wrote, which then reads back as
        zeros. No ``dog`` command shows the object table: the native
        client reads it (NativeClient.unowned_objects), for one
        connection and 4 bytes per object.
        """
        current = self.settings
        native = client.get_client(current, name=client.NATIVE)
        try:
            lost = native.unowned_objects(current.address, current.port,
                                          name, written)
        except client.ClientError as exc:
            # dog reached this address a moment ago; a cluster that is
            # gone now fails the image's reads loudly, not with zeros.
            LOG.warning('Stored image %s without checking its object '
                        'table: %s', name, exc)
            return
        if lost is None:
            return
        if lost:
            raise exceptions.BackendException(
                'sheepdog lost the record of %d object(s) of image %s '
                '(indexes %s) while it was written, probably because a '
                'sheep failed; they would read back as zeros'
                % (len(lost), name, ', '.join(str(i) for i in lost[:16])))

    def _delete_partial(self, name):
        current = self.settings
        try:
            self.dog.check('delete', current.address, current.port, name)
            if self.dog.stat(current.address, current.port,
                             name) is not None:
                raise exceptions.BackendException('still listed')
        except Exception as exc:
            LOG.error('Could not delete the partial sheepdog image %s at '
                      '%s:%d after a failed upload: %s', name,
                      current.address, current.port, exc)
        else:
            LOG.info('Deleted the partial sheepdog image %s after a failed '
                     'upload', name)
