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
"""doc/source/quickstart.rst, followed as written, on two release lines.

``tox -e quickstart-page``: for Yoga on Python 3.9 (RHEL 9's python3) and
2026.1 on 3.13, a fresh venv gets glance (that line's release, with
that line's upper-constraints from ``../shared/reference``): it stands
for "glance's venv". Then the page's own blocks, read from the page so
that the two cannot drift apart:

1. the install block, run by bash, with only two substitutions: that
   venv for ``/opt/stack/glance-venv`` and this checkout (its committed
   ``HEAD``) for the clone URL;
2. the multi-store block as ``glance-api.conf``, with a real 3-node
   sheepdog cluster's addresses for the example ones and a temporary
   directory for ``/var/lib/glance``;
3. "Check that it works", through glance_store's multi-store API as
   glance-api calls it (no keystone here: the ``openstack`` commands
   become add, get and delete): the INFO lines the page quotes, then a
   64 MiB image stored, read back byte for byte and deleted.

Exit status 0 when both lines pass. Without a real sheepdog it fails
when FASTPATH_REQUIRE_REAL_SHEEPDOG is set (CI) and otherwise says, on
stderr, that nothing was checked.
"""

from __future__ import print_function

import os
import re
import shutil
import subprocess
import sys
import tempfile

TOPDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOPDIR)

from fastpath_integration.harness import sheepdog  # noqa: E402

PAGE = os.path.join(TOPDIR, 'doc', 'source', 'quickstart.rst')
REFERENCE = os.path.join(os.path.dirname(TOPDIR), 'shared', 'reference')
# (line, interpreter, glance release, upper-constraints file).
LINES = [
    ('yoga', '3.9', 'glance==24.2.1', 'yoga-upper-constraints.txt'),
    ('2026.1', '3.13', 'glance==32.0.0', '2026.1-upper-constraints.txt'),
]
EXAMPLE_VENV = '/opt/stack/glance-venv'
EXAMPLE_CLONE = 'https://opendev.org/x/openstack-fastpath'

# Run in the line's venv: glance-api's own calls, on the global CONF as
# glance-api keeps it (glance_store's multi_backend reads it there).
PROBE = r'''
import hashlib, io, logging, os, sys, uuid
from oslo_config import cfg
from glance_store import multi_backend
CONF = cfg.CONF
CONF.register_opt(cfg.DictOpt('enabled_backends'))
CONF(['--config-file', sys.argv[1]], project='glance')
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format='%(levelname)s %(name)s %(message)s')
reserved = {'os_glance_staging_store': 'file',
            'os_glance_tasks_store': 'file'}
multi_backend.register_store_opts(CONF, reserved_stores=reserved)
multi_backend.create_multi_stores(CONF, reserved_stores=reserved)
backend = CONF.glance_store.default_backend
data = os.urandom(64 * 1024 * 1024)
image_id = str(uuid.uuid4())
uri, size, checksum, multihash, meta = multi_backend.add_with_multihash(
    CONF, image_id, io.BytesIO(data), len(data), backend, 'sha512')
print('STORED %s %d %s %s' % (uri, size, checksum, meta.get('store')))
assert size == len(data), size
assert checksum == hashlib.md5(data).hexdigest(), checksum
assert multihash == hashlib.sha512(data).hexdigest(), multihash
pieces, length = multi_backend.get(uri, backend)
back = b''.join(pieces)
assert length == len(data) and back == data, (length, len(back))
print('READ BACK %d bytes, same' % len(back))
multi_backend.delete(uri, backend)
try:
    multi_backend.get(uri, backend)
except Exception as exc:
    print('DELETED: %s' % type(exc).__name__)
else:
    raise SystemExit('still readable after delete')
print('IMAGE %s' % image_id)
'''


class Failed(Exception):
    pass


def literal_blocks(text):
    """The page's literal blocks (after ``::``), dedented, in order."""
    blocks = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].rstrip().endswith('::'):
            index += 1
            body = []
            while index < len(lines) and (not lines[index].strip() or
                                          lines[index].startswith(' ')):
                body.append(lines[index])
                index += 1
            blocks.append('\n'.join(
                line[4:] for line in body).strip('\n') + '\n')
        else:
            index += 1
    return blocks


def the_block(blocks, marker):
    found = [block for block in blocks if marker in block]
    if len(found) != 1:
        raise Failed('quickstart.rst has %d literal blocks with %r, not one'
                     % (len(found), marker))
    return found[0]


def substitute(text, old, new):
    """text with old, which must be there, replaced by new."""
    if old not in text:
        raise Failed('quickstart.rst no longer has %r' % old)
    return text.replace(old, new)


def run(args, **kwargs):
    print('quickstart: $ %s' % ' '.join(args))
    sys.stdout.flush()
    return subprocess.check_call(args, **kwargs)


def interpreter(version):
    """The python of version, and the environment to run the venv in.

    The venv's pip runs without tox's PYTHONWARNINGS, as an operator
    runs it.
    """
    env = dict(os.environ)
    env.pop('PYTHONWARNINGS', None)
    versions = os.path.expanduser('~/.pyenv/versions')
    if os.path.isdir(versions):
        for name in sorted(os.listdir(versions)):
            if name == version or name.startswith(version + '.'):
                return os.path.join(versions, name, 'bin',
                                    'python' + version), env
    found = shutil.which('python' + version)
    if found is None:
        raise Failed('no python%s: the quick start runs on it' % version)
    return found, env


def check_line(line, version, glance, constraints, cluster, work):
    print('quickstart: %s on Python %s (%s)' % (line, version, glance))
    page = open(PAGE).read()
    blocks = literal_blocks(page)
    venv = os.path.join(work, 'glance-venv-' + line)
    python, env = interpreter(version)
    run([python, '-m', 'venv', venv], env=env)
    run([os.path.join(venv, 'bin', 'pip'), 'install', '-q', '-c',
         os.path.join(REFERENCE, constraints), glance], env=env)
    install = the_block(blocks, 'pip wheel')
    install = substitute(install, EXAMPLE_VENV, venv)
    # A clone of this checkout, under the name the URL gives.
    source = os.path.join(work, 'source-' + line)
    os.mkdir(source)
    os.symlink(TOPDIR, os.path.join(source, os.path.basename(
        EXAMPLE_CLONE)))
    install = substitute(install, EXAMPLE_CLONE, os.path.join(
        source, os.path.basename(EXAMPLE_CLONE)))
    where = os.path.join(work, line)
    os.mkdir(where)
    run(['bash', '-euo', 'pipefail', '-c', install], cwd=where, env=env)
    conf = the_block(blocks, 'enabled_backends')
    nodes = cluster.nodes
    conf = substitute(conf, 'sheepdog_store_address = 10.0.0.11\n',
                      'sheepdog_store_address = %s\n' % cluster.address)
    conf = substitute(conf, 'sheepdog_store_port = 7000\n',
                      'sheepdog_store_port = %d\n' % nodes[0].port)
    conf = substitute(conf, '10.0.0.12:7000,10.0.0.13:7000', ','.join(
        '%s:%d' % (cluster.address, node.port) for node in nodes[1:]))
    conf = substitute(conf, '/var/lib/glance/',
                      os.path.join(work, 'var-lib-glance-%s/' % line))
    path = os.path.join(work, 'glance-api-%s.conf' % line)
    with open(path, 'w') as out:
        out.write(conf)
    probe = subprocess.run(
        [os.path.join(venv, 'bin', 'python'), '-c', PROBE, path],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, env=env)
    print(probe.stdout)
    if probe.returncode:
        raise Failed('%s: the probe failed (exit %d)'
                     % (line, probe.returncode))
    prefix = 'sheepdog://%s:%d:' % (cluster.address, nodes[0].port)
    expected = [
        'Sheepdog cluster at %s:%d is running'
        % (cluster.address, nodes[0].port),
        'fastsheep store fastsheep: native client (sheep\'s protocol) at '
        '%s:%d' % (cluster.address, nodes[0].port),
        'READ BACK 67108864 bytes, same',
    ]
    for text in expected:
        if text not in probe.stdout:
            raise Failed('%s: the probe did not say %r' % (line, text))
    image = re.search(r'^IMAGE (\S+)$', probe.stdout, re.M).group(1)
    if not re.search(r'^STORED %s%s\S* 67108864 ' % (re.escape(prefix),
                                                     re.escape(image)),
                     probe.stdout, re.M):
        raise Failed('%s: the location does not start with %s%s'
                     % (line, prefix, image))
    print('quickstart: %s on Python %s: OK' % (line, version))


def main():
    if not sheepdog.available():
        if os.environ.get('FASTPATH_REQUIRE_REAL_SHEEPDOG'):
            print('quickstart: %s' % sheepdog.SKIP_REASON, file=sys.stderr)
            return 1
        print('quickstart: NOT CHECKED: %s' % sheepdog.SKIP_REASON,
              file=sys.stderr)
        sheepdog.record_skip('the quick start')
        return 0
    work = tempfile.mkdtemp(prefix='quickstart-')
    failures = []
    try:
        with sheepdog.SheepdogCluster(3, 2) as cluster:
            for line in LINES:
                try:
                    check_line(*line, cluster=cluster, work=work)
                except (Failed, subprocess.CalledProcessError) as exc:
                    print('quickstart: %s FAILED: %s' % (line[0], exc))
                    failures.append(line[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print('quickstart: failed on %s' % ', '.join(failures))
        return 1
    print('quickstart: the page works as written on %s'
          % ', '.join('%s (Python %s)' % line[:2] for line in LINES))
    return 0


if __name__ == '__main__':
    sys.exit(main())
