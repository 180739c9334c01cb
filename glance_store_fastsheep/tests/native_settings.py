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
"""The native client's settings, as the store hands them, for the tests.

``store.Settings`` is built from oslo.config options; the native
client's tests need only the attributes it reads, with values small
enough for a fake sheep, or deadlines long enough for a real cluster on
a loaded machine. One stand-in, so that an attribute the client starts
to read is added once; a test sets ``port`` (and what it changes) on its
own instance.
"""

from oslo_utils import units

from glance_store_fastsheep import client


class Settings(object):
    """Against a fake sheep: 64 KiB objects, short deadlines."""

    address = '127.0.0.1'
    read_size = 16384
    command_timeout = 5.0
    transfer_timeout = 5.0
    write_concurrency = 4
    write_budget = 16
    serve_any_name = True
    port = None
    _addresses = None
    stall_timeout = None
    failover_attempts = 4
    client = client.NATIVE

    def __init__(self, port=None):
        if port is not None:
            self.port = port

    @property
    def addresses(self):
        """The entry points: the sheep at address:port alone unless set.

        The client connects to no other sheep than these and the members
        they name; with one, a stall is bounded by transfer_timeout.
        """
        if self._addresses is None:
            return [(self.address, self.port)] if self.port else []
        return self._addresses

    @addresses.setter
    def addresses(self, value):
        self._addresses = value


class RealClusterSettings(Settings):
    """Against real sheep: 4 MiB objects, deadlines for a loaded host."""

    read_size = units.Mi
    command_timeout = 30.0
    transfer_timeout = 20.0
    write_concurrency = 8
