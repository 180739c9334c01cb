#!/usr/bin/env python3
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
"""Fail when a checked-in ``etc/`` sample is not what the code generates.

Every ``etc/oslo-config-generator/*.conf`` is run through
oslo-config-generator into a temporary directory and the result compared
with its ``output_file``: a new option, a changed help text or default, or
a new generator file is covered without touching this script. The
options come from the ``oslo.config.opts`` entry points of the installed
project, so run it where the checkout is installed (``tox -e pep8``
installs it in development mode).

A sample that only one environment can produce (Pike's, which
glance_store 0.22.0 and oslo.config 4.11.2 shape) says so with a comment
line ``# tox env: NAME`` in its generator file; it is checked only when
``TOX_ENV_NAME`` is NAME (``tox -e py27`` checks the Pike sample in
``glance_store_fastsheep/tests/unit/test_opts.py``) and listed as skipped
elsewhere. A generator file without that line belongs to this check.

Usage: ``python tools/check-config-samples.py`` from anywhere; exit 1 with
a unified diff and the command that regenerates each stale sample.
"""

import difflib
import glob
import io
import os
import re
import sys
import tempfile

from oslo_config import cfg
from oslo_config import generator

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATOR_DIR = os.path.join('etc', 'oslo-config-generator')
ENV_LINE = re.compile(r'^#\s*tox env:\s*(\S+)\s*$', re.MULTILINE)


def generator_conf(args):
    conf = cfg.ConfigOpts()
    generator.register_cli_opts(conf)
    conf(args)
    return conf


def declared_env(path):
    """The tox env named by ``# tox env: NAME`` in path, or None."""
    with io.open(path, encoding='utf-8') as config_file:
        found = ENV_LINE.search(config_file.read())
    return found.group(1) if found else None


def check(relpath, tmpdir):
    """Return a list of problem lines for one generator file."""
    conf = generator_conf(['--config-file', relpath])
    sample = conf.output_file
    if not sample:
        return ['%s names no output_file' % relpath]
    output = os.path.join(tmpdir, os.path.basename(sample))
    generator.generate(generator_conf(['--config-file', relpath,
                                       '--output-file', output]))
    with io.open(output, encoding='utf-8') as generated:
        generated = generated.read()
    if not os.path.exists(sample):
        return ['%s does not exist; generate it: oslo-config-generator '
                '--config-file %s' % (sample, relpath)]
    with io.open(sample, encoding='utf-8') as kept:
        kept = kept.read()
    if generated == kept:
        return []
    diff = difflib.unified_diff(kept.splitlines(True),
                                generated.splitlines(True),
                                sample, 'generated now')
    return (['%s is stale; regenerate it from the checkout: '
             'oslo-config-generator --config-file %s' % (sample, relpath)] +
            [''.join(diff)])


def main():
    os.chdir(TOP)
    env = os.environ.get('TOX_ENV_NAME')
    problems = []
    checked = 0
    paths = sorted(glob.glob(os.path.join(GENERATOR_DIR, '*.conf')))
    if not paths:
        problems.append('no generator file in %s' % GENERATOR_DIR)
    tmpdir = tempfile.mkdtemp(prefix='config-samples-')
    try:
        for relpath in paths:
            wanted = declared_env(relpath)
            if wanted is not None and wanted != env:
                print('skipped %s: its sample is checked in tox -e %s'
                      % (relpath, wanted))
                continue
            problems.extend(check(relpath, tmpdir))
            checked += 1
    finally:
        for name in os.listdir(tmpdir):
            os.unlink(os.path.join(tmpdir, name))
        os.rmdir(tmpdir)
    if problems:
        sys.stderr.write('\n'.join(problems) + '\n')
        return 1
    print('%d config sample(s) current' % checked)
    return 0


if __name__ == '__main__':
    sys.exit(main())
