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
"""VDI operations of the emulated ``dog``: create, delete, resize, list.

The control commands a driver runs around its transfers, with sheepdog
1.0's output formats, exit codes and stderr messages, and what every
subcommand shares with them: the exit codes, dog's messages for a VDI
that cannot be opened or a daemon that is down, size parsing and the
fault and latency knobs. Part of the ``dog`` program (Python 3, started
once per call); sheepdog_emulator.transfer builds ``vdi read`` and
``vdi write`` on it and sheepdog_emulator.dog parses the command line.
"""

import os
import time

from sheepdog_emulator.cluster import DEFAULT_SHIFT
from sheepdog_emulator.cluster import SD_MAX_VDI_LEN
from sheepdog_emulator.cluster import used_bytes
from sheepdog_emulator import codec

OLD_MAX_DATA_OBJS = 1 << 20
MAX_DATA_OBJS = 1 << 32

EXIT_SUCCESS = 0
EXIT_FAILURE = 1
EXIT_SYSFAIL = 2
EXIT_USAGE = 64

IO_ERROR = 'I/O error'
NO_VDI = 'No VDI found'
NO_TAG = 'Failed to find requested tag'


class Exit(Exception):
    """Leave main() with this exit status (messages already written)."""

    def __init__(self, code):
        Exception.__init__(self, code)
        self.code = code


def err(msg):
    os.write(2, codec.encode(msg + '\n'))


def out(text):
    data = codec.encode(text)
    while data:
        done = os.write(1, data)
        data = data[done:]


# -- sizes and names ------------------------------------------------------

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
        err('You may use B, K, M, G, T or P suffixes for bytes, kilobytes, '
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
    raw = codec.encode(text)[:SD_MAX_VDI_LEN - 1]
    return raw.decode('utf-8', 'surrogateescape')


# -- fault and latency knobs ------------------------------------------------

def sleep_ms(ms):
    if ms and ms > 0:
        time.sleep(ms / 1000.0)


def faulty(ctx, name):
    """Whether the fault knobs apply to VDI name (see ``fault_vdi``)."""
    target = ctx.knobs.get('fault_vdi')
    return (not target or target == name or
            (name or '').startswith(target + '.'))


def call_latency(ctx):
    knobs = ctx.knobs
    sleep_ms((knobs.get('latency_ms') or 0) +
             (knobs.get(ctx.op() + '_latency_ms') or 0))


def failing_op(ctx, name=None):
    return ctx.op() in (ctx.knobs.get('fail_ops') or ()) and \
        faulty(ctx, name)


# -- what every subcommand says when it cannot reach the VDI -------------

def connect_error(ctx):
    """What dog prints when its request finds no sheep listening.

    dog tries twice per request (lib/sockfd_cache.c sockfd_cache_get: a
    cached connection first, then a short one), so the line comes twice.
    """
    for _attempt in range(2):
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


def open_vdi(ctx, name, flags):
    """fd of the VDI's data file, or the real 'cannot open' failure."""
    if not ctx.cluster.is_up():
        connect_error(ctx)
        open_error(name, IO_ERROR, ctx.opts.get('s'))
        raise Exit(EXIT_FAILURE)
    call_latency(ctx)
    try:
        fd = os.open(ctx.cluster.data_path(name), flags)
    except OSError:
        open_error(name, NO_VDI, ctx.opts.get('s'))
        raise Exit(EXIT_FAILURE)
    if ctx.opts.get('s'):
        # The emulator keeps no snapshots.
        os.close(fd)
        open_error(name, NO_TAG, ctx.opts.get('s'))
        raise Exit(EXIT_FAILURE)
    return fd


def data_oid(ctx, name, pos):
    meta = ctx.cluster.meta(name)
    return (meta['vid'] << 32) | (pos >> meta['block_size_shift'])


def need_up(ctx):
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
        err('Failed to create VDI %s: %s' % (name, IO_ERROR))
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
        open_error(name, IO_ERROR, ctx.opts.get('s'))
        return EXIT_SUCCESS
    call_latency(ctx)
    if not os.path.exists(cluster.data_path(name)):
        open_error(name, NO_VDI, ctx.opts.get('s'))
        return EXIT_SUCCESS
    if ctx.opts.get('s'):
        open_error(name, NO_TAG, ctx.opts.get('s'))
        return EXIT_SUCCESS
    if failing_op(ctx, name):
        err('Failed to delete %s: %s' % (name, IO_ERROR))
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
    fd = open_vdi(ctx, name, os.O_WRONLY)
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


LIST_HEADER = ('  Name        Id    Size    Used  Shared    Creation '
               'time   VDI id  Copies  Tag   Block Size Shift')


def vdi_list(ctx):
    cluster = ctx.cluster
    if not cluster.is_up():
        # dog prints its header before it asks the daemon anything.
        if not ctx.raw:
            out(LIST_HEADER + '\n')
        connect_error(ctx)
        return EXIT_SYSFAIL
    call_latency(ctx)
    wanted = vdi_name(ctx.args[0]) if ctx.args else None
    if failing_op(ctx, wanted):
        err(IO_ERROR)
        return EXIT_SYSFAIL
    lines = []
    if not ctx.raw:
        lines.append(LIST_HEADER)
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
