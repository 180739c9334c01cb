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
"""Downloads and uploads on a real sheepdog cluster, side by side.

The sheepdog section's workers against sheepdog 1.0.1 itself: a 1-node
and a 3-node (2 copies) cluster started by the integration harness's
fixture, or an operator's cluster (``--real-cluster``), hot and with the
page cache dropped. Rows, methods and how to point it at a cluster:
doc/source/bench-sheepdog.rst.
"""

import os
import subprocess
import sys

import bench
import worker

MIB = 1 << 20
# Every VDI this run makes on a cluster starts with this, and is deleted.
PREFIX = 'fastpath-bench-%d-' % os.getpid()
NOT_RUN = ('real: did not run: no real sheepdog here; set SHEEPDOG_SOURCE '
           '(a sheepdog 1.0.1 source archive) or SHEEPDOG_PREFIX (an '
           'installed sheepdog), or point --real-cluster at a cluster')
CONFIGS = (('ceiling', 'dog vdi read | dd'), ('single', 'one reader'),
           ('default', 'default read-ahead'), ('native', 'native reader'))
VS = {'single': 'ceiling', 'default': 'single', 'native': 'ceiling'}


# Where the CPU goes: seconds per GiB moved of the process that reads or
# writes (its dog and dd children included) and of the cluster's sheep,
# the sum bounding what 2 cores can move (sheepdog_bench._transfer).
COLUMNS = bench.THROUGHPUT + (('client CPU s/GiB', 'cpu_s_gib'),
                              ('sheep CPU s/GiB', 'sheep_cpu_s_gib'))


def _get_table(nodes, title, where):
    table = bench.Table(
        'Download on a real cluster%s' % title, 'get() of one image, '
        'eventlet, byte count only (sha256 checked in an untimed pass); '
        'hot, and with the page cache dropped before each timed get; '
        'alternating rounds; vs: one reader over the ceiling, the default '
        'over one reader, native over the ceiling.', COLUMNS,
        'mb_s', chart='real_get_mb_s_%dnode' % nodes)
    rows = {}
    for cache in ('hot', 'cold'):
        for config, label in CONFIGS:
            rows[config, cache] = table.row(
                'real_%s_%s_%dnode' % (config, cache, nodes),
                '%s, %s, %s' % (label, cache, where),
                rows.get((VS.get(config), cache)))
    return table, rows


GET1, ONE = _get_table(1, '', '{real_one}')  # or --real-cluster's
GET3, THREE = _get_table(3, ', 3 nodes keeping 2 copies', '3 nodes')
PUT = bench.Table(
    'Upload on a real cluster', 'add() of the image through '
    'the store (its hashing included: md5, and md5 + sha512 with '
    'hashing_algo=sha512), stored bytes checked by sha256 afterwards, '
    'against dog vdi create + dog vdi write from the same file; '
    'alternating rounds; vs: MB/s over dog\'s.', COLUMNS, 'mb_s')
DOG_WRITE = PUT.row('real_put_dog_write', 'dog vdi write < file, {real_one}')
STORE_PUT = PUT.row('real_put_fastsheep', 'fastsheep add(), {real_one}',
                    DOG_WRITE)
STORE_PUT_SHA512 = PUT.row('real_put_fastsheep_sha512', 'fastsheep add(), '
                           'sha512, {real_one}', DOG_WRITE)
DOG_WRITE_3 = PUT.row('real_put_dog_write_3node',
                      'dog vdi write < file, 3 nodes')
STORE_PUT_3 = PUT.row('real_put_fastsheep_3node', 'fastsheep add(), 3 nodes',
                      DOG_WRITE_3)
STORE_PUT_SHA512_3 = PUT.row('real_put_fastsheep_sha512_3node',
                             'fastsheep add(), sha512, 3 nodes', DOG_WRITE_3)
# nodes -> (dog row, add() md5 row, add() sha512 row)
PUT_ROWS = {1: (DOG_WRITE, STORE_PUT, STORE_PUT_SHA512),
            3: (DOG_WRITE_3, STORE_PUT_3, STORE_PUT_SHA512_3)}
MANY = bench.Table(
    '16 concurrent downloads on a real cluster', '16 get() of '
    'one image at once in one eventlet process, hot; total MB/s; vs: '
    'native over the dog reader\'s default.',
    (('total MB/s', 'mb_s'), ('RSS growth MiB', 'rss_growth_mib'),
     ('dog children at peak', 'peak_children'), ('fds at peak', 'peak_fds')),
    'mb_s')
MANY_DOG = MANY.row('real_concurrent16_dog', 'dog reader default, {real_one}')
MANY_NATIVE = MANY.row('real_concurrent16_native', 'native, {real_one}',
                       MANY_DOG)
# Seed 000's download through Pike glance-api 15 on 2.7, on a real
# cluster: measured when the integration harness can run it there.
API = bench.Table(
    'Download through Pike glance-api on a real cluster (CPython 2.7)',
    'One image over HTTP (v2), byte count checked; vs: MB/s over the '
    'in-tree driver\'s (native: over the dog reader\'s).',
    (('MB/s', 'mb_s'),), 'mb_s')
API_PIKE = API.row('real_api_get_pike_py27', 'Pike in-tree driver')
API_PATCHED = API.row('real_api_get_patched_py27', 'Pike + patches',
                      API_PIKE)
API_PLUGIN = API.row('real_api_get_plugin_py27', 'fastsheep', API_PIKE)
API_NATIVE = API.row('real_api_get_native_py27', 'fastsheep, native',
                     API_PLUGIN)
# The same glance-apis, N HTTP clients at once (issue 20).
API_MANY = bench.Table(
    'Concurrent downloads through Pike glance-api on a real cluster '
    '(CPython 2.7)', 'N HTTP clients (curl) fetch the image at once from '
    'one glance-api worker; total MB/s over all of them; RSS growth of '
    'the glance-api processes over their RSS just before (memory an '
    'earlier row left there is not counted again) and their dog '
    'children, sampled every 50 ms; alternating rounds; vs: native over '
    'the dog reader\'s default.',
    (('total MB/s', 'mb_s'), ('RSS growth MiB', 'rss_growth_mib'),
     ('dog children at peak', 'peak_children')), 'mb_s')
API_CLIENTS = {}
for _count in (4, 16):
    API_CLIENTS[_count, 'dog'] = API_MANY.row(
        'real_api_get%d_plugin_py27' % _count, '%d clients, fastsheep'
        % _count)
    API_CLIENTS[_count, 'native'] = API_MANY.row(
        'real_api_get%d_native_py27' % _count, '%d clients, fastsheep, '
        'native' % _count, API_CLIENTS[_count, 'dog'])


def _vs(name, node_rows, config, cache, bound=None):
    return bench.ratio(name, node_rows[config, cache],
                       node_rows[VS[config], cache],
                       op=bound and '>=', bound=bound)


RATIOS = (
    _vs('real_get_single_vs_ceiling_hot', ONE, 'single', 'hot', 0.9),
    _vs('real_get_single_vs_ceiling_cold', ONE, 'single', 'cold', 0.9),
    _vs('real_get_default_vs_single_hot', ONE, 'default', 'hot', 0.95),
    _vs('real_get_default_vs_single_cold', ONE, 'default', 'cold', 0.95),
    bench.ratio('real_put_vs_dog_write', STORE_PUT, DOG_WRITE, op='>=',
                bound=1.5),
    bench.ratio('real_put_client_cpu_s_per_gib', STORE_PUT,
                key='cpu_s_gib'),
    bench.ratio('real_put_rss_growth_mib', STORE_PUT,
                key='rss_growth_mib', op='<=', bound=64),
    bench.ratio('real_put_vs_dog_write_3node', STORE_PUT_3, DOG_WRITE_3),
    bench.ratio('real_put_client_cpu_s_per_gib_3node', STORE_PUT_3,
                key='cpu_s_gib'),
    bench.ratio('real_put_sha512_vs_dog_write', STORE_PUT_SHA512, DOG_WRITE,
                op='>=', bound=1.2),
    bench.ratio('real_put_sha512_client_cpu_s_per_gib', STORE_PUT_SHA512,
                key='cpu_s_gib'),
    bench.ratio('real_put_sha512_vs_dog_write_3node', STORE_PUT_SHA512_3,
                DOG_WRITE_3),
    bench.ratio('real_put_sha512_client_cpu_s_per_gib_3node',
                STORE_PUT_SHA512_3, key='cpu_s_gib'),
    bench.ratio('real_api_get_vs_pike_py27', API_PLUGIN, API_PIKE, op='>=',
                bound=5),
    _vs('real_get_single_vs_ceiling_hot_3node', THREE, 'single', 'hot'),
    _vs('real_get_single_vs_ceiling_cold_3node', THREE, 'single', 'cold'),
    _vs('real_get_default_vs_single_hot_3node', THREE, 'default', 'hot'),
    _vs('real_get_default_vs_single_cold_3node', THREE, 'default', 'cold'),
    _vs('native_vs_ceiling_hot_1node', ONE, 'native', 'hot', 2.0),
    _vs('native_vs_ceiling_cold_1node', ONE, 'native', 'cold', 2.0),
    _vs('native_vs_ceiling_hot_3node', THREE, 'native', 'hot', 2.0),
    _vs('native_vs_ceiling_cold_3node', THREE, 'native', 'cold', 2.0),
    bench.ratio('native_concurrent16_vs_ceiling', MANY_NATIVE,
                ONE['ceiling', 'hot'], op='>=', bound=1.0),
    bench.ratio('native_concurrent16_rss_growth_mib', MANY_NATIVE,
                key='rss_growth_mib', op='<=', bound=16 * 16),
    bench.ratio('native_api_get_vs_dog_py27', API_NATIVE, API_PLUGIN,
                op='>=', bound=1.0),
)


def add_arguments(parser):
    group = parser.add_argument_group(
        'real and concurrent sections (a real sheepdog cluster)')
    group.add_argument('--real-cluster', metavar='ADDR:PORT',
                       help='measure this existing cluster instead of '
                            'starting local ones; only VDIs named %s* are '
                            'made there, and deleted' % PREFIX.rsplit(
                                '-', 2)[0])
    group.add_argument('--real-dog', metavar='PATH',
                       help='the dog of --real-cluster (default: dog on '
                            'PATH); Pike rows run collie from its directory')
    group.add_argument('--real-rounds', type=int, default=None,
                       help='alternating rounds per row (default 4; 2 with '
                            '--quick)')
    group.add_argument('--real-no-3node', action='store_true',
                       help='skip the 3-node cluster\'s rows')


def client_option():
    """The tree's option that chooses the native reader, or None.

    ``sheepdog_store_client`` (native by default) replaced
    ``sheepdog_store_reader`` (dog by default).
    """
    from glance_store_fastsheep import opts
    names = set(opt.dest for opt in opts.SHEEPDOG_OPTS)
    for name in ('sheepdog_store_client', 'sheepdog_store_reader'):
        if name in names:
            return name
    return None


def reader_option():
    """Whether the tree under test has a native reader to choose."""
    return client_option() is not None


def can_drop_caches():
    return os.access('/proc/sys/vm/drop_caches', os.W_OK)


def available(args, report):
    """Whether there is a cluster to measure; if not, say so."""
    from fastpath_integration.harness import sheepdog
    if args.real_cluster or sheepdog.available():
        return True
    sys.stderr.write('bench: %s\n' % NOT_RUN)
    report.note(NOT_RUN)
    return False


class Source(object):
    """A temporary directory holding the size seeded random source bytes."""

    def __init__(self, size):
        import tempfile
        self.root = tempfile.mkdtemp(prefix='bench-real-')
        self.size = size
        self.path = os.path.join(self.root, 'source.img')
        self.sha256 = bench.write_random_file(self.path, size)

    def close(self):
        import shutil
        shutil.rmtree(self.root, ignore_errors=True)


class Cluster(object):
    """A real cluster holding the source as a VDI, for one section.

    Started here by the harness's ``SheepdogCluster`` (a private mount
    namespace; stopped by ``close()``), or the operator's
    (``--real-cluster``). Either way every VDI made on it is named
    ``PREFIX...`` (the workers' uploads too) and ``close()`` deletes every
    such VDI, whatever failed before.
    """

    def __init__(self, args, source, nodes=1, copies=1):
        import shutil
        self.fixture, self.made = None, False
        if args.real_cluster:
            address, port = args.real_cluster.rsplit(':', 1)
            dog = args.real_dog or shutil.which('dog') or 'dog'
            bin_dir, self.where = os.path.dirname(dog), 'cluster %s' % (
                args.real_cluster)
        else:
            from fastpath_integration.harness import sheepdog
            self.fixture = sheepdog.SheepdogCluster(nodes, copies)
            self.fixture.setUp()  # it cleans up after itself if it fails
            address, port = self.fixture.address, self.fixture.port
            dog, bin_dir = self.fixture.dog_path, self.fixture.bin_dir
            self.where = '%d node%s' % (nodes, 's' if nodes > 1 else '')
        # What the harness's Glance fixture reads of a cluster.
        self.address, self.port, self.dog_path, self.bin_dir = (
            address, int(port), dog, bin_dir)
        self.params = {'dog': dog, 'address': address, 'port': int(port),
                       'name': PREFIX + 'source', 'source': source.path,
                       'size': source.size, 'sha256': source.sha256,
                       'vdi_prefix': PREFIX, 'sheep_pids': (
                           # an operator's cluster: its sheep are not ours
                           self.fixture and self.fixture.processes())}
        # Pike's driver runs a bare collie from PATH.
        self.env = {'PATH': bin_dir + os.pathsep + os.environ['PATH']}
        try:
            self.vdi(self.params['name'], source)
        except BaseException:
            self.close()
            raise

    def dog(self, *argv, **kwargs):
        return subprocess.check_output(
            [self.params['dog']] + list(argv) + [
                '-a', self.params['address'], '-p',
                str(self.params['port'])], **kwargs)

    def vdi(self, name, source, size=None):
        """A VDI named name (PREFIX first) of the source's first bytes."""
        assert name.startswith(PREFIX)
        size = size or source.size
        self.made = True
        self.dog('vdi', 'create', name, str(size))
        with open(source.path, 'rb') as src:
            self.dog('vdi', 'write', name, '0', str(size), stdin=src)
        return dict(self.params, name=name, size=size, sha256=(
            source.sha256 if size == source.size else
            _sha256(source.path, size)))

    def ours(self):
        """Names of the VDIs of this run (``dog vdi list -r``: ``= NAME``)."""
        names = set()
        for line in self.dog('vdi', 'list', '-r').decode().splitlines():
            fields = line.split(' ')
            if len(fields) > 1 and fields[1].startswith(PREFIX):
                names.add(fields[1])
        return sorted(names)

    def close(self):
        try:
            if self.made or self.fixture is None:
                for name in self.ours():
                    self.dog('vdi', 'delete', name)
        finally:
            if self.fixture is not None:
                self.fixture.cleanUp()


def _sha256(path, size):
    import sheepdog_bench
    return sheepdog_bench._sha256(path, size)


def rounds(args):
    return args.real_rounds or (2 if args.quick else 4)


def run(args, report):
    size = min(args.size_bytes, 256 * MIB) if args.quick else args.size_bytes
    native = reader_option()
    if not native:
        report.note('real: native rows not measured: this tree has no '
                    'sheepdog_store_reader option')
    report.vars['real_one'] = args.real_cluster and 'cluster %s' % (
        args.real_cluster) or '1 node'
    if not available(args, report):
        return
    source = Source(size)
    try:
        clusters = [(1, 1, ONE)]
        if not (args.real_cluster or args.real_no_3node):
            clusters.append((3, 2, THREE))
        for nodes, copies, rows in clusters:
            cluster = Cluster(args, source, nodes, copies)
            try:
                _gets(args, report, cluster, rows, native)
                _puts(args, report, cluster, size, PUT_ROWS[nodes])
                if nodes == 1:
                    _many(args, report, cluster, native)
                    _api(args, report, cluster, native)
            finally:
                cluster.close()
    finally:
        source.close()
    report.note('real: %d MiB image, %d alternating round(s); %s; page '
                'cache %s' % (
                    size // MIB, rounds(args), report.vars['real_one'],
                    'dropped on this host for the cold rows'
                    if can_drop_caches() else
                    'not droppable (not root): cold rows not measured'))


def _gets(args, report, cluster, rows, native):
    get = dict(cluster.params, kind='get', driver='fastsheep',
               mode='eventlet', repeats=1)
    configs = {'ceiling': dict(get, kind='ceiling', mode=None,
                               pipe_size=_pipe_size()),
               'single': dict(get, opts={
                   'sheepdog_store_read_concurrency': 1}),
               'default': dict(get, opts={}),
               'native': dict(get, opts={'sheepdog_store_reader':
                                         'native'})}
    measured = []
    for cache in ('hot', 'cold') if can_drop_caches() else ('hot',):
        for config, _label in CONFIGS:
            if config != 'native' or native:
                measured.append((rows[config, cache], dict(
                    configs[config], drop_caches=cache == 'cold')))
    report.interleave(measured, 'sheepdog_bench:work', rounds(args),
                      cluster.env)


def _pipe_size():
    from glance_store_fastsheep import opts
    return opts.DEFAULT_PIPE_SIZE


def _puts(args, report, cluster, size, rows):
    dog_row, md5_row, sha512_row = rows
    put = dict(cluster.params, kind='put', driver='fastsheep',
               mode='eventlet')
    report.interleave([(dog_row, dict(put, kind='dog_write')),
                       (md5_row, put),
                       (sha512_row, dict(put, hashing_algo='sha512'))],
                      'real_bench:work', rounds(args), cluster.env)


def _many(args, report, cluster, native):
    many = dict(cluster.params, kind='get', driver='fastsheep',
                mode='eventlet', count=16)
    measured = [(MANY_DOG, dict(many, opts={}))]
    if native:
        measured.append((MANY_NATIVE, dict(many, opts={
            'sheepdog_store_reader': 'native'})))
    report.interleave(measured, 'concurrent_bench:work', rounds(args),
                      cluster.env)


def _api(args, report, cluster, native):
    """One image through Pike glance-api, each store, alternating rounds.

    Every configuration streams the VDI ``dog vdi write`` made, added as
    a location (the services section's way), one glance-api each.
    """
    import configparser
    import shutil
    import tempfile

    import fixtures

    from fastpath_integration.harness import glance
    from fastpath_integration.harness import pike_sources
    import services_bench

    class PikeGlance(glance.Glance):
        """Pike glance-api with ``sheepdog_store_reader`` set as asked."""

        def __init__(self, *args, **kwargs):
            self.reader = kwargs.pop('reader')
            super(PikeGlance, self).__init__(*args, **kwargs)

        def _configure_pike(self, *args):
            extra = super(PikeGlance, self)._configure_pike(*args)
            option = client_option()
            # With sheepdog_store_client the default is native: the
            # rows meant for dog name it.
            reader = self.reader or (
                'dog' if option == 'sheepdog_store_client' else None)
            if self.store == 'fastsheep' and reader:
                parser = configparser.ConfigParser(interpolation=None)
                parser.read(self.conf)
                parser.set('glance_store', option, reader)
                with open(self.conf, 'w') as conf:
                    parser.write(conf)
            return extra

    section = services_bench._Section(args, report)
    section._full_vdi = cluster.params['name']
    size, times, clients = cluster.params['size'], {}, {}
    rundir = tempfile.mkdtemp(prefix='fastpath-bench-')
    os.chmod(rundir, 0o755)
    configs = [(API_PIKE, 'sheepdog', None), (API_PATCHED, 'patched', None),
               (API_PLUGIN, 'fastsheep', None)]
    if native:
        configs.append((API_NATIVE, 'fastsheep', 'native'))
    try:
        with fixtures.Fixture() as stack:
            pike_sources.install_project(glance.VENVS['pike', 'eventlet'],
                                         os.path.join(rundir, 'install.log'))
            urls = {}
            for row, store, reader in configs:
                api = stack.useFixture(PikeGlance(
                    rundir, row.name, sheepdog=cluster, release='pike',
                    server='eventlet', store=store, reader=reader))
                urls[row] = api, '%s/v2/images/%s/file' % (
                    api.url, section._full_image_for(None, api, cluster))
                section._check_sha(urls[row][1], cluster.params['sha256'])
            for number in range(rounds(args)):
                for row, _store, _reader in (configs if number % 2 == 0
                                             else configs[::-1]):
                    got = int(section._curl_row(row, urls[row][0], size, [
                        '-o', '/dev/null', '-w', '%{size_download}',
                        urls[row][1]]))
                    if got != size:
                        raise RuntimeError('%s: %d bytes, not %d' % (
                            row.name, got, size))
                    times.setdefault(row, []).append(
                        size / report.rows[row.name]['mb_s'] / 1e6)
            many = [(count, reader, urls[API_NATIVE if reader == 'native'
                                         else API_PLUGIN])
                    for count, reader in sorted(API_CLIENTS)
                    if reader == 'dog' or native]
            for number in range(rounds(args)):
                for count, reader, (api, url) in (
                        many if number % 2 == 0 else many[::-1]):
                    row = API_CLIENTS[count, reader]
                    result = _clients(api, url, size, count)
                    merged = clients.setdefault(row, dict(result,
                                                          times_s=[]))
                    merged['times_s'] += result['times_s']
                    for key in ('rss_growth_mib', 'peak_children'):
                        merged[key] = max(merged[key], result[key])
    except Exception as exc:  # noqa: these rows, not the section
        for row in [config[0] for config in configs] + list(
                API_CLIENTS.values()):
            if row not in times and row not in clients:
                report.failed(row, exc)
    finally:
        shutil.rmtree(rundir, ignore_errors=True)
    for row, values in times.items():
        report.add(row, times_s=[round(t, 3) for t in values],
                   mb_s=round(size / worker.median(values) / 1e6, 1))
    for row, result in clients.items():
        result['mb_s'] = round(result['size'] / worker.median(
            result['times_s']) / 1e6, 1)
        report.add(row, **result)


def _clients(api, url, size, count):
    """count curls of url at once against one glance-api.

    Total MB/s over the wall time of all of them; the largest RSS growth
    of glance-api's processes (their summed VmRSS over the sum before)
    and the most ``dog``/``collie`` children, sampled every 50 ms.
    """
    import time

    from fastpath_integration.harness import host
    import services_bench
    cmd = services_bench.curl_command() + [
        '-o', '/dev/null', '-w', '%{size_download}']

    def sample():
        rss, dogs = 0.0, 0
        for pid in host.process_tree(api.pid):
            try:
                with open('/proc/%d/comm' % pid) as comm:
                    if comm.read().strip() in ('dog', 'collie'):
                        dogs += 1
                        continue
                rss += worker.vm_hwm_mib(pid, 'VmRSS')
            except (IOError, OSError):  # it ended meanwhile
                continue
        return rss, dogs
    before = sample()[0]
    peak_rss, peak_dogs = before, 0
    started = worker.monotonic()
    curls = [subprocess.Popen(cmd + [url], stdout=subprocess.PIPE)
             for _ in range(count)]
    try:
        while any(curl.poll() is None for curl in curls):
            rss, dogs = sample()
            peak_rss, peak_dogs = max(peak_rss, rss), max(peak_dogs, dogs)
            time.sleep(0.05)
        wall = worker.monotonic() - started
    finally:
        for curl in curls:
            if curl.poll() is None:
                curl.kill()
    for curl in curls:
        got = curl.communicate()[0]
        if curl.returncode or int(got or 0) != size:
            raise RuntimeError('%d clients: curl exit %s, %s bytes, not %d'
                               % (count, curl.returncode, got, size))
    return {'times_s': [round(wall, 3)], 'size': count * size,
            'size_mib': size // MIB, 'peak_children': peak_dogs,
            'rss_growth_mib': round(peak_rss - before, 1)}


# -- worker side --------------------------------------------------------------

def _dog_write_row(params):
    """``dog vdi create`` + ``dog vdi write`` from the source file."""
    import uuid

    import sheepdog_bench
    where = ['-a', params['address'], '-p', str(params['port'])]

    def once(timed):
        name = params['vdi_prefix'] + str(uuid.uuid4())
        started = sheepdog_bench.worker.monotonic()
        subprocess.check_call([params['dog'], 'vdi', 'create', name,
                               str(params['size'])] + where)
        with open(params['source'], 'rb') as src:
            subprocess.check_call([params['dog'], 'vdi', 'write', name, '0',
                                   str(params['size'])] + where, stdin=src)
        elapsed = sheepdog_bench.worker.monotonic() - started
        sheepdog_bench._check_and_drop(params, name, params['size'],
                                       timed and params['sha256'])
        return elapsed
    result = sheepdog_bench._transfer(dict(params, mode=None), once)
    del result['rss_growth_mib']  # dog's memory, not this process's
    return result


def work(params):
    import sheepdog_bench
    if params['kind'] == 'dog_write':
        return _dog_write_row(params)
    return sheepdog_bench.work(params)
