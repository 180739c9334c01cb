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
"""How the native client fails: faults of a connection and sheep's results.

``ConnectionLost`` and its kinds are faults of a connection, which
another sheep may not have (``cluster`` fails over on them); a result
sheep answered says what the cluster thinks and becomes the shared
table's exception (``error_for``); ``Unsupported`` is a cluster this
client cannot speak to, which the dog client may.
"""

from glance_store import exceptions

from glance_store_fastsheep import results

# What every Unsupported ends with: the client that still serves the
# cluster.
USE_DOG = ('set sheepdog_store_client = dog to use the sheepdog command '
           'line tool instead')


class Unsupported(exceptions.BackendException):
    """The cluster speaks a protocol the native client does not."""


class ConnectionLost(exceptions.BackendException):
    """The connection failed: another sheep may serve what was in flight.

    Raised for faults of the connection (refused, reset, closed,
    stalled), never for a result sheep answered: those say what the
    cluster thinks, which another gateway would not change.
    """


class Unreachable(ConnectionLost):
    """No connection to the sheep could be made."""


class Stalled(ConnectionLost):
    """A request stayed unanswered longer than the stall timeout."""


def error_for(result, where, what, name):
    """The glance_store exception for a final result code.

    The class is the shared table's (``results.exception_class``), as
    for what ``dog`` prints (dog.command.error_for); the message names
    sheep's code and the node.
    """
    text = results.result_text(result)
    kind = results.exception_class(result)
    if kind is exceptions.Duplicate:
        message = ('sheepdog image %s already exists (%s answered %s)'
                   % (name, where, text))
    elif kind is exceptions.NotFound:
        message = ('sheepdog image %s not found by %s: %s'
                   % (name, where, text))
    else:
        message = '%s answered %s to %s' % (where, text, what)
    return kind(message)
