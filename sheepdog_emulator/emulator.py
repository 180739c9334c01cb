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
"""Set up and steer emulated sheepdog clusters: the admin entry point.

The ``sheepdog-emulator`` console script (``setup``, ``down``, ``up``,
``knobs``, ``calls``) and the same actions as functions for test
fixtures and the bench. Fixtures import these in-process on Python 2.7
as well as 3, so this module runs on both; the ``dog``/``collie``
program itself (sheepdog_emulator.dog) is a Python 3 program that the
wrapper scripts written here always start under a Python 3 interpreter,
as a process of its own, the way a driver starts the real ``dog``.
"""

import os
import subprocess
import sys
import time

# Part of this module's API: fixtures and the bench look at VDIs with it.
from sheepdog_emulator.cluster import Cluster  # noqa: F401
from sheepdog_emulator.cluster import cluster_dir
from sheepdog_emulator.cluster import coerce_knob
from sheepdog_emulator.cluster import DEFAULT_ADDR
from sheepdog_emulator.cluster import DEFAULT_PORT
from sheepdog_emulator.cluster import DEFAULT_SHIFT
from sheepdog_emulator.cluster import KNOBS
from sheepdog_emulator import codec

PYTHON_ENV = 'SHEEPDOG_EMULATOR_PYTHON'
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _out(text):
    sys.stdout.write(text)
    sys.stdout.flush()


def init_cluster(root, addr=DEFAULT_ADDR, port=DEFAULT_PORT, copies=1):
    """Create (or bring back up) the cluster at addr:port under root."""
    path = cluster_dir(root, addr, port)
    for sub in ('vdis', 'meta'):
        if not os.path.isdir(os.path.join(path, sub)):
            os.makedirs(os.path.join(path, sub))
    info_path = os.path.join(path, 'cluster.json')
    if not os.path.exists(info_path):
        codec.write_json(info_path, {
            'ctime': int(time.time()), 'copies': copies,
            'block_size_shift': DEFAULT_SHIFT})
    set_down(root, addr, port, False)
    return path


def set_down(root, addr, port, down=True):
    """Make the cluster refuse connections (down) or answer again."""
    marker = os.path.join(cluster_dir(root, addr, port), 'DOWN')
    if down:
        with open(marker, 'w') as dst:
            dst.write('down\n')
    elif os.path.exists(marker):
        os.unlink(marker)


def write_knobs(root, addr, port, knobs):
    """Replace the cluster's knobs.json (atomically); None drops a knob."""
    unknown = set(knobs) - set(KNOBS)
    if unknown:
        raise ValueError('unknown knob(s): %s' % ', '.join(sorted(unknown)))
    clean = dict((k, v) for k, v in knobs.items() if v is not None)
    codec.write_json(
        os.path.join(cluster_dir(root, addr, port), 'knobs.json'), clean)
    return clean


def read_call_log(root):
    """Every call so far: a list of argv lists (argv[0] is the basename)."""
    import ast
    try:
        with open(os.path.join(root, 'calls.log'), 'rb') as src:
            lines = src.read().decode('utf-8', 'surrogateescape')
    except (IOError, OSError):
        return []
    return [ast.literal_eval(line) for line in lines.splitlines() if line]


def _real_interpreter(python):
    """python's own binary: a wrapper should not pay for a venv or shim."""
    code = 'import os, sys; print(os.path.realpath(sys.executable))'
    try:
        found = subprocess.check_output([python, '-S', '-E', '-c', code])
    except (OSError, subprocess.CalledProcessError):
        return None
    return found.decode('utf-8').strip() or None


def _python3_on_path():
    for directory in os.environ.get('PATH', '').split(os.pathsep):
        candidate = os.path.join(directory or '.', 'python3')
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            real = _real_interpreter(candidate)
            if real:
                return real
    return None


def python_for_wrappers():
    """A Python 3 interpreter for the wrappers, even when called from 2.7.

    The dog program is Python 3 only. Under Python 3 this is the running
    interpreter's real binary; otherwise ``$SHEEPDOG_EMULATOR_PYTHON`` or
    the first ``python3`` on ``PATH``, resolved through venvs and pyenv
    shims to the binary itself, since a shim costs a shell per call.
    """
    explicit = os.environ.get(PYTHON_ENV)
    if explicit:
        return _real_interpreter(explicit) or explicit
    if sys.version_info[0] >= 3:
        return os.path.realpath(sys.executable)
    found = _python3_on_path()
    if found is None:
        raise RuntimeError('the sheepdog emulator needs a Python 3 '
                           'interpreter: put python3 on PATH or set %s'
                           % PYTHON_ENV)
    return found


def install_wrappers(bin_dir, root=None, names=('dog', 'collie'),
                     python=None):
    """Write executable dog/collie scripts into bin_dir; returns paths."""
    if not os.path.isdir(bin_dir):
        os.makedirs(bin_dir)
    python = python or python_for_wrappers()
    # -S -E: no site, no environment, for the fastest start-up; the
    # package's parent goes last on the path so nothing shadows stdlib.
    body = ('#!%s -SE\n'
            '# sheepdog CLI emulator: test/demo tooling, not sheepdog.\n'
            'import sys\n'
            'sys.path.append(%r)\n'
            'from sheepdog_emulator import dog\n'
            'sys.exit(dog.main(sys.argv, root=%r))\n'
            % (python, _PACKAGE_PARENT, root and os.path.abspath(root)))
    paths = []
    for name in names:
        path = os.path.join(bin_dir, name)
        tmp = path + '.tmp'
        with open(tmp, 'w') as dst:
            dst.write(body)
        os.chmod(tmp, 0o755)
        os.rename(tmp, path)
        paths.append(path)
    return paths


def admin_main(argv):
    """``sheepdog-emulator ACTION ...``: set up and steer clusters."""
    import argparse
    parser = argparse.ArgumentParser(
        prog='sheepdog-emulator',
        description='Set up and steer emulated sheepdog clusters (test '
                    'and demo tooling only).')
    parser.add_argument('--root', default=os.environ.get(
        'SHEEPDOG_EMULATOR_ROOT'), help='emulator data root')
    parser.add_argument('--address', default=DEFAULT_ADDR)
    parser.add_argument('--port', type=int, default=DEFAULT_PORT)
    actions = parser.add_subparsers(dest='action')
    setup = actions.add_parser('setup', help='create the cluster and '
                               'write dog/collie wrappers')
    setup.add_argument('--bin', required=True, help='directory for the '
                       'dog and collie wrapper scripts')
    actions.add_parser('down', help='make the cluster refuse connections')
    actions.add_parser('up', help='make the cluster answer again')
    knobs = actions.add_parser('knobs', help='replace knobs.json with '
                               'NAME=VALUE pairs (none: clear)')
    knobs.add_argument('pairs', nargs='*', metavar='NAME=VALUE')
    actions.add_parser('calls', help='print the call log')
    args = parser.parse_args(argv)
    if not args.root:
        parser.error('--root (or SHEEPDOG_EMULATOR_ROOT) is required')
    if args.action == 'setup':
        path = init_cluster(args.root, args.address, args.port)
        paths = install_wrappers(args.bin, args.root)
        _out('cluster: %s\n' % path)
        for path in paths:
            _out('wrapper: %s\n' % path)
        _out('export PATH=%s:$PATH\n' % os.path.abspath(args.bin))
    elif args.action in ('down', 'up'):
        set_down(args.root, args.address, args.port,
                 args.action == 'down')
    elif args.action == 'knobs':
        values = {}
        for pair in args.pairs:
            name, _sep, value = pair.partition('=')
            if name not in KNOBS:
                parser.error('unknown knob %s (known: %s)'
                             % (name, ', '.join(sorted(KNOBS))))
            values[name] = coerce_knob(KNOBS[name], value)
        write_knobs(args.root, args.address, args.port, values)
    elif args.action == 'calls':
        for call in read_call_log(args.root):
            _out(' '.join(call) + '\n')
    else:
        parser.error('an action is required')
    return 0


def console_main():
    """Entry point of the ``sheepdog-emulator`` console script."""
    return admin_main(sys.argv[1:])


if __name__ == '__main__':
    sys.exit(console_main())
