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
"""The one small interface the store talks to sheepdog through.

Two clients implement it: ``native`` speaks sheep's own protocol (no
sheepdog package on the glance host) and ``dog`` runs the sheepdog
command line tool. ``store.py`` picks one at configure time with
``get_client`` and never looks behind this interface, as glance_store's
cinder driver picks its connector in ``_drivers/cinder/base.py``.

Every method that names an ``address`` and ``port`` takes them from the
image's location: where to start, which the configured entry points may
complement. ``write`` always creates the image through the configured
cluster.
"""

import abc

from glance_store import exceptions
from oslo_utils import importutils
import six

from glance_store_fastsheep import nodes

NATIVE = 'native'
DOG = 'dog'
CLIENTS = (NATIVE, DOG)


@six.add_metaclass(abc.ABCMeta)
class Client(object):
    """What the store asks of sheepdog, whichever way it is asked.

    Errors are glance_store exceptions: ``NotFound`` for a missing image,
    ``Duplicate`` for an existing name on write, ``StorageFull``,
    ``InUseByStore`` and ``Forbidden`` where sheepdog means those, and a
    ``BackendException`` that names sheepdog's own code and the node for
    anything else.
    """

    def __init__(self, settings, strict=False):
        """A client of the cluster ``settings`` configure.

        ``strict`` at configure time: what the client needs of this host
        and lacks (the dog client's command) is a ``ConfigError``, which
        the store refuses to configure with. Otherwise, for a store used
        before any configure succeeded, the client takes the settings as
        they are and fails when an operation needs what is missing.
        """
        self.settings = settings

    def describe(self):
        """What the client reaches sheepdog through, for the store's log."""
        return self.settings.client

    @abc.abstractmethod
    def check(self):
        """Check at configure time that the configured cluster can serve.

        Raises ``ClientError`` with a message meant for the operator.
        """

    def admits(self, address, port):
        """Whether a location naming address:port may be served.

        Decided before anything connects to it: here, only the
        configured entry points (``settings.addresses``), compared by
        resolved address. The native client also admits the members
        they name.
        """
        from_location = (address, port)
        return any(nodes.same_node(from_location, entry)
                   for entry in self.settings.addresses)

    @abc.abstractmethod
    def lookup(self, address, port, name):
        """The current VDI ``name`` (an object with ``size``), or None."""

    def size(self, address, port, name):
        """The size of image ``name`` in bytes; NotFound if missing."""
        info = self.lookup(address, port, name)
        if info is None:
            raise exceptions.NotFound(
                message='sheepdog image %s does not exist at %s:%d'
                % (name, address, port))
        return info.size

    @abc.abstractmethod
    def read(self, address, port, name, offset, length):
        """Return a lazy iterable of ``length`` bytes from ``offset``.

        It connects or spawns nothing until iterated, and has ``close()``.
        """

    @abc.abstractmethod
    def write(self, name, source, digest, image_size, transfer=None):
        """Create image ``name`` and write ``source`` into it.

        ``source`` is an ``image_data.Source`` and ``digest`` an
        ``image_data.Digest``, both built by the store: a client reads
        and hashes through them, never wraps them again.
        ``image_size`` 0 means unknown (a chunked upload). Every byte
        written goes through ``digest``. Returns the bytes written. On
        failure nothing of the image is left behind where the cluster
        allows it, and the error is raised. ``transfer`` (a
        ``stream.Transfer``) learns the failovers, for the store's line.
        """

    @abc.abstractmethod
    def delete(self, address, port, name):
        """Delete image ``name``; NotFound if it does not exist."""

    @abc.abstractmethod
    def vdis(self):
        """The current VDIs of the configured cluster, as (name, size).

        Snapshots and deleted VDIs are left out. Read-only: for the
        orphan audit, which compares them with glance's locations.
        """


class ClientError(Exception):
    """A configuration the chosen client cannot work with."""


class ConfigError(ValueError):
    """An option value the store cannot work with.

    Raised by ``settings.Settings`` and by a client built ``strict``.
    """


# Where each client lives, by dotted name: each implementation imports
# this module for its base class, so an import statement here, even in
# a function, would make an import cycle (test_import_graph refuses
# one). Loading by name is how oslo drivers are picked, too.
CLIENT_CLASSES = {
    NATIVE: 'glance_store_fastsheep.native.client.NativeClient',
    DOG: 'glance_store_fastsheep.dog.client.DogClient',
}


def get_client(settings, strict=False, name=None):
    """Return the client ``name`` names, by default ``settings.client``.

    ``strict``: see ``Client.__init__``. A client asks for the other one
    by name where only the other can answer (the dog client's object
    table check, ``dog.client.DogClient.write``): the two never import
    each other.
    """
    return importutils.import_class(CLIENT_CLASSES[name or settings.client])(
        settings, strict=strict)
