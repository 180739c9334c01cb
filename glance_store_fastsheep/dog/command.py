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
"""Everything the store knows about the ``dog``/``collie`` command line.

Names and addresses only ever reach the CLI as separate argv items (no
shell), checked first (``names``) so that the CLI cannot read one as an
option or split it differently from what glance meant. The transfer
commands (``vdi read``/``vdi write``) are spawned by ``dog.process`` for
``dog.read`` and ``dog.write``; the short control commands run here, and
``dog.listing`` parses what ``vdi list`` prints.
"""

import os
import subprocess
import tempfile

from glance_store import exceptions
from oslo_log import log as logging
from oslo_utils import encodeutils
import six

from glance_store_fastsheep.dog import listing
from glance_store_fastsheep import hub_safe
from glance_store_fastsheep import names
from glance_store_fastsheep import results

LOG = logging.getLogger(__name__)


def _which(name):
    for folder in os.environ.get('PATH', os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or os.curdir, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


def command_names(configured):
    """The names looked up on PATH for the configured command, in order.

    The default, ``dog``, also finds the CLI under its older name,
    ``collie``, which older sheepdog packages install.
    """
    if configured == names.DEFAULT_COMMAND:
        return (configured, names.OLD_COMMAND)
    return (configured,)


def find_command(configured):
    """Absolute path of the CLI, or None when it cannot be run.

    Resolved once at configure time, so that a later change of PATH in
    the service cannot swap the binary under the store.
    """
    if os.path.isabs(configured):
        if os.path.isfile(configured) and os.access(configured, os.X_OK):
            return configured
        return None
    if os.sep in configured:
        # A relative path would depend on the service's working directory.
        return None
    for name in command_names(configured):
        found = _which(name)
        if found is not None:
            return found
    return None


def error_for(action, name, returncode, stderr):
    """Map a failed CLI call to the glance_store exception it means.

    ``dog`` prints sheep's text of the result (sd_strerror in
    sheepdog's include/sheep.h) after its own words: the result code
    whose text it holds maps through the table both clients share
    (``results``). Anything else is a BackendException quoting what
    ``dog`` said.
    """
    text = encodeutils.safe_decode(stderr or b'', errors='replace').strip()
    message = ('sheepdog `vdi %s` of %s failed (exit %s): %s'
               % (action, name, returncode, text or 'no message'))
    return results.exception_class(results.code_in(text))(message)


def _argv_item(item):
    if isinstance(item, bytes):
        return item
    if not isinstance(item, six.text_type):
        item = six.text_type(item)
    # Python 2's subprocess encodes text arguments as ASCII.
    return item.encode('utf-8') if six.PY2 else item


class DogCommand(object):
    """The argv of every sheepdog call the store makes, and the short ones.

    One instance per configured store; it holds no per-request state.
    """

    def __init__(self, command, command_timeout):
        self.command = command
        self.command_timeout = command_timeout

    def argv(self, action, address, port, *args):
        """`dog vdi ACTION -a ADDRESS -p PORT ARGS...` as a list."""
        argv = [self.command, 'vdi', action, '-a', address, '-p', str(port)]
        argv.extend(args)
        return [_argv_item(item) for item in argv]

    def run(self, action, address, port, *args):
        """Run a control command; return (exit status, stdout, stderr).

        Output goes to temporary files rather than pipes: nothing to
        drain while waiting, so a chatty child can never deadlock us and
        the wait needs no green pipe.
        """
        argv = self.argv(action, address, port, *args)
        out = tempfile.TemporaryFile()
        err = tempfile.TemporaryFile()
        devnull = open(os.devnull, 'rb')
        try:
            try:
                proc = subprocess.Popen(argv, stdin=devnull, stdout=out,
                                        stderr=err, close_fds=True)
            except OSError as exc:
                raise exceptions.BackendException(
                    'cannot run %s: %s' % (self.command, exc))
            try:
                status = hub_safe.wait_process(proc, self.command_timeout)
            except hub_safe.Timeout:
                hub_safe.kill_and_reap(proc)
                LOG.error('Killed `%s`: no exit after %ss',
                          ' '.join(argv), self.command_timeout)
                raise exceptions.BackendException(
                    'sheepdog `vdi %s` timed out after %ss'
                    % (action, self.command_timeout))
            out.seek(0)
            err.seek(0)
            return status, out.read(), err.read()
        finally:
            devnull.close()
            out.close()
            err.close()

    def check(self, action, address, port, name, *args):
        """Run a control command on VDI name; raise its error if it fails."""
        status, out, err = self.run(action, address, port, name, *args)
        if status != 0:
            raise error_for(action, name, status, err)
        return out

    def list(self, address, port, name=None):
        """VdiInfo tuples from `vdi list -r` (all VDIs when name is None)."""
        args = () if name is None else (name,)
        status, out, err = self.run('list', address, port, '-r', *args)
        if status != 0:
            raise error_for('list', name or '(all)', status, err)
        try:
            return listing.parse_list(
                encodeutils.safe_decode(out, errors='replace'))
        except ValueError as exc:
            raise exceptions.BackendException(str(exc))

    def stat(self, address, port, name):
        """The current VDI called name, or None when there is none."""
        return listing.find_current(self.list(address, port, name), name)
