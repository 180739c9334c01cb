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
"""The port the fake dog's and the emulator's stores are configured with."""

import errno
import socket

from oslotest import base as oslo_base

from glance_store_fastsheep import opts
from glance_store_fastsheep.tests import ports
from glance_store_fastsheep.tests.unit import base


class RefusedPortTest(oslo_base.BaseTestCase):

    def test_connections_are_refused(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(sock.close)
        error = sock.connect_ex(('127.0.0.1', ports.refused_port()))
        self.assertEqual(errno.ECONNREFUSED, error)

    def test_one_port_per_process(self):
        self.assertEqual(ports.refused_port(), ports.refused_port())

    def test_never_sheepdogs_default(self):
        port = ports.refused_port()
        self.assertNotEqual(opts.DEFAULT_PORT, port)
        conf = base.make_conf()
        self.assertEqual(port, conf.glance_store.sheepdog_store_port)
        self.assertEqual('dog', conf.glance_store.sheepdog_store_client)
