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
"""The emulated cluster on disk: what the dog program and set-up share.

One directory per ``addr:port`` under a root holds the VDIs as sparse
files, their metadata as JSON sidecars and the knobs that steer faults
and costs. Both the ``dog`` program (Python 3, started per call) and the
in-process set-up helpers (which test fixtures import on Python 2.7 as
well as 3) use this module, so it is stdlib only, imports nothing heavy
at module level and runs on both.

Layout under the root (``SHEEPDOG_EMULATOR_ROOT``, or baked into the
wrapper scripts by ``install_wrappers``)::

    <root>/calls.log                 one line per call (its argv)
    <root>/<addr>:<port>/cluster.json
    <root>/<addr>:<port>/knobs.json  optional
    <root>/<addr>:<port>/DOWN        present: the daemon is "down"
    <root>/<addr>:<port>/inode       sparse, read per vdi read/write
    <root>/<addr>:<port>/vdis/<enc>  sparse data file, size = VDI size
    <root>/<addr>:<port>/meta/<enc>  JSON sidecar: vid, ctime, copies...
"""

import os
import time

from sheepdog_emulator import codec

DEFAULT_ADDR = '127.0.0.1'
DEFAULT_PORT = 7000
DEFAULT_SHIFT = 22  # 4 MiB objects
SD_MAX_VDI_LEN = 256
SD_NR_VDIS = 1 << 24
# sizeof(struct sd_inode) in sheepdog 1.0 (include/sheepdog_proto.h): a
# header of names, times, sizes, policies and ids (4,664 bytes) and 2^20
# 4-byte data_vdi_id entries, a little over 4 MiB. dog/vdi.c reads all of
# it (read_vdi_obj(..., SD_INODE_SIZE)) in every `vdi read` and
# `vdi write` before the first data byte.
SD_INODE_SIZE = 4664 + (1 << 20) * 4
OPS = ('create', 'list', 'read', 'write', 'delete', 'resize')
# knob name -> type; every knob can also be set by the environment
# variable SHEEPDOG_EMULATOR_<NAME>, which wins over knobs.json.
KNOBS = {
    'latency_ms': float,
    'lookup_ms': float,
    'inode_read_bytes': int,
    'object_service_ms': float,
    'fail_after_bytes': int,
    'fail_at_offset': int,
    'short_bytes': int,
    'fail_ops': list,
    'fault_vdi': str,
}
for _op in OPS:
    KNOBS[_op + '_latency_ms'] = float
del _op

# What a real `dog vdi read|write` charges per invocation, on by default
# so that every user of the emulator (tests, bench, demos) pays it: the
# VDI lookup by name (a round trip to the local sheep) and a read of the
# inode object's size from the backing store, whatever range is asked.
# The per-object service time (object_service_ms) stays off by default:
# it models a cold cache or a remote cluster, which the bench asks for.
KNOB_DEFAULTS = {
    'lookup_ms': 0.5,
    'inode_read_bytes': SD_INODE_SIZE,
}


def fnv1a64(data):
    hval = 0xcbf29ce484222325
    for byte in bytearray(data):
        hval ^= byte
        hval = (hval * 0x100000001b3) & 0xffffffffffffffff
    return hval


_SAFE = frozenset('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
                  '0123456789-_.')


def encode_name(name):
    """A file name for a VDI name: reversible, no '/', never hidden."""
    raw = codec.encode(name)
    parts = []
    for byte in bytearray(raw):
        char = chr(byte)
        parts.append(char if char in _SAFE else '%%%02X' % byte)
    enc = ''.join(parts)
    if enc.startswith('.'):
        enc = '%2E' + enc[1:]
    if len(enc) > 200:
        enc = '%s~%016x' % (enc[:150], fnv1a64(raw))
    return enc


def addr_to_str(addr, port):
    if ':' in addr:
        return '[%s]:%d' % (addr, port)
    return '%s:%d' % (addr, port)


# -- on-disk cluster -------------------------------------------------------

def cluster_dir(root, addr, port):
    return os.path.join(root, addr_to_str(addr, int(port)))


class Cluster(object):
    """One emulated cluster: the directory of one addr:port."""

    def __init__(self, root, addr, port):
        self.root = root
        self.addr = addr
        self.port = int(port)
        self.path = cluster_dir(root, addr, port) if root else None
        self._lock_fd = None

    def is_up(self):
        return bool(self.path) and os.path.isdir(self.path) and \
            not os.path.exists(os.path.join(self.path, 'DOWN'))

    def info(self):
        info = codec.read_json(os.path.join(self.path, 'cluster.json'), {})
        info.setdefault('ctime', int(os.stat(self.path).st_mtime))
        info.setdefault('copies', 1)
        info.setdefault('block_size_shift', DEFAULT_SHIFT)
        return info

    def inode_path(self):
        """A sparse file of SD_INODE_SIZE: what every transfer reads."""
        return os.path.join(self.path, 'inode')

    def data_path(self, name):
        return os.path.join(self.path, 'vdis', encode_name(name))

    def meta_path(self, name):
        return os.path.join(self.path, 'meta', encode_name(name))

    def meta(self, name):
        meta = codec.read_json(self.meta_path(name), None) or {}
        meta.setdefault('name', name)
        meta.setdefault('vid', fnv1a64(codec.encode(name)) & (SD_NR_VDIS - 1))
        meta.setdefault('ctime', 0)
        meta.setdefault('copies', '1')
        meta.setdefault('block_size_shift', DEFAULT_SHIFT)
        meta.setdefault('tag', '')
        return meta

    def lock(self, exclusive):
        import fcntl
        self._lock_fd = os.open(os.path.join(self.path, 'lock'),
                                os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._lock_fd,
                    fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)

    def unlock(self):
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def names(self):
        try:
            entries = os.listdir(os.path.join(self.path, 'meta'))
        except OSError:
            return []
        names = []
        for entry in entries:
            if '.tmp-' in entry:
                continue
            meta = codec.read_json(
                os.path.join(self.path, 'meta', entry), None)
            if meta and os.path.exists(self.data_path(meta['name'])):
                names.append(meta['name'])
        return names

    def create(self, name, size, copies, shift, prealloc=False):
        """Create a VDI; False when the name exists. Caller holds lock."""
        data = self.data_path(name)
        if os.path.exists(data):
            return False
        used = set(self.meta(n)['vid'] for n in self.names())
        vid = fnv1a64(codec.encode(name)) & (SD_NR_VDIS - 1)
        while vid in used:
            vid = (vid + 1) & (SD_NR_VDIS - 1)
        codec.write_json(self.meta_path(name), {
            'name': name, 'vid': vid, 'ctime': int(time.time()),
            'copies': copies, 'block_size_shift': shift, 'tag': '',
            'prealloc': bool(prealloc)})
        tmp = '%s.tmp-%d' % (data, os.getpid())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
        os.rename(tmp, data)  # the commit point: the VDI now exists
        return True

    def delete(self, name):
        try:
            os.unlink(self.data_path(name))
        except OSError:
            return False
        try:
            os.unlink(self.meta_path(name))
        except OSError:
            pass
        return True


def used_bytes(path, size, shift, prealloc):
    """Bytes of the objects that hold data, as sheepdog reports 'used'.

    A file with every block allocated has data in every object; only a
    sparse one is walked with SEEK_DATA/SEEK_HOLE. The walk is not free
    where the file's pages are in the page cache (on tmpfs, where the
    bench keeps the emulator's root, the kernel scans them; figures in
    doc/source/emulator.rst), a cost no real `dog vdi list` pays, which
    the bench's downloads, each listing their image first, would carry.
    """
    obj = 1 << shift
    whole = (size + obj - 1) // obj * obj
    if prealloc:
        return whole
    fd = os.open(path, os.O_RDONLY)
    try:
        if os.fstat(fd).st_blocks * 512 >= size:
            return whole
        count = 0
        next_obj = 0
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            if end <= start:
                break
            first = max(start // obj, next_obj)
            last = (end - 1) // obj
            if last >= first:
                count += last - first + 1
                next_obj = last + 1
            pos = end
        return count * obj
    finally:
        os.close(fd)


# -- knobs -----------------------------------------------------------------

def coerce_knob(kind, value):
    """A knob's value, from JSON or the environment, as its kind."""
    if kind is list:
        if isinstance(value, str):
            return [v.strip() for v in value.split(',') if v.strip()]
        return list(value or [])
    if value is None or value == '':
        return None
    return kind(value)


def load_knobs(cluster):
    knobs = {}
    if cluster.path:
        knobs = codec.read_json(os.path.join(cluster.path, 'knobs.json'), {})
    for name, kind in KNOBS.items():
        env = os.environ.get('SHEEPDOG_EMULATOR_' + name.upper())
        if env is not None:
            knobs[name] = env
    result = dict(KNOB_DEFAULTS)
    for name, value in knobs.items():
        if name in KNOBS:
            result[name] = coerce_knob(KNOBS[name], value)
    return result
