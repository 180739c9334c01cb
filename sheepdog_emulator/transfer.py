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
"""``vdi read`` and ``vdi write`` of the emulated ``dog``: the data path.

Part of the ``dog`` program (Python 3, started once per call). It must
not be the bottleneck of a benchmark: reads go to stdout with
``os.sendfile`` (with a plain read/write fallback); writes read stdin
into a buffer, as dog does, and never splice it (see recv_range). Each
invocation first pays what a real one pays before its first data byte
(charge_invocation), then the fault knobs decide how much moves.
Several ``vdi write`` processes may write disjoint ranges of one VDI at
once: positioned writes into one sparse file per VDI, no lock.
"""

import os

from sheepdog_emulator.cluster import SD_INODE_SIZE
from sheepdog_emulator import vdi

_CHUNK = 1 << 30
_COPY_BUF = 1 << 20


def transfer_limit(ctx, name, offset, total, reading):
    """(bytes to move, fail afterwards?) under the fault knobs."""
    if not vdi.faulty(ctx, name):
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


def _range_args(ctx):
    offset, total = 0, None
    if len(ctx.args) > 1:
        offset = vdi.size_or_usage(ctx.args[1])
        if len(ctx.args) > 2:
            total = vdi.size_or_usage(ctx.args[2])
    return offset, total


def _wait(fd, writable):
    import select
    poller = select.poll()
    poller.register(fd, select.POLLOUT if writable else select.POLLIN)
    poller.poll()


def _died_of_sigpipe():
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    raise vdi.Exit(vdi.EXIT_SYSFAIL)


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
    vdi.sleep_ms(ctx.knobs.get('lookup_ms'))
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
        self.name = vdi.vdi_name(ctx.args[0])
        self.offset, total = _range_args(ctx)
        self.fd = vdi.open_vdi(ctx, self.name,
                               os.O_RDONLY if reading else os.O_WRONLY)
        self.size = os.fstat(self.fd).st_size
        charge_invocation(ctx)
        if self.offset > self.size:
            return
        left = self.size - self.offset
        self.total = left if total is None else min(total, left)
        if vdi.failing_op(ctx, self.name):
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
        vdi.err('Read offset is beyond the end of the VDI')
        return vdi.EXIT_FAILURE
    name, fd, fail, service = t.name, t.fd, t.fail, t.service
    pos, end = t.offset, t.offset + t.limit
    while pos < end:
        if service:
            piece = t.object_end(pos, end) - pos
            vdi.sleep_ms(service)
        else:
            piece = end - pos
        sent = send_range(fd, pos, piece)
        pos += sent
        if sent < piece:
            break
    if fail:
        vdi.err('Failed to read object %x %s'
                % (vdi.data_oid(ctx, name, pos), vdi.IO_ERROR))
        vdi.err('Failed to read VDI')
        return vdi.EXIT_FAILURE
    return vdi.EXIT_SUCCESS


def vdi_write(ctx):
    t = _Transfer(ctx, reading=False)
    if t.beyond_end():
        vdi.err('Write offset is beyond the end of the VDI')
        return vdi.EXIT_FAILURE
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
        vdi.sleep_ms(service)
        got = recv_range(fd, pos, piece_end - pos)
        if got < piece_end - pos:
            zeros = bytes(piece_end - pos - got)
            os.pwrite(fd, zeros, pos + got)
            break
        pos = piece_end
    if fail:
        return _write_failed(ctx, name, pos)
    return vdi.EXIT_SUCCESS


def _write_failed(ctx, name, pos):
    """dog's messages for a write that failed at the object holding pos."""
    vdi.err('Failed to write object %x: %s'
            % (vdi.data_oid(ctx, name, pos), vdi.IO_ERROR))
    vdi.err('Failed to write VDI')
    return vdi.EXIT_FAILURE


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
