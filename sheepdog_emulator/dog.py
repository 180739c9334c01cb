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

TEST AND DEMO TOOLING ONLY. Sheepdog cannot be installed on the machines
this project is tested on, so the driver's tests and the benchmark run
against this program through the wrapper scripts that
``sheepdog-emulator setup`` writes. Production uses a real sheepdog
cluster and its real ``dog``.

It answers the subcommands the glance_store drivers use (``vdi create``,
``list``, ``read``, ``write``, ``delete``, ``resize``, ``cluster info``,
``node list``) with the syntax, output formats, exit codes and stderr
messages of sheepdog 1.0's ``dog`` (see doc/source/emulator.rst), so that a
driver written against it behaves the same against the real CLI.

Why it is built this way:

* Interpreter start-up is paid on every call (the Pike driver spawns one
  process per 64 MiB chunk), so it is a Python 3 program, stdlib only,
  runs under ``python3 -S -E`` and imports json, fcntl or select only on
  the paths that need them.
* It charges what a real ``dog vdi read|write`` costs per invocation
  (see charge_invocation): a VDI lookup and a read of the whole inode
  object before the first data byte, then the per-object service time.
* It must not be the bottleneck of the benchmark otherwise: reads go to
  stdout with ``os.sendfile`` (with a plain read/write fallback). Writes
  read stdin into a buffer, as dog does, and never splice it (see
  recv_range).
* Several ``vdi write`` processes may write disjoint ranges of one VDI at
  once: data goes to one sparse file per VDI with positioned writes, and
  only create/delete/resize/list take the cluster's lock.
* Faults and costs come from ``<cluster>/knobs.json``, read on every
  call, so a test can change a cluster while a driver uses it; the
  on-disk layout is sheepdog_emulator.cluster's.
"""

import os
import sys
import time

from sheepdog_emulator.cluster import _encode
from sheepdog_emulator.cluster import Cluster
from sheepdog_emulator.cluster import DEFAULT_ADDR
from sheepdog_emulator.cluster import DEFAULT_PORT
from sheepdog_emulator.cluster import DEFAULT_SHIFT
from sheepdog_emulator.cluster import fnv1a64
from sheepdog_emulator.cluster import load_knobs
from sheepdog_emulator.cluster import SD_INODE_SIZE
from sheepdog_emulator.cluster import SD_MAX_VDI_LEN
from sheepdog_emulator.cluster import used_bytes

PROG_VERSION = '1.0.1 (emulator)'
OLD_MAX_DATA_OBJS = 1 << 20
MAX_DATA_OBJS = 1 << 32
SD_MAX_COPIES = 31
NR_VNODES = 128

EXIT_SUCCESS = 0
EXIT_FAILURE = 1
EXIT_SYSFAIL = 2
EXIT_USAGE = 64

NEED_ARG = 1
NEED_NODELIST = 2

_IO_ERROR = 'I/O error'
_NO_VDI = 'No VDI found'
_CHUNK = 1 << 30
_COPY_BUF = 1 << 20


class Exit(Exception):
    """Leave main() with this exit status (messages already written)."""

    def __init__(self, code):
        Exception.__init__(self, code)
        self.code = code


def err(msg):
    os.write(2, _encode(msg + '\n'))


def out(text):
    data = _encode(text)
    while data:
        done = os.write(1, data)
        data = data[done:]


# -- sizes, names and addresses -------------------------------------------

_SIZE_SHIFT = {'': 0, 'b': 0, 'k': 10, 'm': 20, 'g': 30, 't': 40, 'p': 50}


def parse_size(text):
    """Parse a size the way dog's option_parse_size does, or None."""
    body = text.strip()
    suffix = ''
    if body and body[-1].lower() in _SIZE_SHIFT:
        suffix = body[-1].lower()
        body = body[:-1]
    try:
        value = float(body)
    except ValueError:
        return None
    if value < 0 or value != value or value == float('inf'):
        return None
    return int(value * (1 << _SIZE_SHIFT[suffix]))


def size_or_usage(text):
    size = parse_size(text)
    if size is None:
        err("Invalid size '%s'" % text)
        err('You may use k, M, G, T or P suffixes for kilobytes, '
            'megabytes, gigabytes, terabytes and petabytes.')
        raise Exit(EXIT_USAGE)
    return size


def strnumber(size, raw):
    if raw:
        return '%d' % size
    units = ('MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB')
    value = size / 1048576.0
    i = 0
    while i < len(units) - 1 and value >= 1024:
        i += 1
        value /= 1024
    if value >= 10:
        return '%.0f %s' % (value, units[i])
    return '%.1f %s' % (value, units[i])


def vdi_name(text):
    """sheepdog copies names into a 256-byte field: 255 bytes survive."""
    raw = _encode(text)[:SD_MAX_VDI_LEN - 1]
    return raw.decode('utf-8', 'surrogateescape')


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

    def __init__(self, prog, root, cmd, sub, spec):
        self.prog = prog
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
        return self.cmd == 'vdi' and self.sub or self.cmd == 'node' and \
            'node' or 'info'


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
                    ctx.prog, 'unrecognized' if not matches else
                    'ambiguous', arg))
                usage(ctx.prog, EXIT_USAGE)
            ch = longs[matches[0]]
            if _option(ch)[1]:
                if not eq:
                    if i >= len(argv):
                        err("%s: option '--%s' requires an argument"
                            % (ctx.prog, matches[0]))
                        usage(ctx.prog, EXIT_USAGE)
                    value = argv[i]
                    i += 1
            elif eq:
                err("%s: option '--%s' doesn't allow an argument"
                    % (ctx.prog, matches[0]))
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
                    err("%s: invalid option -- '%s'" % (ctx.prog, ch))
                    usage(ctx.prog, EXIT_USAGE)
                value = None
                if _option(ch)[1]:
                    value = arg[j:]
                    j = len(arg)
                    if not value:
                        if i >= len(argv):
                            err("%s: option requires an argument -- '%s'"
                                % (ctx.prog, ch))
                            usage(ctx.prog, EXIT_USAGE)
                        value = argv[i]
                        i += 1
                _set_option(ctx, ch, value)
        else:
            ctx.args.append(arg)


# -- fault and latency knobs ------------------------------------------------

def _sleep_ms(ms):
    if ms and ms > 0:
        time.sleep(ms / 1000.0)


def _faulty(ctx, name):
    target = ctx.knobs.get('fault_vdi')
    return not target or target == name


def call_latency(ctx):
    knobs = ctx.knobs
    _sleep_ms((knobs.get('latency_ms') or 0) +
              (knobs.get(ctx.op() + '_latency_ms') or 0))


def failing_op(ctx, name=None):
    return ctx.op() in (ctx.knobs.get('fail_ops') or ()) and \
        _faulty(ctx, name)


def transfer_limit(ctx, name, offset, total, reading):
    """(bytes to move, fail afterwards?) under the fault knobs."""
    if not _faulty(ctx, name):
        return total, False
    knobs = ctx.knobs
    limit, fail = total, False
    after = knobs.get('fail_after_bytes')
    if after is not None and after < limit:
        limit, fail = max(after, 0), True
    at = knobs.get('fail_at_offset')
    if at is not None and offset <= at < offset + limit:
        limit, fail = at - offset, True
    short = knobs.get('short_bytes')
    if reading and short is not None and short < limit:
        limit, fail = max(short, 0), False
    return limit, fail


# -- subcommands -----------------------------------------------------------

def connect_error(ctx):
    err('failed to connect to %s:%d: Connection refused'
        % (ctx.addr, ctx.port))
    if not ctx.root:
        err('(sheepdog emulator: SHEEPDOG_EMULATOR_ROOT is not set, so no '
            'cluster answers)')


def open_error(name, reason, snapshot=None):
    snap_id, tag = 0, ''
    if snapshot:
        if snapshot.isdigit():
            snap_id = int(snapshot)
        else:
            tag = snapshot
    err('Failed to open VDI %s (snapshot id: %d snapshot tag: %s): %s'
        % (name, snap_id, tag, reason))


def _open_vdi(ctx, name, flags):
    """fd of the VDI's data file, or the real 'cannot open' failure."""
    if not ctx.cluster.is_up():
        connect_error(ctx)
        open_error(name, _IO_ERROR, ctx.opts.get('s'))
        raise Exit(EXIT_FAILURE)
    call_latency(ctx)
    if ctx.opts.get('s'):
        open_error(name, _NO_VDI, ctx.opts.get('s'))
        raise Exit(EXIT_FAILURE)
    try:
        return os.open(ctx.cluster.data_path(name), flags)
    except OSError:
        open_error(name, _NO_VDI)
        raise Exit(EXIT_FAILURE)


def _range_args(ctx):
    offset, total = 0, None
    if len(ctx.args) > 1:
        offset = size_or_usage(ctx.args[1])
        if len(ctx.args) > 2:
            total = size_or_usage(ctx.args[2])
    return offset, total


def _data_oid(ctx, name, pos):
    meta = ctx.cluster.meta(name)
    return (meta['vid'] << 32) | (pos >> meta['block_size_shift'])


def _wait(fd, writable):
    import select
    poller = select.poll()
    poller.register(fd, select.POLLOUT if writable else select.POLLIN)
    poller.poll()


def _died_of_sigpipe():
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    raise Exit(EXIT_SYSFAIL)


def send_range(src, pos, count):
    """Copy count bytes of src from pos to stdout; returns bytes sent."""
    sent = 0
    use_sendfile = True
    while sent < count:
        want = min(count - sent, _CHUNK)
        try:
            if use_sendfile:
                done = os.sendfile(1, src, pos + sent, want)
            else:
                data = os.pread(src, min(want, _COPY_BUF), pos + sent)
                if not data:
                    break
                done = os.write(1, data)
        except BlockingIOError:
            _wait(1, True)
            continue
        except BrokenPipeError:
            _died_of_sigpipe()
        except OSError as exc:
            if use_sendfile and exc.errno in (22, 38, 95):
                use_sendfile = False
                continue
            raise
        if done == 0:
            break
        sent += done
    return sent


def recv_range(dst, pos, count):
    """Copy up to count bytes of stdin into dst at pos; stops at EOF.

    Plain reads, as dog reads stdin into a buffer before it sends an
    object, and not ``splice``: splicing a pipe into a file holds the
    pipe's lock while the page cache fills, so the writer on the other
    end (the glance hub) would wait on that lock whenever this process
    is descheduled, a stall that no real ``dog`` causes.
    """
    buf = bytearray(min(count, _COPY_BUF))
    view = memoryview(buf)
    got = 0
    while got < count:
        try:
            done = os.readv(0, [view[:min(count - got, len(buf))]])
        except BlockingIOError:
            _wait(0, False)
            continue
        if not done:
            break
        written = 0
        while written < done:
            written += os.pwrite(dst, view[written:done],
                                 pos + got + written)
        got += done
    return got


def charge_invocation(ctx):
    """Pay what a real `dog vdi read|write` pays before its first byte.

    dog/vdi.c looks the VDI up by name and then reads the whole inode
    object, SD_INODE_SIZE bytes, whatever range is asked: splitting one
    transfer into N invocations pays this N times. The lookup is a sleep
    (lookup_ms); the inode read reads inode_read_bytes through a buffer
    from the cluster's inode file (sparse, SD_INODE_SIZE bytes, wrapping
    round), as the real one comes from the sheep's store.
    """
    _sleep_ms(ctx.knobs.get('lookup_ms'))
    left = ctx.knobs.get('inode_read_bytes') or 0
    if left <= 0:
        return
    fd = os.open(ctx.cluster.inode_path(), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size != SD_INODE_SIZE:
            os.ftruncate(fd, SD_INODE_SIZE)
        buf = bytearray(min(left, _COPY_BUF))
        view = memoryview(buf)
        pos = 0
        while left > 0:
            want = min(left, len(buf), SD_INODE_SIZE - pos)
            done = os.preadv(fd, [view[:want]], pos)
            if done <= 0:
                break
            left -= done
            pos = (pos + done) % SD_INODE_SIZE
    finally:
        os.close(fd)


class _Transfer(object):
    """What `vdi read` and `vdi write` share: the VDI, range and faults."""

    def __init__(self, ctx, reading):
        self.name = vdi_name(ctx.args[0])
        self.offset, total = _range_args(ctx)
        self.fd = _open_vdi(ctx, self.name,
                            os.O_RDONLY if reading else os.O_WRONLY)
        self.size = os.fstat(self.fd).st_size
        charge_invocation(ctx)
        if self.offset > self.size:
            return
        left = self.size - self.offset
        self.total = left if total is None else min(total, left)
        if failing_op(ctx, self.name):
            self.limit, self.fail = 0, True
        else:
            self.limit, self.fail = transfer_limit(
                ctx, self.name, self.offset, self.total, reading)
        self.shift = ctx.cluster.meta(self.name)['block_size_shift']
        self.service = ctx.knobs.get('object_service_ms') or 0

    def beyond_end(self):
        return self.offset > self.size

    def object_end(self, pos, end):
        """Where the object holding pos ends, or end if that is sooner."""
        return min(end, ((pos >> self.shift) + 1) << self.shift)


def vdi_read(ctx):
    t = _Transfer(ctx, reading=True)
    if t.beyond_end():
        err('Read offset is beyond the end of the VDI')
        return EXIT_FAILURE
    name, fd, fail, service = t.name, t.fd, t.fail, t.service
    pos, end = t.offset, t.offset + t.limit
    while pos < end:
        if service:
            piece = t.object_end(pos, end) - pos
            _sleep_ms(service)
        else:
            piece = end - pos
        sent = send_range(fd, pos, piece)
        pos += sent
        if sent < piece:
            break
    if fail:
        err('Failed to read object %x %s' % (_data_oid(ctx, name, pos),
                                             _IO_ERROR))
        err('Failed to read VDI')
        return EXIT_FAILURE
    return EXIT_SUCCESS


def vdi_write(ctx):
    t = _Transfer(ctx, reading=False)
    if t.beyond_end():
        err('Write offset is beyond the end of the VDI')
        return EXIT_FAILURE
    name, fd, fail, service = t.name, t.fd, t.fail, t.service
    offset, limit = t.offset, t.limit
    pos, end = offset, offset + t.total
    # Like dog: one object piece at a time; a short stdin zero-fills the
    # rest of the current piece (a whole object if it ran out exactly on
    # a boundary) and ends the write.
    while pos < end:
        piece_end = t.object_end(pos, end)
        if fail and piece_end > offset + limit:
            # The failing object is not stored: consume its piece first,
            # as dog reads stdin before it sends the object.
            _drain(piece_end - pos)
            return _write_failed(ctx, name, pos)
        _sleep_ms(service)
        got = recv_range(fd, pos, piece_end - pos)
        if got < piece_end - pos:
            zeros = bytes(piece_end - pos - got)
            os.pwrite(fd, zeros, pos + got)
            break
        pos = piece_end
    if fail:
        return _write_failed(ctx, name, pos)
    return EXIT_SUCCESS


def _write_failed(ctx, name, pos):
    """dog's messages for a write that failed at the object holding pos."""
    err('Failed to write object %x: %s' % (_data_oid(ctx, name, pos),
                                           _IO_ERROR))
    err('Failed to write VDI')
    return EXIT_FAILURE


def _drain(count):
    while count > 0:
        try:
            data = os.read(0, min(count, _COPY_BUF))
        except BlockingIOError:
            _wait(0, False)
            continue
        if not data:
            return
        count -= len(data)


def _need_up(ctx):
    if not ctx.cluster.is_up():
        connect_error(ctx)
        err('Failed to get node list')
        raise Exit(EXIT_SYSFAIL)


def vdi_create(ctx):
    name = vdi_name(ctx.args[0])
    if len(ctx.args) < 2:
        err('Please specify the VDI size')
        return EXIT_USAGE
    size = size_or_usage(ctx.args[1])
    cluster = ctx.cluster
    info = cluster.info()
    shift = ctx.opts.get('z') or info['block_size_shift']
    old_max = (1 << shift) * OLD_MAX_DATA_OBJS
    if size > old_max and not ctx.opts.get('y'):
        err("VDI size is larger than %s bytes, please use '-y' to create "
            "a hyper volume with size up to %s bytes or use '-z' to "
            "create larger object size volume"
            % (strnumber(old_max, ctx.raw),
               strnumber((1 << DEFAULT_SHIFT) * MAX_DATA_OBJS, ctx.raw)))
        return EXIT_USAGE
    if size > (1 << DEFAULT_SHIFT) * MAX_DATA_OBJS:
        err('VDI size is too large')
        return EXIT_USAGE
    call_latency(ctx)
    if failing_op(ctx, name):
        err('Failed to create VDI %s: %s' % (name, _IO_ERROR))
        return EXIT_FAILURE
    if not name:
        err('Failed to create VDI %s: Invalid parameters' % name)
        return EXIT_FAILURE
    cluster.lock(True)
    try:
        created = cluster.create(name, size, str(ctx.opts.get('c') or
                                                 info['copies']),
                                 shift, ctx.opts.get('P'))
    finally:
        cluster.unlock()
    if not created:
        err('Failed to create VDI %s: VDI exists already' % name)
        return EXIT_FAILURE
    if ctx.verbose:
        vid = cluster.meta(name)['vid']
        out('%x\n' % vid if ctx.raw else
            'VDI ID of newly created VDI: %x\n' % vid)
    return EXIT_SUCCESS


def vdi_delete(ctx):
    name = vdi_name(ctx.args[0])
    cluster = ctx.cluster
    if not cluster.is_up():
        # dog reports the failure but exits 0 whatever happened.
        connect_error(ctx)
        open_error(name, _IO_ERROR, ctx.opts.get('s'))
        return EXIT_SUCCESS
    call_latency(ctx)
    if ctx.opts.get('s') or not os.path.exists(cluster.data_path(name)):
        open_error(name, _NO_VDI, ctx.opts.get('s'))
        return EXIT_SUCCESS
    if failing_op(ctx, name):
        err('Failed to delete %s: %s' % (name, _IO_ERROR))
        return EXIT_SUCCESS
    cluster.lock(True)
    try:
        cluster.delete(name)
    finally:
        cluster.unlock()
    return EXIT_SUCCESS


def vdi_resize(ctx):
    name = vdi_name(ctx.args[0])
    if len(ctx.args) < 2:
        err('Please specify the new size for the VDI')
        return EXIT_USAGE
    new_size = size_or_usage(ctx.args[1])
    fd = _open_vdi(ctx, name, os.O_WRONLY)
    try:
        meta = ctx.cluster.meta(name)
        if new_size > (1 << meta['block_size_shift']) * OLD_MAX_DATA_OBJS:
            err('New VDI size is too large')
            return EXIT_USAGE
        if new_size < os.fstat(fd).st_size:
            err('Shrinking VDIs is not implemented')
            return EXIT_USAGE
        if failing_op(ctx, name):
            err('Failed to update an inode header')
            return EXIT_FAILURE
        ctx.cluster.lock(True)
        try:
            if os.fstat(fd).st_size < new_size:
                os.ftruncate(fd, new_size)
        finally:
            ctx.cluster.unlock()
    finally:
        os.close(fd)
    return EXIT_SUCCESS


def _list_line(ctx, name, raw):
    cluster = ctx.cluster
    meta = cluster.meta(name)
    path = cluster.data_path(name)
    try:
        size = os.stat(path).st_size
        used = used_bytes(path, size, meta['block_size_shift'],
                          meta.get('prealloc'))
    except OSError:
        return None
    if raw:
        escaped = ''.join('\\' + c if c.isspace() or c == '\\' else c
                          for c in name)
        return '= %s 0 %d %d 0 %d %x %s %s %d' % (
            escaped, size, used, meta['ctime'], meta['vid'],
            meta['copies'], meta['tag'], meta['block_size_shift'])
    when = time.strftime('%Y-%m-%d %H:%M', time.localtime(meta['ctime']))
    return '%s %-8s %5d %7s %7s %7s %s  %7x %6s %13s %3d' % (
        ' ', name, 0, strnumber(size, False), strnumber(used, False),
        strnumber(0, False), when, meta['vid'], meta['copies'],
        meta['tag'], meta['block_size_shift'])


def vdi_list(ctx):
    cluster = ctx.cluster
    if not cluster.is_up():
        connect_error(ctx)
        return EXIT_SYSFAIL
    call_latency(ctx)
    wanted = vdi_name(ctx.args[0]) if ctx.args else None
    if failing_op(ctx, wanted):
        err(_IO_ERROR)
        return EXIT_SYSFAIL
    lines = []
    if not ctx.raw:
        lines.append('  Name        Id    Size    Used  Shared    Creation '
                     'time   VDI id  Copies  Tag   Block Size Shift')
    cluster.lock(False)
    try:
        if wanted is not None:
            names = [wanted] if os.path.exists(
                cluster.data_path(wanted)) else []
        else:
            names = cluster.names()
        names.sort(key=lambda n: cluster.meta(n)['vid'])
        for name in names:
            line = _list_line(ctx, name, ctx.raw)
            if line is not None:
                lines.append(line)
    finally:
        cluster.unlock()
    if lines:
        out('\n'.join(lines) + '\n')
    return EXIT_SUCCESS


def _zone(node):
    host = node.rsplit(':', 1)[0]
    if _is_ip(host) and ':' not in host:
        return sum(int(p) << (8 * i) for i, p in enumerate(host.split('.')))
    return fnv1a64(_encode(host)) & 0xffffffff


def node_list(ctx):
    _need_up(ctx)
    call_latency(ctx)
    if failing_op(ctx):
        err('Failed to get node list')
        return EXIT_SYSFAIL
    lines = [] if ctx.raw else [
        '  Id   Host:Port         V-Nodes       Zone']
    for i, node in enumerate(ctx.cluster.info()['nodes']):
        if ctx.raw:
            lines.append('%d %s %d %d' % (i, node, NR_VNODES, _zone(node)))
        else:
            lines.append('%4d   %-20s\t%2d%11d' % (i, node, NR_VNODES,
                                                   _zone(node)))
    out('\n'.join(lines) + '\n')
    return EXIT_SUCCESS


def cluster_info(ctx):
    _need_up(ctx)
    call_latency(ctx)
    if failing_op(ctx):
        err('Failed to get node list')
        return EXIT_SYSFAIL
    info = ctx.cluster.info()
    ctime = int(info['ctime'])
    nodes = ', '.join('%s:%d' % (n, NR_VNODES) for n in info['nodes'])
    if ctx.raw:
        out('running, auto-recovery enabled\n%d 1 [%s]\n' % (ctime, nodes))
        return EXIT_SUCCESS
    out('Cluster status: running, auto-recovery enabled\n\n'
        'Cluster created at %s\n\n'
        'Epoch Time           Version [Host:Port:V-Nodes,,,]\n'
        '%s %6d [%s]\n' % (
            time.ctime(ctime),
            time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(ctime)), 1,
            nodes))
    return EXIT_SUCCESS


COMMANDS = (
    ('vdi', (
        ('create', '<vdiname> <size>', 'PycaphrvzT', 'create an image',
         NEED_ARG | NEED_NODELIST, vdi_create),
        ('delete', '<vdiname>', 'saphT', 'delete an image', NEED_ARG,
         vdi_delete),
        ('list', '[vdiname]', 'aprhoT', 'list images', 0, vdi_list),
        ('resize', '<vdiname> <new size>', 'aphT', 'resize an image',
         NEED_ARG, vdi_resize),
        ('read', '<vdiname> [<offset> [<len>]]', 'saphT',
         'read data from an image', NEED_ARG, vdi_read),
        ('write', '<vdiname> [<offset> [<len>]]', 'apwhT',
         'write data to an image', NEED_ARG, vdi_write),
    )),
    ('node', (
        ('list', None, 'aprhT', 'list nodes', NEED_NODELIST, node_list),
    )),
    ('cluster', (
        ('info', None, 'aprhT', 'show cluster information', NEED_NODELIST,
         cluster_info),
    )),
)


def _log_call(root, argv):
    if not root or not os.path.isdir(root):
        return
    line = _encode(repr([os.path.basename(argv[0])] + list(argv[1:])) +
                   '\n')
    fd = os.open(os.path.join(root, 'calls.log'),
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def run(argv, root):
    prog = os.path.basename(argv[0]) or 'dog'
    if prog.endswith('.py'):
        prog = 'dog'
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
        if sub is not None and sub not in ('help', '--help', '-h'):
            err("Invalid command '%s %s'" % (cmd, sub))
        err('Available %s commands:' % cmd)
        for candidate in subs:
            err('  %s %s' % (cmd, candidate[0]))
        raise Exit(EXIT_USAGE)
    ctx = Context(prog, root, cmd, sub, spec)
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
        _need_up(ctx)
    if spec[4] & NEED_ARG and not ctx.args:
        subcommand_usage(ctx, EXIT_USAGE)
    started = time.time()
    ret = spec[5](ctx)
    if ret == EXIT_USAGE:
        subcommand_usage(ctx, EXIT_USAGE)
    if 'T' in ctx.opts:
        out('\nElapsed time: %.3f seconds\n' % (time.time() - started))
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
