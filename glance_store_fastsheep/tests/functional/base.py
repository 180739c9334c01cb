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
"""Functional tests: the store against the sheepdog CLI emulator.

``make_cluster`` gives each test its cluster; the real-cluster suite
(``glance_store_fastsheep/tests/real``) overrides it. Every test class
here runs twice: directly under native threads, and
again in a child interpreter that calls ``eventlet.monkey_patch()`` first
(``test_eventlet``). ``FASTSHEEP_FUNCTIONAL_MODE`` tells the tests which
mode they are meant to be in, and ``test_mode`` checks the driver agrees.
"""

import io
import os

import fixtures
from glance_store import backend
from glance_store import location
from oslo_config import cfg
from oslotest import base
import six

from fastpath_integration.harness import host
from glance_store_fastsheep import hub_safe
from glance_store_fastsheep import names
from glance_store_fastsheep.native import membership
from glance_store_fastsheep import store
from glance_store_fastsheep.tests import emulator_fixture
from glance_store_fastsheep.tests import ports

KIB = 1024
MIB = 1024 * 1024
MODE_VARIABLE = 'FASTSHEEP_FUNCTIONAL_MODE'
# The store's own naming of an upload's VDI (FunctionalTestCase.setUp).
ATTEMPT_NAMES = store.vdi_name


def expected_mode():
    return os.environ.get(MODE_VARIABLE, 'threads')


def os_thread_id():
    """The id of the OS thread running the caller, green or not."""
    if hub_safe.is_green():
        from eventlet import patcher
        return patcher.original(six.moves._thread.__name__).get_ident()
    return six.moves._thread.get_ident()


def children():
    """(pid, state) of this process's child processes, zombies included."""
    return host.children(os.getpid())


def cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid) as source:
            return source.read().replace('\0', ' ').strip()
    except (IOError, OSError):
        return '?'


def open_fds():
    return sorted(os.listdir('/proc/self/fd'))


def settle_parked():
    """Settle every connection the native client parked, in any cluster."""
    for known in list(membership.MEMBERSHIPS.values()):
        known.parking.settle()


def add(sd, name, data, size=None, algo=None, verifier=None):
    """Store.add with the calling convention of the installed version."""
    size = len(data) if size is None else size
    source = data if hasattr(data, 'read') else io.BytesIO(data)
    if store.MULTIHASH and algo:
        return sd.add(name, source, size, algo, verifier=verifier)
    return sd.add(name, source, size, verifier=verifier)


class FunctionalTestCase(base.BaseTestCase):
    """An emulated cluster and a fastsheep store configured for it."""

    READ_SIZE = 256 * KIB
    CHUNK_MIB = 4
    # The emulator emulates the CLI, so the store talks to it with the
    # dog client; the real-cluster classes inherit this.
    CLIENT = 'dog'

    def setUp(self):
        super(FunctionalTestCase, self).setUp()
        # These tests check what an upload stored through dog, naming
        # the VDI by the image id they gave, as every upload did before
        # per-attempt names; use_attempt_names gives a test the store's
        # own naming (store.vdi_name), as glance-api gets it.
        self.useFixture(fixtures.MockPatchObject(
            store, 'vdi_name', names.validate_name))
        self.sheep = self.make_cluster()
        self.conf = self.make_conf()
        self.sd = self.make_store(self.conf)
        # After the store's configure(): nothing it started may outlive a
        # test, and every fd it opened must be closed again. Under
        # eventlet the driver uses tpool, whose threads and socket pair
        # live as long as the process: started before the snapshot.
        hub_safe.off_hub(lambda: None)
        self.fds_before = open_fds()

    def make_cluster(self):
        # A port nobody listens on: the store connects to the cluster's
        # port after an upload, and a real sheep may run on 7000.
        return self.useFixture(emulator_fixture.SheepdogEmulator(
            port=ports.refused_port(), put_on_path=True))

    def make_conf(self, **overrides):
        conf = cfg.ConfigOpts()
        conf.register_opts(backend._STORE_OPTS, group='glance_store')
        conf([], project='glance')
        store.Store(conf)
        values = {'sheepdog_store_client': self.CLIENT,
                  'sheepdog_store_command': self.sheep.dog_path,
                  'sheepdog_store_read_size': self.READ_SIZE,
                  'sheepdog_store_chunk_size': self.CHUNK_MIB,
                  'sheepdog_store_port': self.sheep.port,
                  'sheepdog_store_transfer_timeout': 30,
                  # Short VDI names ('img'); unit test_store_trust checks
                  # the default.
                  'sheepdog_store_serve_any_name': True}
        values.update(overrides)
        for name, value in values.items():
            conf.set_override(name, value, group='glance_store')
        return conf

    def use_attempt_names(self):
        """Uploads from now on name their VDIs as the store does."""
        self.useFixture(fixtures.MockPatchObject(store, 'vdi_name',
                                                 ATTEMPT_NAMES))

    def make_store(self, conf, configure=True):
        sd = store.Store(conf)
        if configure:
            sd.configure(re_raise_bsc=True)
        return sd

    def location(self, name_or_uri, conf=None):
        uri = name_or_uri
        if '://' not in uri:
            uri = 'sheepdog://%s:%d:%s' % (self.sheep.address,
                                           self.sheep.port, name_or_uri)
        return location.Location('sheepdog', store.StoreLocation,
                                 conf or self.conf, uri=uri)

    def read_all(self, name, offset=0, chunk_size=None):
        stream, length = self.sd.get(self.location(name), offset=offset,
                                     chunk_size=chunk_size)
        data = b''.join(stream)
        self.assertEqual(length, len(data))
        return data

    def cluster_pids(self):
        """Child processes that are the cluster's own, not the driver's."""
        return ()

    def assertNothingLeft(self, vdis=()):
        """No VDI but vdis, no child process (not even a zombie), no fd.

        The native client's parked connections (requests a failover or
        an operation's end left in flight) are settled first, as any
        later operation of the cluster would, within their bound.
        """
        settle_parked()
        self.assertEqual(sorted(vdis), self.sheep.list_vdis())
        own = set(self.cluster_pids())
        self.assertEqual([], [(pid, state, cmdline(pid))
                              for pid, state in children()
                              if pid not in own])
        self.assertEqual(self.fds_before, open_fds())

    def test_mode(self):
        self.assertEqual(expected_mode() == 'eventlet', hub_safe.is_green())
