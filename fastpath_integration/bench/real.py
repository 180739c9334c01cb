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

from fastpath_integration.bench import clusters
from fastpath_integration.bench import glance_api
from fastpath_integration.bench import runner
from fastpath_integration.bench import transfers
from fastpath_integration.bench import workers

MIB = clusters.MIB
CONFIGS = (('ceiling', 'dog vdi read | dd'), ('single', 'one reader'),
           ('default', 'default read-ahead'), ('native', 'native reader'))
VS = {'single': 'ceiling', 'default': 'single', 'native': 'ceiling'}


# Where the CPU goes: seconds per GiB moved of the process that reads or
# writes (its dog and dd children included) and of the cluster's sheep,
# the sum bounding what 2 cores can move (transfers._transfer).
COLUMNS = runner.THROUGHPUT + (('client CPU s/GiB', 'cpu_s_gib'),
                               ('sheep CPU s/GiB', 'sheep_cpu_s_gib'))


def _get_table(nodes, title, where):
    table = runner.Table(
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
PUT = runner.Table(
    'Upload on a real cluster', 'add() of the image through '
    'the store (its hashing included: md5, and md5 + sha512 with '
    'hashing_algo=sha512; unhashed: add()\'s client call with no hash), '
    'stored bytes checked by sha256 afterwards, '
    'against dog vdi create + dog vdi write from the same file; '
    'alternating rounds; vs: MB/s over dog\'s; client CPU: the upload '
    'alone, not its check.', COLUMNS, 'mb_s')
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
# The same upload with no hash: what the client itself costs (issue 28).
STORE_PUT_UNHASHED = PUT.row('real_put_fastsheep_unhashed', 'fastsheep '
                             'add(), no hash, {real_one}', DOG_WRITE)
STORE_PUT_UNHASHED_3 = PUT.row('real_put_fastsheep_unhashed_3node',
                               'fastsheep add(), no hash, 3 nodes',
                               DOG_WRITE_3)
# nodes -> (dog row, add() md5 row, add() sha512 row, unhashed row)
PUT_ROWS = {1: (DOG_WRITE, STORE_PUT, STORE_PUT_SHA512, STORE_PUT_UNHASHED),
            3: (DOG_WRITE_3, STORE_PUT_3, STORE_PUT_SHA512_3,
                STORE_PUT_UNHASHED_3)}
MANY = runner.Table(
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
API = runner.Table(
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
API_MANY = runner.Table(
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
    return runner.ratio(name, node_rows[config, cache],
                        node_rows[VS[config], cache],
                        op=bound and '>=', bound=bound)


RATIOS = (
    _vs('real_get_single_vs_ceiling_hot', ONE, 'single', 'hot', 0.9),
    _vs('real_get_single_vs_ceiling_cold', ONE, 'single', 'cold', 0.9),
    _vs('real_get_default_vs_single_hot', ONE, 'default', 'hot', 0.95),
    _vs('real_get_default_vs_single_cold', ONE, 'default', 'cold', 0.95),
    runner.ratio('real_put_vs_dog_write', STORE_PUT, DOG_WRITE, op='>=',
                 bound=1.5),
    runner.ratio('real_put_client_cpu_s_per_gib', STORE_PUT,
                 key='cpu_s_gib'),
    runner.ratio('real_put_rss_growth_mib', STORE_PUT,
                 key='rss_growth_mib', op='<=', bound=64),
    runner.ratio('real_put_vs_dog_write_3node', STORE_PUT_3, DOG_WRITE_3),
    runner.ratio('real_put_client_cpu_s_per_gib_3node', STORE_PUT_3,
                 key='cpu_s_gib'),
    runner.ratio('real_put_sha512_vs_dog_write', STORE_PUT_SHA512, DOG_WRITE,
                 op='>=', bound=1.2),
    runner.ratio('real_put_sha512_client_cpu_s_per_gib', STORE_PUT_SHA512,
                 key='cpu_s_gib'),
    runner.ratio('real_put_sha512_vs_dog_write_3node', STORE_PUT_SHA512_3,
                 DOG_WRITE_3),
    runner.ratio('real_put_sha512_client_cpu_s_per_gib_3node',
                 STORE_PUT_SHA512_3, key='cpu_s_gib'),
    runner.ratio('real_put_client_cpu_s_per_gib_unhashed',
                 STORE_PUT_UNHASHED, key='cpu_s_gib', op='<=', bound=0.6),
    runner.ratio('real_put_client_cpu_s_per_gib_unhashed_3node',
                 STORE_PUT_UNHASHED_3, key='cpu_s_gib', op='<=', bound=0.6),
    runner.ratio('real_put_unhashed_vs_dog_write', STORE_PUT_UNHASHED,
                 DOG_WRITE),
    runner.ratio('real_put_unhashed_vs_dog_write_3node',
                 STORE_PUT_UNHASHED_3, DOG_WRITE_3),
    runner.ratio('real_api_get_vs_pike_py27', API_PLUGIN, API_PIKE, op='>=',
                 bound=5),
    _vs('real_get_single_vs_ceiling_hot_3node', THREE, 'single', 'hot'),
    _vs('real_get_single_vs_ceiling_cold_3node', THREE, 'single', 'cold'),
    _vs('real_get_default_vs_single_hot_3node', THREE, 'default', 'hot'),
    _vs('real_get_default_vs_single_cold_3node', THREE, 'default', 'cold'),
    _vs('native_vs_ceiling_hot_1node', ONE, 'native', 'hot', 2.0),
    _vs('native_vs_ceiling_cold_1node', ONE, 'native', 'cold', 2.0),
    _vs('native_vs_ceiling_hot_3node', THREE, 'native', 'hot', 2.0),
    _vs('native_vs_ceiling_cold_3node', THREE, 'native', 'cold', 2.0),
    runner.ratio('native_concurrent16_vs_ceiling', MANY_NATIVE,
                 ONE['ceiling', 'hot'], op='>=', bound=1.0),
    runner.ratio('native_concurrent16_rss_growth_mib', MANY_NATIVE,
                 key='rss_growth_mib', op='<=', bound=16 * 16),
    runner.ratio('native_api_get_vs_dog_py27', API_NATIVE, API_PLUGIN,
                 op='>=', bound=1.0),
)


def add_arguments(parser):
    group = parser.add_argument_group(
        'real and concurrent sections (a real sheepdog cluster)')
    group.add_argument('--real-cluster', metavar='ADDR:PORT',
                       help='measure this existing cluster instead of '
                            'starting local ones; only VDIs named %s* are '
                            'made there, and deleted' % clusters.PREFIX.rsplit(
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
    if not clusters.real_available(args, report):
        return
    source = clusters.Source(size)
    try:
        sizes = [(1, 1, ONE)]
        if not (args.real_cluster or args.real_no_3node):
            sizes.append((3, 2, THREE))
        for nodes, copies, rows in sizes:
            with clusters.real(args, source, nodes, copies) as cluster:
                _gets(args, report, cluster, rows, native)
                _puts(args, report, cluster, PUT_ROWS[nodes])
                if nodes == 1:
                    _many(args, report, cluster, native)
                    _api(args, report, cluster, native)
    finally:
        source.close()
    report.note('real: %d MiB image, %d alternating round(s); %s; page '
                'cache %s' % (
                    size // MIB, rounds(args), report.vars['real_one'],
                    'dropped on this host for the cold rows'
                    if clusters.can_drop_caches() else
                    'not droppable (not root): cold rows not measured'))


def _gets(args, report, cluster, rows, native):
    from glance_store_fastsheep import opts
    get = cluster.get(repeats=1)
    configs = {'ceiling': dict(get, kind='ceiling', mode=None,
                               pipe_size=opts.DEFAULT_PIPE_SIZE),
               'single': dict(get, opts={
                   'sheepdog_store_read_concurrency': 1}),
               'default': dict(get, opts={}),
               'native': dict(get, opts={'sheepdog_store_reader':
                                         'native'})}
    measured = []
    for cache in ('hot', 'cold') if clusters.can_drop_caches() else ('hot',):
        for config, _label in CONFIGS:
            if config != 'native' or native:
                measured.append((rows[config, cache], dict(
                    configs[config], drop_caches=cache == 'cold')))
    report.interleave(measured, transfers.work, rounds(args), cluster.env)


def _puts(args, report, cluster, rows):
    """dog vdi write against add() with md5, with md5 + sha512, unhashed.

    add() runs on the native client where the tree has
    ``sheepdog_store_client``: issue 28's targets are the native
    client's writes, and transfers' store passes the dog client to any
    row that names none. A tree from before that option writes with dog,
    its only writer, and has no unhashed row (its client has no write
    to call without add()'s hashes).
    """
    dog_row, md5_row, sha512_row, unhashed_row = rows
    put = cluster.get(kind='put')
    native = client_option() == 'sheepdog_store_client'
    if native:
        put['opts'] = {'sheepdog_store_client': 'native'}
    measured = [(dog_row, dict(put, kind='dog_write')), (md5_row, put),
                (sha512_row, dict(put, hashing_algo='sha512'))]
    if native:
        measured.append((unhashed_row, dict(put, unhashed=True)))
    report.interleave(measured, transfers.work, rounds(args), cluster.env)


def _many(args, report, cluster, native):
    many = cluster.get(count=16)
    measured = [(MANY_DOG, dict(many, opts={}))]
    if native:
        measured.append((MANY_NATIVE, dict(many, opts={
            'sheepdog_store_reader': 'native'})))
    report.interleave(measured, transfers.concurrent, rounds(args),
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
            if self.store == 'fastsheep':
                parser = configparser.ConfigParser(interpolation=None)
                parser.read(self.conf)
                if reader:
                    parser.set('glance_store', option, reader)
                # The image's location names the VDI the bench wrote
                # with dog (clusters.PREFIX), not a glance image id.
                parser.set('glance_store', 'sheepdog_store_serve_any_name',
                           'true')
                with open(self.conf, 'w') as conf:
                    parser.write(conf)
            return extra

    size = cluster.params['size']
    rundir = tempfile.mkdtemp(prefix='fastpath-bench-')
    os.chmod(rundir, 0o755)
    configs = [(API_PIKE, 'sheepdog', None), (API_PATCHED, 'patched', None),
               (API_PLUGIN, 'fastsheep', None)]
    if native:
        configs.append((API_NATIVE, 'fastsheep', 'native'))

    def fetch(params):
        api, url = params
        got, metrics = glance_api.curl(api, size, [
            '-o', '/dev/null', '-w', '%{size_download}', url])
        if int(got) != size:
            raise RuntimeError('%s: %s bytes, not %d' % (url, got, size))
        return metrics
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
                    api.url, glance_api.image_at(api, cluster,
                                                 cluster.params['name']))
                glance_api.check_sha(urls[row][1], cluster.params['sha256'])
            report.interleave([(row, urls[row]) for row, _s, _r in configs],
                              fetch, rounds(args), here=True)
            report.interleave([
                (API_CLIENTS[count, reader], (count,) + urls[
                    API_NATIVE if reader == 'native' else API_PLUGIN])
                for count, reader in sorted(API_CLIENTS)
                if reader == 'dog' or native], lambda params: _clients(
                    params[1], params[2], size, params[0]), rounds(args),
                here=True)
    except Exception as exc:  # noqa: these rows, not the section
        for row in [config[0] for config in configs] + list(
                API_CLIENTS.values()):
            if row.name not in report.rows:
                report.failed(row, exc)
    finally:
        shutil.rmtree(rundir, ignore_errors=True)


def _clients(api, url, size, count):
    """count curls of url at once against one glance-api.

    Total MB/s over the wall time of all of them; the largest RSS growth
    of glance-api's processes (their summed VmRSS over the sum before)
    and the most ``dog``/``collie`` children, sampled every 50 ms.
    """
    import time

    from fastpath_integration.harness import host
    cmd = glance_api.curl_command() + [
        '-o', '/dev/null', '-w', '%{size_download}']

    def sample():
        rss, dogs = 0.0, 0
        for pid in host.process_tree(api.pid):
            try:
                with open('/proc/%d/comm' % pid) as comm:
                    if comm.read().strip() in ('dog', 'collie'):
                        dogs += 1
                        continue
                rss += workers.vm_hwm_mib(pid, 'VmRSS')
            except (IOError, OSError):  # it ended meanwhile
                continue
        return rss, dogs
    before = sample()[0]
    peak_rss, peak_dogs = before, 0
    started = workers.monotonic()
    curls = [subprocess.Popen(cmd + [url], stdout=subprocess.PIPE)
             for _ in range(count)]
    try:
        while any(curl.poll() is None for curl in curls):
            rss, dogs = sample()
            peak_rss, peak_dogs = max(peak_rss, rss), max(peak_dogs, dogs)
            time.sleep(0.05)
        wall = workers.monotonic() - started
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
