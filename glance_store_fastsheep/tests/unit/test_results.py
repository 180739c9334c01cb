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
"""One table from sheep's results to glance_store exceptions, both clients."""

from glance_store import exceptions
from oslotest import base

from glance_store_fastsheep.dog import command as dog_command
from glance_store_fastsheep.native import errors
from glance_store_fastsheep.native import proto
from glance_store_fastsheep import results


class ResultTableTest(base.BaseTestCase):

    def test_both_clients_map_each_result_alike(self):
        """dog's text of a result raises what the code raises natively.

        dog prints sheep's sd_strerror text after its own words; the
        texts are sheep's, so the dog client finds each code in them.
        """
        for code, (name, text) in sorted(results.RESULTS.items()):
            native = errors.error_for(code, 'sheep at 127.0.0.1:1',
                                      'WRITE_OBJ', 'img')
            dog = dog_command.error_for(
                'write', 'img', 1,
                ('Failed to write object 1: %s' % text).encode('ascii'))
            self.assertIs(type(native), type(dog), name)
            self.assertEqual(code, results.code_in(text), name)

    def test_text_not_of_a_result(self):
        self.assertIsNone(results.code_in('Connection refused'))
        self.assertIs(exceptions.BackendException,
                      results.exception_class(None))

    def test_protocol_error_is_a_backend_exception(self):
        """Nothing between a client and the store re-raises it."""
        exc = proto.ProtocolError('sheep at 127.0.0.1:1 sent 3 nodes')
        self.assertIsInstance(exc, exceptions.BackendException)
        self.assertEqual('sheep at 127.0.0.1:1 sent 3 nodes', str(exc))
