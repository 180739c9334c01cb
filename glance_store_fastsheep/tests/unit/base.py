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
"""Shared set-up of the unit tests: a fake ``dog`` and a store."""

import os
import stat
import sys

import fixtures
from glance_store import backend
from glance_store import location
from oslo_config import cfg
from oslotest import base

from glance_store_fastsheep import store
from glance_store_fastsheep.tests import ports

FAKE_DOG = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        'fake_dog.py')


def write_script(path, body):
    with open(path, 'w') as script:
        script.write(body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class FakeDog(fixtures.Fixture):
    """A bin dir with `dog` running fake_dog.py over a temp VDI dir."""

    def __init__(self, names=('dog',)):
        super(FakeDog, self).__init__()
        self.names = names

    def _setUp(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.vdi_dir = os.path.join(tmp, 'vdis')
        self.bin_dir = os.path.join(tmp, 'bin')
        os.mkdir(self.vdi_dir)
        os.mkdir(self.bin_dir)
        self.log = os.path.join(tmp, 'calls.log')
        for name in self.names:
            write_script(os.path.join(self.bin_dir, name),
                         '#!/bin/sh\nexec %s %s "$@"\n'
                         % (sys.executable, FAKE_DOG))
        # Only the fake: a glance host may have a real dog or collie in
        # /usr/bin, which must never answer a unit test.
        self.useFixture(fixtures.EnvironmentVariable('PATH', self.bin_dir))
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_DIR',
                                                     self.vdi_dir))
        self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_LOG',
                                                     self.log))
        for knob in ('DOWN', 'FAIL_WRITE', 'SHORT', 'HANG', 'WRITE_DELAY'):
            self.useFixture(fixtures.EnvironmentVariable('FAKE_DOG_' + knob))

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as log:
            return [line.split()[1:] for line in log]

    def pids(self, action):
        """Pids of the calls of `vdi ACTION`, in call order."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as log:
            return [int(line.split()[0]) for line in log
                    if line.split()[2:3] == [action]]

    def vdis(self):
        return sorted(os.listdir(self.vdi_dir))

    def put(self, name, data):
        with open(os.path.join(self.vdi_dir, name), 'wb') as vdi:
            vdi.write(data)


def held_over_limit(budget, take, give, limit, threads=8, rounds=2000):
    """Every budget.held above limit seen while threads take and give.

    Each of threads native threads takes (take(), whether it got it),
    reads budget.held and gives back, rounds times: a budget whose lock
    works never shows more than limit held. The caller asserts the
    result is empty and that budget.held is 0 afterwards.
    """
    import threading
    over = []

    def churn():
        for _round in range(rounds):
            if take():
                if budget.held > limit:
                    over.append(budget.held)
                give()

    workers = [threading.Thread(target=churn) for _thread in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return over


def make_conf(**overrides):
    """A ``[glance_store]`` configuration for the fake ``dog``.

    The tests' small sizes, the ``dog`` client (the fake's), and a port
    that refuses connections (tests.ports): never sheepdog's default
    7000, where a real sheep may listen.
    """
    conf = cfg.ConfigOpts()
    # Only the generic [glance_store] options: registering every
    # driver's would import drivers whose libraries are not installed.
    conf.register_opts(backend._STORE_OPTS, group='glance_store')
    conf([], project='glance')
    store.Store(conf)  # registers the options
    overrides.setdefault('sheepdog_store_read_size', 64 * 1024)
    overrides.setdefault('sheepdog_store_chunk_size', 4)
    overrides.setdefault('sheepdog_store_client', 'dog')
    overrides.setdefault('sheepdog_store_port', ports.refused_port())
    # The tests' VDIs have short names ('img'); test_store_trust checks
    # the default, which serves only names like a glance image's.
    overrides.setdefault('sheepdog_store_serve_any_name', True)
    for name, value in overrides.items():
        conf.set_override(name, value, group='glance_store')
    return conf


class StoreTestCase(base.BaseTestCase):
    """A configured single-store (``[glance_store]``) fastsheep store.

    ``port`` is the one make_conf configures: connections to it are
    refused.
    """

    def setUp(self):
        super(StoreTestCase, self).setUp()
        self.dog = self.useFixture(FakeDog())
        self.port = ports.refused_port()
        self.conf = self.make_conf()

    def make_conf(self, **overrides):
        return make_conf(**overrides)

    def make_store(self, conf=None, configure=True):
        sd = store.Store(conf or self.conf)
        if configure:
            sd.configure(re_raise_bsc=True)
        return sd

    def location(self, uri, conf=None):
        return location.Location('sheepdog', store.StoreLocation,
                                 conf or self.conf, uri=uri)
