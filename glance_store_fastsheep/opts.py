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
"""Configuration options of the fastsheep store.

``sheepdog_store_address``, ``_port``, ``_chunk_size`` and ``_read_size``
are the options of glance_store's in-tree sheepdog driver (the last one
only on a tree patched with ``patches/glance_store``), with the same names
and defaults, so an existing ``[glance_store]`` section keeps working when
an operator switches ``stores = sheepdog`` to ``stores = fastsheep``.
Where glance_store has them, those four are the in-tree option objects
themselves (see ``share_options``); every other option is this driver's.

To add an option: append it to SHEEPDOG_OPTS (its default as a DEFAULT_
constant when code elsewhere uses it), with help in the layout below,
which test_opts checks: what it does, the rule for choosing it, then
"Possible values:" and "Related options:"; no measured figures (they
live in doc/source/fastsheep.rst). Then describe it in that file's
Options section and regenerate both etc/ samples (the commands are
there; test_opts fails until they match).
"""

from oslo_config import cfg
from oslo_utils import units

from glance_store_fastsheep import names

# Sheepdog stores a VDI as 4 MiB objects; transfers that start and end on
# object boundaries never make two writers touch one object.
OBJECT_SIZE = 4 * units.Mi

DEFAULT_ADDR = '127.0.0.1'
DEFAULT_PORT = 7000
DEFAULT_CHUNK_SIZE = 64
DEFAULT_READ_SIZE = units.Mi
DEFAULT_PIPE_SIZE = units.Mi
DEFAULT_WRITE_CONCURRENCY = 8
DEFAULT_WRITE_BUDGET = 16
DEFAULT_READ_CONCURRENCY = 4
DEFAULT_READ_WINDOW = 64
DEFAULT_READAHEAD_BUDGET = 256
# The clients the store may talk to sheepdog through (client.CLIENTS).
CLIENTS = ('native', 'dog')
DEFAULT_CLIENT = 'native'
DEFAULT_STALL_TIMEOUT = 5.0
DEFAULT_FAILOVER_ATTEMPTS = 4

# The in-tree driver's options that this driver shares, by name: the
# three of Pike's sheepdog driver and the read size that
# patches/glance_store adds to it.
SHARED_OPTION_NAMES = ('sheepdog_store_address', 'sheepdog_store_port',
                       'sheepdog_store_chunk_size',
                       'sheepdog_store_read_size')

SHEEPDOG_OPTS = [
    cfg.IntOpt('sheepdog_store_chunk_size',
               min=1,
               default=DEFAULT_CHUNK_SIZE,
               help="""
Size, in MiB, of one ``dog vdi write`` call when uploading.

Every chunk is written by its own ``dog vdi write NAME OFFSET LEN``
process; up to ``sheepdog_store_write_concurrency`` of them run at
once. A value that is not a multiple of the 4 MiB sheepdog object size
is rounded up to one, with a warning, so that no two writers ever
share an object. When the image size is not known in advance (chunked
upload) one chunk is held in memory before it is written, because a
sheepdog VDI cannot be shrunk. Downloads do not use this option: one
process streams the whole range. Used by the ``dog`` client
(``sheepdog_store_client``). Same name and default as the in-tree Pike
sheepdog driver.

Possible values:
    * A positive integer (MiB); multiples of 4 are used as given

Related options:
    * sheepdog_store_client
    * sheepdog_store_write_concurrency
    * sheepdog_store_read_size
"""),
    cfg.PortOpt('sheepdog_store_port',
                default=DEFAULT_PORT,
                help="""
Port of the sheep daemon the store talks to (``dog -p``).

New images are stored there and their locations carry this port. Same
name and default as the in-tree Pike sheepdog driver.

Possible values:
    * A valid port number

Related options:
    * sheepdog_store_address
"""),
    cfg.HostAddressOpt('sheepdog_store_address',
                       default=DEFAULT_ADDR,
                       help="""
Address of the sheep daemon the store talks to (``dog -a``).

New images are stored there and their locations carry this address.
Images written under an earlier address stay readable with a single
store (``[glance_store]``) while that address is an entry point or a
member the entry points name. With ``enabled_backends``, glance gives a
location without a backend id to the backend whose address and port
begin it, so after a change the locations written under the old one are
served by no backend until they are attributed (``fastsheep-locations``
reports them UNSERVED). Same name and default as the in-tree Pike
sheepdog driver.

Possible values:
    * An IPv4 address, an IPv6 address or a host name

Related options:
    * sheepdog_store_port
"""),
    cfg.IntOpt('sheepdog_store_read_size',
               min=4096,
               default=DEFAULT_READ_SIZE,
               help="""
Bytes per read from the ``dog`` pipe, and the size of the pieces that
downloads yield and that uploads hash and write.

One preallocated buffer of this size is reused for the whole transfer.
Under eventlet each piece costs at most one trip through the hub, so
small values spend the CPU on the hub and large values hold it longer
per piece (hashing a piece happens between two trips). Same name and
default as the option that patches/glance_store adds to the in-tree
driver.

Possible values:
    * An integer of at least 4096 (bytes)

Related options:
    * sheepdog_store_pipe_size
    * sheepdog_store_chunk_size
"""),
    cfg.IntOpt('sheepdog_store_pipe_size',
               min=0,
               # F_SETPIPE_SZ takes an unsigned int and Linux refuses
               # more than 2 GiB; a larger value would be truncated.
               max=1 << 31,
               default=DEFAULT_PIPE_SIZE,
               help="""
Requested kernel buffer size, in bytes, of the pipes to and from
``dog`` (``fcntl F_SETPIPE_SZ``); used by the ``dog`` client only.

The default Linux pipe holds 64 KiB, which caps every read at 64 KiB.
Unprivileged processes may not exceed ``/proc/sys/fs/pipe-max-size``
(1 MiB by default); a refused request is logged once and the transfer
goes on with the kernel's size.

Possible values:
    * 0: keep the kernel's default size
    * A positive integer (bytes), at most 2 GiB (Linux's limit)

Related options:
    * sheepdog_store_read_size
"""),
    cfg.IntOpt('sheepdog_store_write_concurrency',
               min=1,
               default=DEFAULT_WRITE_CONCURRENCY,
               help="""
Maximum number of writes one upload keeps in flight: ``dog vdi write``
processes with the ``dog`` client, object writes with ``native``.

1 writes chunk after chunk, each waited on before the next one starts.
Larger values overlap the start-up and commit time of each call with
the transfer of the next chunks: the writers for the next chunks are
started before their data arrives. With ``dog``, a waiting writer costs
a process and a pipe, not image memory (the data streams through one
piece at a time). With ``native``, each write holds its object (4 MiB
on a cluster of default object size) in memory until sheep has
acknowledged it and the image's hashes have seen it, the object being
read included: an upload holds at most this many objects.

Possible values:
    * A positive integer

Related options:
    * sheepdog_store_chunk_size
    * sheepdog_store_write_budget
"""),
    cfg.IntOpt('sheepdog_store_write_budget',
               min=0,
               default=DEFAULT_WRITE_BUDGET,
               help="""
Number of extra writes that all the uploads of one glance-api process
may have going together: ``dog vdi write`` processes with the ``dog``
client, objects held in memory with ``native``.

Every upload always has its first writer, which takes nothing from this
budget: an upload never waits for budget and never fails for want of
it. Each further writer an upload runs at once (up to
``sheepdog_store_write_concurrency``) takes one from the budget before
it starts and gives it back once it has exited, failed or been killed
(``native``: once sheep has acknowledged its object and the hashes have
seen it). An upload that finds the budget used up goes on with the writers it
has. The budget is the process's, shared by the uploads of every
fastsheep backend in it, each checking against its own backend's value.

Rule: a process with U uploads in flight runs at most U plus this many
``dog vdi write`` processes, or, with ``native``, holds at most U plus
this many objects of image data (16 uploads and the default of 16: 32
objects, 128 MiB of 4 MiB objects). Keep at least
``sheepdog_store_write_concurrency`` - 1, so that a lone upload keeps
its full concurrency; lower it where many uploads run at once on a host
short of memory or CPU, on which more writers add no throughput.

Possible values:
    * 0: one writer per upload, as a write concurrency of 1 everywhere
    * A positive integer

Related options:
    * ``sheepdog_store_write_concurrency``
    * ``sheepdog_store_chunk_size``
"""),
    cfg.IntOpt('sheepdog_store_read_concurrency',
               min=1,
               default=DEFAULT_READ_CONCURRENCY,
               help="""
Most ``dog vdi read`` processes one download runs at once, with the
``dog`` client (the ``native`` client keeps several object reads in
flight on one connection instead and does not use this option).

With 1, a download is one ``dog vdi read`` for the whole range. With
more, a download longer than one window starts with that one process
and adds readers only while one more pays: the consumer waits for
bytes, the readers wait on ``dog``, and the last reader added raised
the read rate. The rest of the range is then read in windows of
``sheepdog_store_read_window`` MiB by up to this many processes at
once; bytes are yielded in order and every window is checked byte for
byte. Every ``dog vdi read`` looks the VDI up and reads its 4 MiB inode
object before the first data byte, so more readers gain only where
each object costs the cluster a round trip (a cold cache, a loaded or
remote cluster). Memory grows to at most this many windows per
download.

Set it to the number of readers the cluster serves at once for one
download; set 1 for the least memory, for instance on a glance-api that
already serves many downloads at once. The documentation's Read-ahead
section has measured figures.

Possible values:
    * 1: one ``dog vdi read`` per download, holding about three
      read-size buffers
    * An integer N > 1: up to N readers and N windows of memory per
      download

Related options:
    * sheepdog_store_read_window
    * sheepdog_store_readahead_budget
    * sheepdog_store_read_size
"""),
    cfg.IntOpt('sheepdog_store_read_window',
               min=4,
               default=DEFAULT_READ_WINDOW,
               help="""
Size, in MiB, of one read-ahead window of the ``dog`` client.

Used when ``sheepdog_store_read_concurrency`` is more than 1; rounded up
to a multiple of the 4 MiB sheepdog object size, with a warning. Each
window is read by one ``dog vdi read`` process, which looks the VDI up
and reads the 4 MiB inode object before its first data byte: a window
of W MiB reads 4/W more than its data (25% at 16 MiB, about 6% at 64).
Larger windows start fewer processes; smaller ones lower the memory
bound, which is read concurrency times window per download.

Keep it at 64 or more, so that the inode read stays a few percent of a
window; lower it only to bound the memory of a download.

Possible values:
    * An integer of at least 4 (MiB)

Related options:
    * sheepdog_store_read_concurrency
    * sheepdog_store_readahead_budget
"""),
    cfg.IntOpt('sheepdog_store_readahead_budget',
               min=0,
               default=DEFAULT_READAHEAD_BUDGET,
               help="""
Memory, in MiB, that all the ``dog`` client's downloads of one
glance-api process may hold for read-ahead together.

Every read-ahead window in flight holds ``sheepdog_store_read_window``
MiB of it, taken before its extra ``dog vdi read`` starts and given
back when the download no longer needs it; one download at full
read-ahead holds ``sheepdog_store_read_concurrency`` windows (256 MiB
with the defaults). A download that finds the budget used up reads as
the plain one-reader stream (a few read-size buffers, no window): it
never waits for budget and never fails for want of it. The budget is
the process's, shared by the downloads of every fastsheep backend in
it, each checking against its own backend's value.

Rule: set it to the memory a glance-api worker may spend on read-ahead
on top of its plain streams; a worker's memory for downloads is then at
most this plus a few read-size buffers per download, and a host running
W workers W times that.

Possible values:
    * 0: no read-ahead; every download is the plain one-reader stream
    * A positive integer (MiB); less than one window also means no
      read-ahead

Related options:
    * ``sheepdog_store_read_concurrency``
    * ``sheepdog_store_read_window``
    * ``sheepdog_store_read_size``
"""),
    cfg.StrOpt('sheepdog_store_client',
               default=DEFAULT_CLIENT,
               choices=CLIENTS,
               # The value names of the option it replaces are the
               # client names, so an old setting keeps its meaning.
               deprecated_name='sheepdog_store_reader',
               help="""
How the store talks to sheepdog: for uploads, downloads, deletes, size
lookups and the start-up check.

``native`` speaks sheep's own client protocol over TCP to the sheep of
the configured address (uploads) or of the image's location (every
other operation): no sheepdog package is needed on the glance host and
no process is started per transfer. ``dog`` runs the sheepdog command
line tool (``sheepdog_store_command``) for every operation: ``dog vdi
read`` and ``dog vdi write`` processes for transfers, ``dog vdi list``,
``create``, ``resize`` and ``delete`` for the rest.

Rule: keep ``native`` where glance-api reaches the sheep named in its
locations directly; choose ``dog`` where only the command line tool is
known to work (a cluster speaking a protocol version the native client
refuses, or access through a wrapper command). Replaces
``sheepdog_store_reader``, whose values mean the same clients.

Possible values:
    * native: sheep's protocol, no sheepdog package on the glance host
    * dog: the sheepdog command line tool

Related options:
    * sheepdog_store_command
    * sheepdog_store_read_concurrency
    * sheepdog_store_write_concurrency
    * sheepdog_store_transfer_timeout
"""),
    cfg.StrOpt('sheepdog_store_command',
               default=names.DEFAULT_COMMAND,
               help="""
The sheepdog command line tool, used only with
``sheepdog_store_client = dog``.

With the default, ``dog``, the older name ``collie`` is used when no
``dog`` is on ``PATH``. With the ``dog`` client the command is resolved
to an absolute path when the store is configured, and the store refuses
to enable uploads when it cannot be found; the ``native`` client never
looks for it.

Possible values:
    * A command name looked up on ``PATH``
    * An absolute path to an executable

Related options:
    * sheepdog_store_client
    * sheepdog_store_command_timeout
"""),
    cfg.FloatOpt('sheepdog_store_command_timeout',
                 min=1,
                 default=60.0,
                 help="""
Seconds a control command may run before it is killed.

Control commands are ``vdi list``, ``create``, ``resize`` and
``delete``; one that does not exit in time fails its operation. The
``native`` client waits this long for a connection to a sheep.

Possible values:
    * A number of seconds, at least 1

Related options:
    * sheepdog_store_transfer_timeout
"""),
    cfg.FloatOpt('sheepdog_store_transfer_timeout',
                 min=1,
                 default=120.0,
                 help="""
Seconds a ``vdi read`` or ``vdi write`` process may stay idle, with the
``dog`` client; with ``native``, how long retries and failovers go on.

Idle means no byte through its pipe, or no exit after the last byte;
the process is then killed and the transfer fails. It bounds a stall,
not the length of a transfer. The ``native`` client bounds a stall by
``sheepdog_store_stall_timeout`` instead; it retries a result sheep
asks to retry, and fails an operation over to other sheep, for no
longer than this after the first such answer or failover.

Possible values:
    * A number of seconds, at least 1

Related options:
    * sheepdog_store_command_timeout
    * sheepdog_store_stall_timeout
"""),
    cfg.ListOpt('sheepdog_store_addresses',
                item_type=cfg.types.String(),
                default=[],
                help="""
More entry points of the sheepdog cluster, as ``host:port`` items.

The ``native`` client starts every operation at one sheep (the image
location's for reads, size lookups and deletes, the configured
``sheepdog_store_address`` for uploads) and, when that sheep fails,
moves the operation to another: these entry points in the order given,
then the members the cluster itself names. List a few sheep on
different hosts, so that one is reachable when the configured one is
not; the members learned from the cluster cover the rest.

The entry points are also the trust boundary: the store connects only
to them and to the members they name, and refuses, without connecting,
a location naming any other address (a host name and its IP address
are one node). A cloud whose locations name addresses the cluster had
before a migration lists those old addresses here. The ``dog`` client
does not fail over; it serves a location only when it names
``sheepdog_store_address`` or one of these entry points.

Possible values:
    * A comma-separated list of ``host:port`` items (IPv6 in brackets:
      ``[fd00::1]:7000``); empty for none

Related options:
    * sheepdog_store_address
    * sheepdog_store_port
    * sheepdog_store_failover_attempts
    * sheepdog_store_serve_any_name
"""),
    cfg.BoolOpt('sheepdog_store_serve_any_name',
                default=False,
                help="""
Whether a location may name any VDI of the cluster.

By default reads, size lookups and deletes serve only a VDI named like
a glance image: the image id where glance passes one, else a UUID,
either alone (the name earlier releases and the in-tree driver wrote)
or followed by the suffix this driver writes, ``.`` and 16 lowercase
hex digits. A location naming any other VDI (a Cinder
``volume-<uuid>``, a VM disk) is refused before anything connects, so
that whoever may add a location to an image can neither read nor, by
deleting the image, delete a VDI glance did not write. Each upload
names its VDI ``<image id>.<16 hex digits>``, unique to the attempt.

Keep it off unless images were stored under other names (a location
added by hand for a VDI written by ``dog``) and only trusted users may
add locations (see the security page of the documentation).

Possible values:
    * False: serve only VDIs named like a glance image
    * True: serve any VDI a location names

Related options:
    * sheepdog_store_addresses
"""),
    cfg.FloatOpt('sheepdog_store_stall_timeout',
                 min=0.5,
                 default=DEFAULT_STALL_TIMEOUT,
                 help="""
Seconds the ``native`` client waits for a sheep to answer one request.

Each request sent must be answered within this time of its sending (or
of the client starting to wait for it); otherwise the sheep is treated
as failed and the requests in flight move to another one. A frozen
sheep (SIGSTOP, a hung disk) accepts connections and never answers, and
a live gateway waits for a frozen peer holding a copy of the object up
to sheep's own poll timeout. Choose it above the longest time a healthy
sheep of the cluster takes to answer one object request under load,
below the time a client of glance-api will wait. It never exceeds
``sheepdog_store_transfer_timeout``.

Possible values:
    * A number of seconds, at least 0.5

Related options:
    * sheepdog_store_transfer_timeout
    * sheepdog_store_failover_attempts
"""),
    cfg.IntOpt('sheepdog_store_failover_attempts',
               min=0,
               max=64,
               default=DEFAULT_FAILOVER_ATTEMPTS,
               help="""
How many times one operation of the ``native`` client may move to
another sheep.

A connection refused, reset or closed, or a request unanswered for
``sheepdog_store_stall_timeout``, moves the operation to the next
sheep, where the requests that were not answered are sent again. The
operation fails with the last error once it has moved this many times,
or once ``sheepdog_store_transfer_timeout`` has passed since it first
moved. Choose at least the number of sheep that may be down at once;
0 turns failover off.

Possible values:
    * An integer from 0 to 64

Related options:
    * sheepdog_store_addresses
    * sheepdog_store_stall_timeout
    * sheepdog_store_transfer_timeout
"""),
]


def _in_tree_options():
    """The in-tree sheepdog driver's options, where glance_store has one.

    Pike's ``glance_store.register_opts`` registers the options of every
    ``glance_store.drivers`` entry point in ``[glance_store]`` before any
    store is built. The in-tree driver and this one both own the options
    of SHARED_OPTION_NAMES; two different option objects under one name
    make oslo.config raise DuplicateOptError there, and glance-api would
    not start. Sharing the in-tree objects makes the second registration
    a no-op.
    """
    try:
        from glance_store._drivers import sheepdog as in_tree
    except ImportError:
        # glance_store >= Ussuri: no in-tree sheepdog driver.
        return []
    return list(getattr(in_tree, '_SHEEPDOG_OPTS', []))


def share_options(own_opts, in_tree_opts):
    """own_opts, with the in-tree object for each of SHARED_OPTION_NAMES.

    Only those names: any other in-tree option of the same name (a tree
    patched further than patches/glance_store) keeps this driver's object,
    so that its default and bounds are the ones documented here.
    """
    by_name = dict((opt.dest, opt) for opt in in_tree_opts
                   if opt.dest in SHARED_OPTION_NAMES)
    return [by_name.get(opt.dest, opt) for opt in own_opts]


SHEEPDOG_OPTS = share_options(SHEEPDOG_OPTS, _in_tree_options())


def list_opts():
    """The ``oslo.config.opts`` entry point for oslo-config-generator.

    With ``enabled_backends`` (current glance) the same options go in the
    group named after the backend id instead of ``[glance_store]``
    (``list_backend_opts``), or in ``[backend_defaults]``
    (``list_backend_defaults_opts``).
    """
    return [('glance_store', list(SHEEPDOG_OPTS))]


# The group glance_store's own glance.multi_store namespace lists a
# driver's options under: its entry-point name. An operator renames it
# to the backend id of enabled_backends.
BACKEND_GROUP = 'fastsheep'


def list_backend_opts():
    """The options of one ``enabled_backends`` backend, for a sample.

    Under the entry-point name, as glance_store's ``glance.multi_store``
    namespace names a driver's group; the sample says to rename it.
    """
    return [(BACKEND_GROUP, list(SHEEPDOG_OPTS))]


def list_backend_defaults_opts():
    """The options as ``[backend_defaults]`` takes them (glance_store 5.0+).

    A value left unset in a backend's group is read from there on the
    glance_store releases that have ``BackendGroupConfiguration``; older
    ones ignore the group.
    """
    return [('backend_defaults', list(SHEEPDOG_OPTS))]
