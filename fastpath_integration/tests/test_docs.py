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
"""The docs name only tox envs and options that exist.

A page that tells an operator to run ``tox -e line-rocky`` or to set
``sheepdog_store_read_ahead`` sends them to something that is not there;
so does a skip reason naming an env that no longer exists. The pages are
README.rst, patches/README.rst, devstack/README.rst when there is one,
doc/source/*.rst and doc/source/*/*.rst (the contributor pages); skip
reasons are the ``tox -e`` references in the project's Python files; the
Zuul jobs are ``.zuul.yaml``'s ``tox_envlist``.

How a page names an env, so that this check is exact, not fuzzy:

* ``tox -e NAME`` (or ``tox -e NAME1,NAME2``), in prose or in a command
  block: every NAME must be an env of tox.ini (its envlist or a
  ``[testenv:...]`` section, factor braces expanded), or a ``pyXY`` env,
  which tox 4 makes from ``[testenv]`` on demand. A NAME written in
  capitals (``tox -e line-LINE``) is a placeholder; one with ``*`` is a
  pattern that must match at least one env.
* ``line-NAME`` anywhere on a page (``line-queens``, ``line-*``): the
  release-line envs, the same rules.
* ``.tox/NAME/`` paths (``.tox/py3/bin/oslo-config-generator``): NAME
  must be an env.

How a page names an option:

* ``sheepdog_store_NAME`` anywhere: an option of the fastsheep store.
* ``[metriccache] NAME``, and ``NAME = ...`` lines under a
  ``[metriccache]`` line of a config block: a ``[metriccache]`` option.

A name in capitals (``[metriccache] NAME``, ``sheepdog_store_NAME``) is a
placeholder.

The registered options are read from the generated samples in ``etc/``
(every ``[group]`` and ``#name =`` line, and the deprecated names
oslo.config still reads, ``# Deprecated group/name`` lines), which
``tox -e pep8`` keeps equal to what oslo-config-generator writes from
the code
(tools/check-config-samples.py). Nothing is imported or started, so this
runs in ``tox -e pep8`` and, with the harness's tests, in the integration
env: ``python -m testtools.run fastpath_integration.tests.test_docs``.
"""

import configparser
import glob
import io
import itertools
import os
import re

import testtools

TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SKIP_DIRS = {'.git', '.tox', '.eggs', '.stestr', 'build', 'dist',
             '__pycache__'}

TOX_E = re.compile(r'\btox\s+-e\s*([^\s`\'")]+)')
LINE_ENV = re.compile(r'(?<![\w./-])(line-[A-Za-z0-9.*_{},-]*[A-Za-z0-9*}])')
TOX_DIR = re.compile(r'(?<![\w.])\.tox/([A-Za-z0-9_][A-Za-z0-9._-]*)/')
STORE_OPTION = re.compile(r'\b(sheepdog_store_[a-z0-9_*]*)')
GROUP_OPTION = re.compile(r'\[(metriccache)\]\s+(?:``)?([A-Za-z_]\w*)')
SECTION_LINE = re.compile(r'^\s*\[([A-Za-z_][\w.-]*)\]\s*$')
OPTION_LINE = re.compile(r'^\s*#?\s*([A-Za-z_]\w*)\s*=')
SAMPLE_OPTION = re.compile(r'^#([A-Za-z_]\w*) =(?: |$)', re.MULTILINE)
# A deprecated name oslo.config still reads for an option of the group.
SAMPLE_DEPRECATED = re.compile(
    r'^# Deprecated group/name - \[[^\]]+\]/([A-Za-z_]\w*)$', re.MULTILINE)
SAMPLE_GROUP = re.compile(r'^\[([^\]]+)\]$', re.MULTILINE)
# The groups whose every option is this project's; [glance_store] is
# glance_store's own, where this project's options are the
# sheepdog_store_ ones.
OWN_GROUPS = ('metriccache',)


def expand(spec):
    """Expand tox's factor braces: ``line-{a,b}`` -> line-a, line-b."""
    parts = re.split(r'\{([^}]*)\}', spec)
    choices = [[part] if index % 2 == 0 else part.split(',')
               for index, part in enumerate(parts)]
    return [''.join(combo) for combo in itertools.product(*choices)]


def split_top_level(text):
    """Split an envlist on the commas that are not inside braces."""
    items, depth, current = [], 0, ''
    for char in text:
        if char == '{':
            depth += 1
        elif char == '}':
            depth -= 1
        if char in ',\n' and depth == 0:
            items.append(current.strip())
            current = ''
        else:
            current += char
    items.append(current.strip())
    return [item for item in items if item]


def tox_envs(path):
    """Every env tox.ini defines: envlist entries and testenv sections."""
    parser = configparser.RawConfigParser(strict=False)
    parser.read(path)
    envs = set()
    for item in split_top_level(parser.get('tox', 'envlist')):
        envs.update(expand(item))
    for section in parser.sections():
        if section.startswith('testenv:'):
            envs.update(expand(section[len('testenv:'):]))
    return envs


def sample_options(topdir):
    """{group: {option names}} from every etc/*.conf.sample."""
    options = {}
    for path in sorted(glob.glob(os.path.join(topdir, 'etc',
                                              '*.conf.sample'))):
        with io.open(path, encoding='utf-8') as sample:
            text = sample.read()
        groups = list(SAMPLE_GROUP.finditer(text))
        for index, group in enumerate(groups):
            end = (groups[index + 1].start() if index + 1 < len(groups)
                   else len(text))
            names = SAMPLE_OPTION.findall(text, group.end(), end)
            names += SAMPLE_DEPRECATED.findall(text, group.end(), end)
            options.setdefault(group.group(1), set()).update(names)
    return options


def pages(topdir):
    found = [os.path.join(topdir, 'README.rst'),
             os.path.join(topdir, 'patches', 'README.rst'),
             os.path.join(topdir, 'devstack', 'README.rst')]
    found += sorted(glob.glob(os.path.join(topdir, 'doc', 'source',
                                           '*.rst')))
    found += sorted(glob.glob(os.path.join(topdir, 'doc', 'source', '*',
                                           '*.rst')))
    return [path for path in found if os.path.exists(path)]


def python_files(topdir):
    for dirpath, dirnames, filenames in os.walk(topdir):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and
                             not d.endswith('.egg-info'))
        for name in sorted(filenames):
            if name.endswith('.py'):
                yield os.path.join(dirpath, name)


def line_of(text, offset):
    return text.count('\n', 0, offset) + 1


def matches(name, known):
    """Whether name, or the pattern name with ``*``, is in known."""
    if '*' not in name:
        return name in known
    pattern = re.compile(re.escape(name).replace(r'\*', '.*') + '$')
    return any(pattern.match(item) for item in known)


def env_problem(name, envs):
    """Why name is not an env, or None if it is one or a placeholder.

    Placeholders: a part in capitals (``NAME``, ``line-LINE``) or a
    format field (``tox -e %s``).
    """
    if '%' in name or any(part.isupper() for part in name.split('-')):
        return None
    if re.match(r'py\d+$', name):
        # tox 4 makes pyXY envs from [testenv] on demand (Zuul's
        # openstack-tox-py311 runs one).
        return None
    if matches(name, envs):
        return None
    if '*' in name:
        return 'no tox env matches %s' % name
    return 'no tox env %s' % name


def env_references(text, with_line_envs=True, with_tox_dirs=True):
    """Sorted (offset, name) of every env a text names, each once."""
    found = set()
    for match in TOX_E.finditer(text):
        for name in match.group(1).rstrip('.,;:').split(','):
            if name:
                found.add((match.start(1), name))
    if with_line_envs:
        for match in LINE_ENV.finditer(text):
            for name in expand(match.group(1)):
                found.add((match.start(1), name))
    if with_tox_dirs:
        for match in TOX_DIR.finditer(text):
            found.add((match.start(1), match.group(1)))
    return sorted(found)


def option_references(text):
    """(offset, group or None, name) of every option a page names.

    A name with ``*`` (``sheepdog_store_read_*``) is a pattern that must
    match at least one option.
    """
    found = {}
    for match in STORE_OPTION.finditer(text):
        name = match.group(1)
        if name != 'sheepdog_store_':
            found[match.start(1)] = (None, name.rstrip('_'))
    for match in GROUP_OPTION.finditer(text):
        found[match.start(2)] = (match.group(1), match.group(2))
    offset = 0
    group = None
    for line in text.splitlines(True):
        section = SECTION_LINE.match(line)
        if section:
            group = section.group(1)
        elif not line.strip():
            group = None
        elif group in OWN_GROUPS:
            option = OPTION_LINE.match(line)
            if option:
                found[offset + option.start(1)] = (group, option.group(1))
        offset += len(line)
    for offset in sorted(found):
        yield (offset,) + found[offset]


class DocsNameWhatExistsTest(testtools.TestCase):

    def setUp(self):
        super(DocsNameWhatExistsTest, self).setUp()
        self.envs = tox_envs(os.path.join(TOPDIR, 'tox.ini'))
        self.options = sample_options(TOPDIR)

    def read(self, path):
        with io.open(path, encoding='utf-8') as source:
            return source.read()

    def where(self, path, text, offset):
        return '%s:%d' % (os.path.relpath(path, TOPDIR),
                          line_of(text, offset))

    def test_the_inputs_are_there(self):
        # A parser that found nothing would pass every page.
        self.assertIn('pep8', self.envs)
        self.assertIn('line-queens', self.envs)
        self.assertIn('sheepdog_store_address',
                      self.options.get('glance_store', ()))
        self.assertIn('memo_size', self.options.get('metriccache', ()))
        # A deprecated name is still read, so a page may name it.
        self.assertIn('sheepdog_store_reader',
                      self.options.get('glance_store', ()))
        self.assertIn(os.path.join(TOPDIR, 'README.rst'), pages(TOPDIR))

    def test_expand(self):
        self.assertEqual(['line-a', 'line-b'], expand('line-{a,b}'))
        self.assertEqual(['py3'], expand('py3'))
        self.assertEqual(['pep8', 'line-{a,b}', 'docs'],
                         split_top_level('pep8,line-{a,b},\ndocs'))

    def test_the_checks_find_what_is_wrong(self):
        page = ('Run ``tox -e py3,nosuch`` and ``line-rocky``; set\n'
                '``sheepdog_store_read_ahead`` and ``[metriccache]\n'
                'memo`` or::\n\n    [metriccache]\n    wildcard = true\n')
        envs = [name for _, name in env_references(page)
                if env_problem(name, self.envs)]
        self.assertEqual(['nosuch', 'line-rocky'], envs)
        options = [(group, name) for _, group, name
                   in option_references(page)]
        self.assertEqual([(None, 'sheepdog_store_read_ahead'),
                          ('metriccache', 'memo'),
                          ('metriccache', 'wildcard')], options)
        for placeholder in ('line-LINE', 'line-*', 'NAME', 'tox -e %s'):
            self.assertIsNone(env_problem(placeholder, self.envs))
        self.assertIsNotNone(env_problem('line-*x', self.envs))

    def test_pages_name_existing_envs(self):
        problems = []
        for path in pages(TOPDIR):
            text = self.read(path)
            for offset, name in env_references(text):
                problem = env_problem(name, self.envs)
                if problem:
                    problems.append('%s: %s' % (
                        self.where(path, text, offset), problem))
        self.assertEqual([], problems)

    def test_zuul_jobs_run_existing_envs(self):
        path = os.path.join(TOPDIR, '.zuul.yaml')
        if not os.path.exists(path):
            self.skipTest('no .zuul.yaml')
        text = self.read(path)
        problems = []
        for match in re.finditer(r'tox_envlist:\s*(\S+)', text):
            for name in match.group(1).split(','):
                problem = env_problem(name, self.envs)
                if problem:
                    problems.append('%s: %s' % (
                        self.where(path, text, match.start(1)), problem))
        self.assertEqual([], problems)

    def test_skip_reasons_name_existing_envs(self):
        problems = []
        for path in python_files(TOPDIR):
            text = self.read(path)
            if path == os.path.abspath(__file__):
                continue
            for offset, name in env_references(text, with_line_envs=False,
                                               with_tox_dirs=False):
                problem = env_problem(name, self.envs)
                if problem:
                    problems.append('%s: %s' % (
                        self.where(path, text, offset), problem))
        self.assertEqual([], problems)

    def test_pages_name_registered_options(self):
        every = set()
        for names in self.options.values():
            every.update(names)
        problems = []
        for path in pages(TOPDIR):
            text = self.read(path)
            for offset, group, name in option_references(text):
                if name.isupper():
                    continue  # a placeholder: [metriccache] NAME
                known = every if group is None else self.options.get(
                    group, set())
                if not matches(name, known):
                    problems.append('%s: no option %s%s' % (
                        self.where(path, text, offset),
                        '[%s] ' % group if group else '', name))
        self.assertEqual([], problems)
