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
"""A test fixture around the sheepdog CLI emulator (test tooling only).

``SheepdogEmulator`` gives a test its own emulated cluster at
127.0.0.1:<port> and a bin directory holding ``dog`` and ``collie``
wrappers with the data root baked in, so a driver under test can be
pointed at ``fixture.dog_path`` (or have ``fixture.bin_dir`` put on PATH)
and nothing leaks between tests. The helpers look at the cluster directly
(``vdi_bytes``, ``vdi_exists``) so assertions do not depend on the CLI the
test is exercising.

It runs on Python 2.7 (``tox -e py27``) as on 3: it only calls the
emulator's set-up helpers in-process, while the ``dog``/``collie``
wrappers it installs start the CLI under a Python 3 interpreter. To set up
a cluster by hand, use the ``sheepdog-emulator`` console script.
"""

import os

import fixtures

from sheepdog_emulator import emulator


class SheepdogEmulator(fixtures.Fixture):
    """An emulated sheepdog cluster plus dog/collie wrappers.

    :param port: the cluster's port (default 7000, ``dog``'s own default,
        which the emulator's CLI tests rely on; each fixture has its own
        root, so tests may all use the same port). The emulator opens no
        socket, but a driver under test may connect to the cluster's port
        (the object-table check after an upload): such tests pass
        ``tests.ports.refused_port()``, so that they never reach a real
        sheep listening on 7000.
    :param put_on_path: also prepend ``bin_dir`` to PATH for the test, so
        a bare ``dog``/``collie`` (as the Pike driver runs it) is found.
    :param knobs: initial fault/latency knobs (see ``set_knobs``).
    """

    def __init__(self, port=emulator.DEFAULT_PORT, address='127.0.0.1',
                 put_on_path=False, knobs=None):
        super(SheepdogEmulator, self).__init__()
        self.address = address
        self.port = int(port)
        self.put_on_path = put_on_path
        self._initial_knobs = dict(knobs or {})

    def _setUp(self):
        self.root = self.useFixture(fixtures.TempDir()).path
        self.bin_dir = os.path.join(self.root, 'bin')
        emulator.init_cluster(self.root, self.address, self.port)
        self.dog_path, self.collie_path = emulator.install_wrappers(
            self.bin_dir, self.root)
        self.cluster = emulator.Cluster(self.root, self.address, self.port)
        self.knobs = {}
        if self._initial_knobs:
            self.set_knobs(**self._initial_knobs)
        if self.put_on_path:
            self.useFixture(fixtures.EnvironmentVariable(
                'PATH', self.bin_dir + os.pathsep + os.environ.get(
                    'PATH', '')))

    @property
    def cluster_dir(self):
        return self.cluster.path

    # -- steering ----------------------------------------------------------

    def set_knobs(self, **knobs):
        """Merge knobs into the cluster's knobs.json (None removes one).

        Known knobs: latency_ms, <op>_latency_ms (op in create, list,
        read, write, delete, resize, info, node), object_service_ms,
        fail_after_bytes, fail_at_offset, short_bytes, fail_ops (a list
        of ops), fault_vdi. Every running and future CLI call sees the
        change.
        """
        merged = dict(self.knobs)
        merged.update(knobs)
        self.knobs = emulator.write_knobs(self.root, self.address,
                                          self.port, merged)
        return self.knobs

    def clear_knobs(self):
        self.knobs = emulator.write_knobs(self.root, self.address,
                                          self.port, {})

    def stop(self):
        """The daemon goes away: calls fail with 'Connection refused'."""
        emulator.set_down(self.root, self.address, self.port, True)

    def start(self):
        emulator.set_down(self.root, self.address, self.port, False)

    # -- looking at the cluster directly --------------------------------------

    def vdi_path(self, name):
        return self.cluster.data_path(name)

    def vdi_exists(self, name):
        return os.path.exists(self.vdi_path(name))

    def vdi_size(self, name):
        return os.path.getsize(self.vdi_path(name))

    def vdi_bytes(self, name):
        with open(self.vdi_path(name), 'rb') as src:
            return src.read()

    def list_vdis(self):
        return sorted(self.cluster.names())

    def create_vdi(self, name, data=b'', size=None):
        """Create a VDI holding data (size defaults to len(data))."""
        size = len(data) if size is None else size
        self.cluster.lock(True)
        try:
            if not self.cluster.create(name, size, '1',
                                       emulator.DEFAULT_SHIFT):
                raise ValueError('VDI %s exists already' % name)
        finally:
            self.cluster.unlock()
        if data:
            with open(self.vdi_path(name), 'r+b') as dst:
                dst.write(data)
        return self.vdi_path(name)

    def call_log(self):
        """argv lists of every CLI call so far (argv[0] is dog/collie)."""
        return emulator.read_call_log(self.root)

    def calls(self, subcommand=None):
        """Calls so far, optionally only 'vdi <subcommand>' ones."""
        log = self.call_log()
        if subcommand is None:
            return log
        return [c for c in log
                if len(c) > 2 and c[1] == 'vdi' and c[2] == subcommand]
