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
"""The ``dog``/``collie`` program: sheepdog 1.0's CLI over local files.

TEST AND DEMO TOOLING ONLY: the driver's tests, the benchmark and
devstack gates without sheepdog run against this program through the
wrapper scripts that ``sheepdog-emulator setup`` writes. Production uses
a real sheepdog cluster and its real ``dog``.

This module is the command line: GNU ``getopt_long``-style option
parsing, usage texts and the dispatch to the subcommands. It answers the
``vdi`` subcommands the glance_store drivers use (``create``, ``list``,
``read``, ``write``, ``delete``, ``resize``) and the bare ``dog`` that
Pike's driver runs as its check, with the syntax, output formats, exit
codes and stderr messages of sheepdog 1.0's ``dog``
(doc/source/emulator.rst; sheepdog_emulator/tests/test_conformance.py
compares them with a real ``dog``). The control commands are in
sheepdog_emulator.vdi, the data path in sheepdog_emulator.transfer, the
on-disk cluster in sheepdog_emulator.cluster.

Interpreter start-up is paid on every call (the Pike driver spawns one
process per 64 MiB chunk), so it is a Python 3 program, stdlib only,
runs under ``python3 -S -E`` and imports fcntl or select only on the
paths that need them. Faults and costs come from the cluster's knobs,
read on every call, so a test can change a cluster while a driver uses
it.
"""

import os
import sys
import time

from sheepdog_emulator.cluster import Cluster
from sheepdog_emulator.cluster import DEFAULT_ADDR
from sheepdog_emulator.cluster import DEFAULT_PORT
from sheepdog_emulator.cluster import load_knobs
from sheepdog_emulator import codec
from sheepdog_emulator import transfer
from sheepdog_emulator import vdi
from sheepdog_emulator.vdi import err
from sheepdog_emulator.vdi import Exit
from sheepdog_emulator.vdi import EXIT_FAILURE
from sheepdog_emulator.vdi import EXIT_SUCCESS
from sheepdog_emulator.vdi import EXIT_USAGE
from sheepdog_emulator.vdi import out

PROG_VERSION = '1.0.1 (emulator)'
# dog names itself "dog" in its messages whatever it was started as
# (collie is a link to it); getopt's messages take argv[0] as given.
PROG = 'dog'
# Every `vdi` subcommand of sheepdog 1.0, in dog's order, as its "Available
# vdi commands" lists them; COMMANDS emulates the ones drivers run.
DOG_VDI_SUBCOMMANDS = (
    'check', 'create', 'snapshot', 'clone', 'delete', 'rollback', 'list',
    'tree', 'graph', 'object', 'track', 'setattr', 'getattr', 'resize',
    'read', 'write', 'backup', 'restore', 'alter-copy', 'lock')
SD_MAX_COPIES = 31

NEED_ARG = 1
NEED_NODELIST = 2


def _is_ip(text):
    if ':' in text:
        return all(c in '0123456789abcdefABCDEF:.' for c in text) and \
            text.count(':') >= 2
    parts = text.split('.')
    if len(parts) != 4:
        return False
    for part in parts:
        if not part.isdigit() or len(part) > 3 or int(part) > 255:
            return False
    return True


# -- the command line ------------------------------------------------------

COMMON_OPTS = {
    'a': ('address', True, 'specify the daemon address (default: '
          'localhost)'),
    'p': ('port', True, 'specify the daemon port'),
    'r': ('raw', False, 'raw output mode: omit headers, separate fields '
          'with\n                          single spaces and print all '
          'sizes in decimal bytes'),
    'v': ('verbose', False, 'print more information than default'),
    'h': ('help', False, 'display this help and exit'),
    'T': ('time', False, 'show elapsed time'),
}
VDI_OPTS = {
    'P': ('prealloc', False, 'preallocate all the data objects'),
    's': ('snapshot', True, 'specify a snapshot id or tag name'),
    'w': ('writeback', False, 'use writeback mode'),
    'c': ('copies', True, 'specify the data redundancy level'),
    'y': ('hyper', False, 'create a hyper volume'),
    'o': ('oid', True, 'specify the object id of the tracking object'),
    'z': ('block_size_shift', True, 'specify the bit shift num for data '
          'object size'),
}


class Context(object):

    def __init__(self, argv0, root, cmd, sub, spec):
        self.prog = PROG
        self.argv0 = argv0
        self.root = root
        self.cmd = cmd
        self.sub = sub
        self.spec = spec
        self.addr = DEFAULT_ADDR
        self.port = DEFAULT_PORT
        self.raw = False
        self.verbose = False
        self.opts = {}
        self.args = []
        self.cluster = None
        self.knobs = {}

    def op(self):
        """The subcommand, as the fail_ops and *_latency_ms knobs name it."""
        return self.sub


def _option(ch):
    return COMMON_OPTS.get(ch) or VDI_OPTS[ch]


def subcommand_usage(ctx, status):
    name, arg, opts, desc, flags, func = ctx.spec
    lines = ['Usage: %s %s %s' % (ctx.prog, ctx.cmd, ctx.sub)]
    for ch in opts:
        long_name, has_arg = _option(ch)[:2]
        if has_arg:
            lines[0] += ' [-%s %s]' % (ch, long_name)
        else:
            lines[0] += ' [-%s]' % ch
    if arg:
        lines[0] += ' ' + arg
    lines.append('Options:')
    for ch in opts:
        long_name, has_arg, text = _option(ch)
        lines.append('  %-24s%s' % ('-%s, --%s' % (ch, long_name), text))
    out('\n'.join(lines) + '\n')
    raise Exit(status)


def usage(prog, status):
    if status:
        err("Try '%s --help' for more information." % prog)
        raise Exit(status)
    lines = ['Sheepdog administrator utility (version %s)' % PROG_VERSION,
             'Usage: %s <command> <subcommand> [options]' % prog, '',
             'Available commands:']
    for cmd, subs in COMMANDS:
        for spec in subs:
            lines.append('  %-24s%s' % ('%s %s' % (cmd, spec[0]), spec[3]))
    lines += ['', "For more information, run "
              "'%s <command> <subcommand> --help'." % prog]
    out('\n'.join(lines) + '\n')
    raise Exit(0)


def _set_option(ctx, ch, value):
    if ch == 'h':
        subcommand_usage(ctx, EXIT_SUCCESS)
    elif ch == 'a':
        if not _is_ip(value):
            err('Invalid ip address %s' % value)
            raise Exit(EXIT_FAILURE)
        ctx.addr = value
    elif ch == 'p':
        if not value.isdigit() or not 1 <= int(value) <= 65535:
            err("Invalid port number '%s'" % value)
            raise Exit(EXIT_USAGE)
        ctx.port = int(value)
    elif ch == 'r':
        ctx.raw = True
    elif ch == 'v':
        ctx.verbose = True
    elif ch == 'c':
        ctx.opts['c'] = _parse_copies(value)
    elif ch == 'z':
        try:
            shift = int(value)
        except ValueError:
            shift = 0
        if shift > 31:
            err('Object Size is limited to 2^31. Please set shift bit '
                'lower than 31')
            raise Exit(EXIT_FAILURE)
        if shift < 20:
            err('Object Size is larger than 2^20. Please set shift bit '
                'larger than 20')
            raise Exit(EXIT_FAILURE)
        ctx.opts['z'] = shift
    elif ch == 's':
        if value.isdigit() and int(value) == 0:
            err('The snapshot id must be larger than zero')
            raise Exit(EXIT_FAILURE)
        ctx.opts['s'] = value
    else:
        ctx.opts[ch] = value if value is not None else True


def _parse_copies(value):
    data, sep, parity = value.partition(':')
    ok = data.isdigit()
    if ok and sep:
        ok = (int(data) in (2, 4, 8, 16) and parity.isdigit() and
              1 <= int(parity) <= 15)
    elif ok:
        ok = 1 <= int(data) <= SD_MAX_COPIES
    if not ok:
        err('Invalid parameter %s\n'
            'To create replicated vdi, set -c x\n'
            '  x(1 to %d)   - number of replicated copies\n'
            'To create erasure coded vdi, set -c x:y\n'
            '  x(2,4,8,16)  - number of data strips\n'
            '  y(1 to 15)   - number of parity strips' % (value,
                                                          SD_MAX_COPIES))
        raise Exit(EXIT_FAILURE)
    return value


def parse_options(ctx, argv):
    """GNU getopt_long with permutation, as dog uses it."""
    allowed = ctx.spec[2]
    longs = dict((_option(ch)[0], ch) for ch in allowed)
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == '--':
            ctx.args.extend(argv[i:])
            break
        if arg.startswith('--'):
            name, eq, value = arg[2:].partition('=')
            matches = [n for n in longs if n.startswith(name)]
            if name in longs:
                matches = [name]
            if len(matches) != 1:
                err("%s: %s option '%s'" % (
                    ctx.argv0, 'unrecognized' if not matches else
                    'ambiguous', arg))
                usage(ctx.prog, EXIT_USAGE)
            ch = longs[matches[0]]
            if _option(ch)[1]:
                if not eq:
                    if i >= len(argv):
                        err("%s: option '--%s' requires an argument"
                            % (ctx.argv0, matches[0]))
                        usage(ctx.prog, EXIT_USAGE)
                    value = argv[i]
                    i += 1
            elif eq:
                err("%s: option '--%s' doesn't allow an argument"
                    % (ctx.argv0, matches[0]))
                usage(ctx.prog, EXIT_USAGE)
            else:
                value = None
            _set_option(ctx, ch, value)
        elif arg.startswith('-') and len(arg) > 1:
            j = 1
            while j < len(arg):
                ch = arg[j]
                j += 1
                if ch not in allowed:
                    err("%s: invalid option -- '%s'" % (ctx.argv0, ch))
                    usage(ctx.prog, EXIT_USAGE)
                value = None
                if _option(ch)[1]:
                    value = arg[j:]
                    j = len(arg)
                    if not value:
                        if i >= len(argv):
                            err("%s: option requires an argument -- '%s'"
                                % (ctx.argv0, ch))
                            usage(ctx.prog, EXIT_USAGE)
                        value = argv[i]
                        i += 1
                _set_option(ctx, ch, value)
        else:
            ctx.args.append(arg)


COMMANDS = (
    ('vdi', (
        ('create', '<vdiname> <size>', 'PycaphrvzT', 'create an image',
         NEED_ARG | NEED_NODELIST, vdi.vdi_create),
        ('delete', '<vdiname>', 'saphT', 'delete an image', NEED_ARG,
         vdi.vdi_delete),
        ('list', '[vdiname]', 'aprhoT', 'list images', 0, vdi.vdi_list),
        ('resize', '<vdiname> <new size>', 'aphT', 'resize an image',
         NEED_ARG, vdi.vdi_resize),
        ('read', '<vdiname> [<offset> [<len>]]', 'saphT',
         'read data from an image', NEED_ARG, transfer.vdi_read),
        ('write', '<vdiname> [<offset> [<len>]]', 'apwhT',
         'write data to an image', NEED_ARG, transfer.vdi_write),
    )),
)


def _log_call(root, argv):
    if not root or not os.path.isdir(root):
        return
    line = codec.encode(
        repr([os.path.basename(argv[0])] + list(argv[1:])) + '\n')
    fd = os.open(os.path.join(root, 'calls.log'),
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def run(argv, root):
    prog = PROG
    _log_call(root, argv)
    if len(argv) < 2:
        usage(prog, 0)
    cmd = argv[1]
    subs = dict(COMMANDS).get(cmd)
    if subs is None:
        if cmd in ('help', '--help', '-h'):
            usage(prog, 0)
        err("Invalid command '%s'" % cmd)
        usage(prog, EXIT_USAGE)
    sub = argv[2] if len(argv) > 2 else None
    spec = None
    for candidate in subs:
        if candidate[0] == sub:
            spec = candidate
    if spec is None:
        if sub in DOG_VDI_SUBCOMMANDS:
            err("sheepdog emulator: '%s %s' is not emulated" % (cmd, sub))
            raise Exit(EXIT_USAGE)
        if sub is not None and sub not in ('help', '--help', '-h'):
            err("Invalid command '%s %s'" % (cmd, sub))
        err('Available %s commands:' % cmd)
        for name in DOG_VDI_SUBCOMMANDS:
            err('  %s %s' % (cmd, name))
        raise Exit(EXIT_USAGE)
    ctx = Context(argv[0], root, cmd, sub, spec)
    env_addr = os.environ.get('SHEEPDOG_DOG_ADDR')
    if env_addr:
        if not _is_ip(env_addr):
            err('Invalid ip address %s' % env_addr)
            raise Exit(EXIT_FAILURE)
        ctx.addr = env_addr
    env_port = os.environ.get('SHEEPDOG_DOG_PORT')
    if env_port:
        if not env_port.isdigit() or not 1 <= int(env_port) <= 65535:
            err("Invalid port number '%s'" % env_port)
            raise Exit(EXIT_USAGE)
        ctx.port = int(env_port)
    parse_options(ctx, argv[3:])
    ctx.cluster = Cluster(root, ctx.addr, ctx.port)
    if ctx.cluster.is_up():
        ctx.knobs = load_knobs(ctx.cluster)
    if spec[4] & NEED_NODELIST:
        vdi.need_up(ctx)
    if spec[4] & NEED_ARG and not ctx.args:
        subcommand_usage(ctx, EXIT_USAGE)
    started = time.monotonic()
    try:
        ret = spec[5](ctx)
    except Exit as exc:
        # A bad size or offset: dog's command returns EXIT_USAGE.
        ret = exc.code
        if ret != EXIT_USAGE:
            raise
    if ret == EXIT_USAGE:
        subcommand_usage(ctx, EXIT_USAGE)
    if 'T' in ctx.opts:
        out('\nElapsed time: %.3f seconds\n' % (time.monotonic() - started))
    return ret


def main(argv=None, root=None):
    """Entry point of the ``dog``/``collie`` wrappers; returns the status.

    ``root`` baked into a wrapper wins over ``SHEEPDOG_EMULATOR_ROOT``.
    """
    argv = list(sys.argv if argv is None else argv)
    root = root or os.environ.get('SHEEPDOG_EMULATOR_ROOT') or None
    try:
        return run(argv, root)
    except Exit as exc:
        return exc.code


if __name__ == '__main__':
    sys.exit(main())
