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

import os

from oslo_log import log as logging

from glance_store_fastsheep import cli
from glance_store_fastsheep import opts

LOG = logging.getLogger(__name__)


class ConfigError(ValueError):
    """An option value the store cannot work with."""


def _round_up(value, multiple):
    return -(-value // multiple) * multiple


class Settings(object):

    def __init__(self, group, require_command=True):
        try:
            self.address = cli.validate_address(group.sheepdog_store_address)
            self.port = cli.validate_port(group.sheepdog_store_port)
        except ValueError as exc:
            raise ConfigError(str(exc))
        chunk = group.sheepdog_store_chunk_size * opts.MIB
        self.chunk_size = _round_up(chunk, opts.OBJECT_SIZE)
        if self.chunk_size != chunk:
            LOG.warning('sheepdog_store_chunk_size %d MiB is not a multiple '
                        'of the 4 MiB sheepdog object size; using %d MiB',
                        group.sheepdog_store_chunk_size,
                        self.chunk_size // opts.MIB)
        self.read_size = group.sheepdog_store_read_size
        if self.read_size < 4096:
            raise ConfigError('sheepdog_store_read_size must be at least '
                              '4096 bytes, not %d' % self.read_size)
        self.pipe_size = group.sheepdog_store_pipe_size
        if self.pipe_size < 0:
            raise ConfigError('sheepdog_store_pipe_size must not be '
                              'negative')
        self.write_concurrency = group.sheepdog_store_write_concurrency
        if self.write_concurrency < 1:
            raise ConfigError('sheepdog_store_write_concurrency must be at '
                              'least 1')
        self.read_concurrency = group.sheepdog_store_read_concurrency
        if self.read_concurrency < 1:
            raise ConfigError('sheepdog_store_read_concurrency must be at '
                              'least 1')
        window = group.sheepdog_store_read_window * opts.MIB
        self.read_window = _round_up(window, opts.OBJECT_SIZE)
        if self.read_window != window:
            LOG.warning('sheepdog_store_read_window %d MiB is not a multiple '
                        'of the 4 MiB sheepdog object size; using %d MiB',
                        group.sheepdog_store_read_window,
                        self.read_window // opts.MIB)
        self.command_timeout = group.sheepdog_store_command_timeout
        self.transfer_timeout = group.sheepdog_store_transfer_timeout
        if self.command_timeout <= 0 or self.transfer_timeout <= 0:
            raise ConfigError('sheepdog store timeouts must be positive')
        configured = group.sheepdog_store_command
        command = cli.find_command(configured)
        if command is None:
            if require_command:
                if os.path.isabs(configured):
                    where = 'is not an executable file'
                else:
                    names = [configured]
                    if configured == opts.DEFAULT_COMMAND:
                        names.append(opts.FALLBACK_COMMAND)
                    where = 'not found (looked for %s on PATH)' % (
                        ' and '.join(names))
                raise ConfigError('sheepdog command %r %s'
                                  % (configured, where))
            command = configured
        self.command = command
        self.cli = cli.Cli(command, self.command_timeout)
