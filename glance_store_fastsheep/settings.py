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
"""The checked, ready-to-use values of one store's options.

Read once per ``configure()`` from whichever group holds them
(``[glance_store]`` on Pike, the backend id's group with
``enabled_backends``), so transfers never touch oslo.config.
"""

from oslo_log import log as logging
from oslo_utils import units

from glance_store_fastsheep import client
from glance_store_fastsheep import names
from glance_store_fastsheep import opts

LOG = logging.getLogger(__name__)


def _objects_in_bytes(group, name):
    """Option name (MiB) in bytes, rounded up to whole sheepdog objects.

    Transfers cut on object boundaries never make two processes touch
    one 4 MiB object; a value that is not a multiple is used rounded up,
    with a warning, rather than refused.
    """
    mib = getattr(group, name)
    wanted = mib * units.Mi
    rounded = -(-wanted // opts.OBJECT_SIZE) * opts.OBJECT_SIZE
    if rounded != wanted:
        LOG.warning('%s %d MiB is not a multiple of the 4 MiB sheepdog '
                    'object size; using %d MiB', name, mib,
                    rounded // units.Mi)
    return rounded


def parse_entry_point(item):
    """(address, port) of a ``host:port`` item; IPv6 in brackets.

    The port is required: an entry point without one is more likely a
    mistake than sheep's default port.
    """
    item = item.strip()
    host, sep, port = item.rpartition(':')
    if not sep or not host:
        raise ValueError('%r is not host:port' % item)
    if ':' in host and not (host.startswith('[') and host.endswith(']')):
        raise ValueError('%r: put an IPv6 address in brackets, '
                         '[address]:port' % item)
    return (names.validate_address(host),
            names.validate_port(port))


class Settings(object):
    """Option values in the units the transfers use.

    Bounds are oslo.config's (each option's ``min``/``max``); what is
    checked here is what oslo.config cannot express: an address and a
    port ``dog`` will take as one argument each. Whether the ``dog``
    client's command exists is the dog client's to check: with the
    ``native`` client no command is looked for, and a glance host needs
    no sheepdog package.
    """

    def __init__(self, group):
        try:
            self.address = names.validate_address(
                group.sheepdog_store_address)
            self.port = names.validate_port(group.sheepdog_store_port)
        except ValueError as exc:
            raise client.ConfigError(str(exc))
        self.chunk_size = _objects_in_bytes(group,
                                            'sheepdog_store_chunk_size')
        self.read_size = group.sheepdog_store_read_size
        self.pipe_size = group.sheepdog_store_pipe_size
        self.write_concurrency = group.sheepdog_store_write_concurrency
        self.write_budget = group.sheepdog_store_write_budget
        self.read_concurrency = group.sheepdog_store_read_concurrency
        self.read_window = _objects_in_bytes(group,
                                             'sheepdog_store_read_window')
        self.readahead_budget = (group.sheepdog_store_readahead_budget *
                                 units.Mi)
        self.command_timeout = group.sheepdog_store_command_timeout
        self.transfer_timeout = group.sheepdog_store_transfer_timeout
        self.stall_timeout = min(group.sheepdog_store_stall_timeout,
                                 self.transfer_timeout)
        self.failover_attempts = group.sheepdog_store_failover_attempts
        # The entry points: the configured sheep first (uploads start
        # there). The members they name are the process's, per cluster
        # (native.membership.Membership), not these settings'.
        self.addresses = [(self.address, self.port)]
        for item in group.sheepdog_store_addresses:
            try:
                node = parse_entry_point(item)
            except ValueError as exc:
                raise client.ConfigError('sheepdog_store_addresses: %s' % exc)
            if node not in self.addresses:
                self.addresses.append(node)
        self.serve_any_name = group.sheepdog_store_serve_any_name
        # Read through oslo.config, which also answers from the
        # deprecated sheepdog_store_reader.
        self.client = group.sheepdog_store_client
        # The command line tool as configured: the dog client resolves
        # it (dog.client.DogClient); the native client runs no command.
        self.command = (group.sheepdog_store_command
                        if self.client == client.DOG else None)
