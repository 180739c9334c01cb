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
(tools/check-config-samples.py).

The contributor pages' tables are checked cell by cell: the env table of
doc/source/contributor/tox-envs.rst against tox.ini (read with
configparser, factor conditions resolved as tox does), and the sheepdog
releases of doc/source/contributor/release-lines.rst against the
harness's ``RELEASES`` and the real conformance classes (read with ast).

The option reference is generated: a page shows every namespace of the
project's ``oslo.config.opts`` entry points with oslo_config.sphinxext's
``.. show-options::``, and no page keeps a hand-written list of the
store's options (definition-list terms that are option names).

The pages describe the default client, ``native``: a sentence that says
the driver, the store, downloads or uploads run, stream, read or write
``dog vdi read``/``dog vdi write`` (``DOG_AS_DEFAULT``) must say it is
the ``dog`` client's way (``DOG_QUALIFIED``) or stand in a section whose
title, or a parent's, names ``dog``.

Nothing is imported or started, so this
runs in ``tox -e pep8`` and, with the harness's tests, in the integration
env: ``python -m testtools.run fastpath_integration.tests.test_docs``.
"""

import ast
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


# A sentence that names dog's transfers as what the driver does.
DOG_AS_DEFAULT = re.compile(
    r'\b(?i:driver|store|downloads?|uploads?)\b[^.;:]{0,60}?'
    r'(?<!vdi )\b(?:streams?|runs?|reads?|writes?|uses?)\b[^.;:]{0,40}?'
    r'``dog vdi (?:read|write)\b')
# What says that it is the dog client's way, not the default's.
DOG_QUALIFIED = re.compile(
    r'``dog`` (?:client|reader|path)|\bdog client\b|client = dog\b|'
    r'reader = dog\b|[Ww]ith ``dog``')
HEADING_UNDERLINE = re.compile(r'^([=\-~^"\'`#*+])\1{3,}\s*$')
SENTENCE_END = re.compile(r'(?<=[.!?])\s+(?=[A-Z`(*])')
# A definition-list term that is one of the store's options, as the
# hand-written option list had them: ``sheepdog_store_port`` (default ...
OPTION_TERM = re.compile(r'^``(sheepdog_store_[a-z0-9_]+)``(?: \(.*\))?\s*$')
SHOW_OPTIONS = re.compile(r'^\.\. show-options::\s*$')
ENTRY_POINT_NAMESPACE = re.compile(r'^\s+([\w.]+)\s*=\s*[\w.]+:\w+\s*$')


def sections(text):
    """(titles of the section and its parents, paragraph) of a page.

    A title is a line underlined (and maybe overlined) with one
    punctuation character repeated; levels follow the order in which
    the underline characters first appear, as in docutils.
    """
    lines = text.splitlines()
    levels = []
    stack = []
    paragraph = []
    found = []
    index = 0
    while index < len(lines):
        line = lines[index]
        underline = (lines[index + 1] if index + 1 < len(lines) else '')
        mark = HEADING_UNDERLINE.match(underline)
        if (line.strip() and mark and not HEADING_UNDERLINE.match(line)
                and not line.startswith(' ')):
            if paragraph:
                found.append((tuple(stack), ' '.join(paragraph)))
                paragraph = []
            char = mark.group(1)
            if char not in levels:
                levels.append(char)
            level = levels.index(char)
            stack = stack[:level] + [line.strip()]
            index += 2
            continue
        if HEADING_UNDERLINE.match(line):
            index += 1  # an overline
            continue
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            found.append((tuple(stack), ' '.join(paragraph)))
            paragraph = []
        index += 1
    if paragraph:
        found.append((tuple(stack), ' '.join(paragraph)))
    return found


def dog_as_default(text):
    """The sentences of a page that name dog's transfers as the default."""
    found = []
    for titles, paragraph in sections(text):
        if any(re.search(r'\bdog\b', title) for title in titles):
            continue
        for sentence in SENTENCE_END.split(paragraph):
            if (DOG_AS_DEFAULT.search(sentence) and
                    not DOG_QUALIFIED.search(sentence)):
                found.append(sentence)
    return found


def hand_written_options(text):
    """The store options a page lists as definition-list terms.

    A list is two terms or more: patches/README.rst describes the one
    option its patch adds to the in-tree driver.
    """
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines[:-1]):
        term = OPTION_TERM.match(line)
        if term and lines[index + 1].startswith('  ') and \
                lines[index + 1].strip():
            found.append(term.group(1))
    return found if len(found) > 1 else []


def shown_namespaces(text):
    """The namespaces a page's ``.. show-options::`` directives show."""
    found = []
    inside = False
    for line in text.splitlines():
        if SHOW_OPTIONS.match(line):
            inside = True
        elif inside and line.strip() and not line[0].isspace():
            inside = False
        elif inside and line.strip() and not line.strip().startswith(':'):
            found.append(line.strip())
    return found


def registered_namespaces(topdir):
    """The namespaces of setup.cfg's ``oslo.config.opts`` entry points."""
    parser = configparser.RawConfigParser()
    parser.read(os.path.join(topdir, 'setup.cfg'))
    found = []
    for line in parser.get('entry_points', 'oslo.config.opts').splitlines():
        match = ENTRY_POINT_NAMESPACE.match(' ' + line)
        if match:
            found.append(match.group(1))
    return found


# tox.ini's factor-conditional lines: ``queens: glance_store==0.23.0``,
# ``yoga-!py39: python3.8``.
FACTOR_LINE = re.compile(r'^([A-Za-z0-9.!,-]+):\s+(.*)$')
RUN_TESTS = re.compile(r'run-tests\.sh\s+(?:"([a-z_= ]+)"|([a-z]+))')
TOX_SCRIPT = re.compile(r'\{toxinidir\}/(tools/[\w.-]+\.sh)')
PIN = re.compile(r'^eventlet===(\S+)\s*$', re.MULTILINE)


def factor_applies(condition, env):
    """Whether a tox factor condition (``a-!b,c``) selects env."""
    factors = set(env.split('-'))
    for alternative in condition.split(','):
        if all((part[1:] not in factors) if part.startswith('!')
               else (part in factors)
               for part in alternative.split('-')):
            return True
    return False


def tox_parser(path):
    parser = configparser.RawConfigParser(strict=False)
    parser.read(path)
    return parser


def tox_setting(parser, env, key):
    """The lines of env's setting key that apply to env, factors resolved.

    Looked up in the ``[testenv:...]`` section that defines env, else in
    ``[testenv]``, as tox does (no ``{[section]key}`` substitution).
    """
    sections = [section for section in parser.sections()
                if section.startswith('testenv:') and
                env in expand(section[len('testenv:'):])]
    for section in sections + ['testenv']:
        if parser.has_option(section, key):
            break
    else:
        return []
    lines = []
    for line in parser.get(section, key).splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        conditional = FACTOR_LINE.match(line)
        if conditional:
            if not factor_applies(conditional.group(1), env):
                continue
            line = conditional.group(2)
        lines.append(line)
    return lines


def tox_envlist(parser):
    envs = []
    for item in split_top_level(parser.get('tox', 'envlist')):
        envs.extend(expand(item))
    return envs


def env_row(parser, topdir, env):
    """What tox-envs.rst's table says of env, computed from tox.ini."""
    row = {'env': env, 'envlist': 'yes' if env in tox_envlist(parser)
           else 'no'}
    row['basepython'] = (tox_setting(parser, env, 'basepython') or
                         ['none'])[0]
    row['PYENV_VERSION'] = 'none'
    for line in tox_setting(parser, env, 'setenv'):
        if line.startswith('PYENV_VERSION='):
            row['PYENV_VERSION'] = line.split('=', 1)[1]
    row['constraints'] = 'none'
    row['eventlet'] = 'newest'
    row['glance_store'] = row['ceilometer'] = 'none'
    for line in tox_setting(parser, env, 'deps'):
        if line.startswith('-c{toxinidir}/'):
            row['constraints'] = line[len('-c{toxinidir}/'):]
            with io.open(os.path.join(topdir, row['constraints']),
                         encoding='utf-8') as constraints:
                pins = PIN.findall(constraints.read())
            if pins:
                row['eventlet'] = pins[0]
        for project in ('glance_store', 'ceilometer'):
            if re.match(re.escape(project) + r'(\[|==|$)', line):
                row[project] = line
    commands = ' '.join(tox_setting(parser, env, 'commands')) + ' '
    suites = RUN_TESTS.search(commands)
    script = TOX_SCRIPT.search(commands)
    row['suites'] = (' '.join((suites.group(1) or suites.group(2)).split())
                     if suites else script.group(1) if script else 'none')
    return row


def list_tables(text):
    """Every ``.. list-table::`` of an rST text: a list of rows of cells.

    A cell is its text with ``literal`` quotes removed; a cell of more
    than one line is joined with spaces.
    """
    tables = []
    for block in re.split(r'^\.\. list-table::.*$', text,
                          flags=re.MULTILINE)[1:]:
        rows = []
        for line in block.splitlines():
            if not line.strip() or line.strip().startswith(':'):
                continue  # blank lines and the directive's options
            if not line.startswith(' '):
                break
            stripped = line.strip()
            if stripped.startswith('* - '):
                rows.append([stripped[4:]])
            elif stripped.startswith('- ') and rows:
                rows[-1].append(stripped[2:])
            elif rows:
                rows[-1][-1] += ' ' + stripped
        tables.append([[cell.replace('``', '').strip() for cell in row]
                       for row in rows])
    return tables


def table_dicts(table):
    """The rows of a table with a header row, as dicts by header."""
    header = table[0]
    return [dict(zip(header, row)) for row in table[1:]]


def harness_releases(topdir):
    """The harness's sheepdog RELEASES, read with ast (nothing imported)."""
    path = os.path.join(topdir, 'fastpath_integration', 'harness',
                        'sheepdog.py')
    with io.open(path, encoding='utf-8') as source:
        tree = ast.parse(source.read())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and
                [getattr(t, 'id', None) for t in node.targets] ==
                ['RELEASES']):
            return ast.literal_eval(node.value)
    raise AssertionError('no RELEASES in %s' % path)


def release_classes(path):
    """{release: class name} of the classes that set RELEASE in a module."""
    with io.open(path, encoding='utf-8') as source:
        tree = ast.parse(source.read())
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if (isinstance(statement, ast.Assign) and
                    [getattr(t, 'id', None) for t in statement.targets] ==
                    ['RELEASE']):
                release = ast.literal_eval(statement.value)
                if release is not None:
                    found[release] = node.name
    return found


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


class DocsDescribeTheDefaultTest(testtools.TestCase):
    """The pages describe the driver that ships: native, and generated.

    ``native`` has been the default client since the last release; a
    page that says downloads stream ``dog vdi read`` sends an operator
    to install ``dog`` and size for processes that are not there. The
    option reference is generated from opts.py, so it cannot drift from
    the code as the hand-written list did.
    """

    def read(self, path):
        with io.open(path, encoding='utf-8') as source:
            return source.read()

    def test_the_rules_find_what_is_wrong(self):
        page = ('Title\n=====\n\nA driver that streams ``dog vdi read``\n'
                'output. With the ``dog`` client, downloads run ``dog vdi\n'
                'read``. Uploads write each chunk with its own ``dog vdi\n'
                'write NAME``.\n\nThe ``dog`` client\n-----------------\n\n'
                'Downloads run one ``dog vdi read`` per transfer.\n\n'
                'Sub\n~~~\n\nUploads run ``dog vdi write``.\n\n'
                'Other\n-----\n\nA plain ``dog vdi read | dd`` ran.\n'
                'An upload covers ``dog vdi create`` + ``dog vdi write``,\n'
                'not the ``dog vdi read`` that checks it.\n')
        self.assertEqual(
            ['A driver that streams ``dog vdi read`` output.',
             'Uploads write each chunk with its own ``dog vdi write '
             'NAME``.'], dog_as_default(page))
        self.assertEqual(
            ['sheepdog_store_port', 'sheepdog_store_client'],
            hand_written_options('``sheepdog_store_port`` (default '
                                 '``7000``)\n  Port.\n\n'
                                 '``sheepdog_store_client``\n  How.\n\n'
                                 '``sheepdog_store_client = dog``\n'))
        self.assertEqual([], hand_written_options(
            '``sheepdog_store_read_size`` (bytes)\n  The one option.\n'))
        self.assertEqual(['a', 'b.c'], shown_namespaces(
            'x\n\n.. show-options::\n   :split-namespaces:\n\n'
            '   a\n   b.c\n\nText\n'))

    def test_pages_do_not_name_dog_as_the_default(self):
        problems = []
        for path in pages(TOPDIR):
            for sentence in dog_as_default(self.read(path)):
                problems.append('%s: %s' % (os.path.relpath(path, TOPDIR),
                                            sentence))
        self.assertEqual([], problems)

    def test_no_hand_written_option_list(self):
        problems = []
        for path in pages(TOPDIR):
            for name in hand_written_options(self.read(path)):
                problems.append('%s: %s' % (os.path.relpath(path, TOPDIR),
                                            name))
        self.assertEqual([], problems)

    def test_the_option_reference_is_generated(self):
        # The store's options, from its namespace; the .backend and
        # .backend_defaults namespaces list the same options in other
        # groups, for the samples. ceilometer_metriccache's options are
        # described on doc/source/metriccache.rst.
        namespaces = registered_namespaces(TOPDIR)
        self.assertIn('glance_store_fastsheep', namespaces)
        shown = []
        for path in pages(TOPDIR):
            shown += shown_namespaces(self.read(path))
        self.assertIn('glance_store_fastsheep', shown)
        self.assertEqual(set(), set(shown) - set(namespaces))
        with io.open(os.path.join(TOPDIR, 'doc', 'source', 'conf.py'),
                     encoding='utf-8') as conf:
            self.assertIn("'oslo_config.sphinxext'", conf.read())


class ContributorPagesTest(testtools.TestCase):
    """The contributor pages' tables say what tox.ini and the harness do.

    doc/source/contributor/tox-envs.rst's first table: every row is what
    tox.ini gives that env (interpreter, pyenv version, constraints file
    and its eventlet pin, glance_store and ceilometer requirements, the
    suites it runs, whether it is in the envlist), and every ``line-*``
    env has a row. doc/source/contributor/release-lines.rst's sheepdog
    table: the harness's RELEASES, each with its archive and the real
    conformance class that runs on it, and a row of the support matrix's
    sheepdog table.
    """

    def setUp(self):
        super(ContributorPagesTest, self).setUp()
        self.parser = tox_parser(os.path.join(TOPDIR, 'tox.ini'))
        self.contributor = os.path.join(TOPDIR, 'doc', 'source',
                                        'contributor')

    def table(self, page, first_header):
        with io.open(os.path.join(self.contributor, page),
                     encoding='utf-8') as source:
            tables = list_tables(source.read())
        found = [table for table in tables
                 if table and table[0] and table[0][0] == first_header]
        self.assertEqual(1, len(found), '%s: one table whose first column '
                         'is %r' % (page, first_header))
        return table_dicts(found[0])

    def test_the_parsers_read_tox_ini(self):
        # A resolver that found nothing would agree with an empty table.
        queens = env_row(self.parser, TOPDIR, 'line-queens')
        self.assertEqual('python2.7', queens['basepython'])
        self.assertEqual('tools/constraints/queens.txt',
                         queens['constraints'])
        self.assertEqual('unit functional', queens['suites'])
        # The negated factor: line-yoga-py39 is not line-yoga's 3.8.
        self.assertTrue(factor_applies('yoga-!py39', 'line-yoga'))
        self.assertFalse(factor_applies('yoga-!py39', 'line-yoga-py39'))
        self.assertTrue(factor_applies('a,yoga', 'line-yoga-py39'))
        self.assertEqual([[['a', 'b c'], ['d', 'e']]], list_tables(
            '.. list-table::\n   :header-rows: 1\n\n   * - ``a``\n'
            '     - b\n       c\n   * - d\n     - e\n\nText\n'))

    def test_env_table_is_what_tox_ini_says(self):
        rows = self.table('tox-envs.rst', 'env')
        self.assertIn('line-queens', [row['env'] for row in rows])
        problems = []
        for row in rows:
            actual = env_row(self.parser, TOPDIR, row['env'])
            for column in sorted(row):
                if row[column] != actual[column]:
                    problems.append('%s %s: the page says %r, tox.ini %r' % (
                        row['env'], column, row[column], actual[column]))
        self.assertEqual([], problems)

    def test_env_table_has_every_line_env(self):
        documented = set(row['env'] for row in
                         self.table('tox-envs.rst', 'env'))
        lines = set(env for env in tox_envs(os.path.join(TOPDIR, 'tox.ini'))
                    if env.startswith('line-'))
        self.assertTrue(lines)
        self.assertEqual(set(), lines - documented)

    def test_sheepdog_releases_are_the_harness_releases(self):
        rows = self.table('release-lines.rst', 'release')
        releases = harness_releases(TOPDIR)
        classes = release_classes(os.path.join(
            TOPDIR, 'glance_store_fastsheep', 'tests', 'real',
            'test_native_client.py'))
        self.assertIn('1.0.1', releases)
        self.assertEqual(sorted(releases),
                         sorted(row['release'] for row in rows))
        for row in rows:
            self.assertEqual(releases[row['release']], row['archive'])
            self.assertEqual(classes.get(row['release']),
                             row['conformance class'])
        # The support matrix has a row for each (``0.9.5``, ``master
        # (1.0.2-dev-...)``).
        with io.open(os.path.join(TOPDIR, 'doc', 'source',
                                  'support-matrix.rst'),
                     encoding='utf-8') as source:
            matrix = [table for table in list_tables(source.read())
                      if table[0][0] == 'sheepdog']
        self.assertEqual(1, len(matrix))
        listed = set(row[0].split()[0] for row in matrix[0][1:])
        self.assertEqual(set(), set(releases) - listed)
