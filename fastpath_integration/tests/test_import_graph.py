"""No import cycle in the project's packages and tools, no private import.

The import graph is read from the source with ``ast``, nothing is
imported: every ``import`` and ``from ... import`` statement counts,
also those inside functions (a lazy import hides a cycle from the
interpreter, not from a reader). Packages are the top-level directories
with an ``__init__.py`` (the bench is ``fastpath_integration.bench``); a
directory of scripts under ``tools/`` is its own namespace, as Python
puts a script's directory first on ``sys.path`` (``python tools/x.py``
may ``import y`` of ``tools/y.py``).

A module uses only the public names of the project's other modules: a
``_private`` one (``from m import _f``, or ``m._f`` where ``m`` is a
project module) is that module's own business, and a second user of it
ties the two together where no reader looks. Tests may look inside the
module they test; nothing else does, with no list of exceptions: what
two modules share is public in a module named for it (the emulator's
``codec``).

The driver's layers are drawn in doc/source/contributor/architecture.rst,
with a table of which module may import which; this test reads that
table from the page and refuses every import of the driver it does not
allow, and every driver module the table does not place (``layer_rules``,
``layer_violations``): the page and the code cannot drift apart.

Runs without any service, in ``tox -e pep8`` as in the integration env:
``python -m testtools.run fastpath_integration.tests.test_import_graph``.
"""

import ast
import os

import fixtures
import testtools

TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# The packages the project ships (setup.cfg): not one private name
# crosses a module boundary in them, tests aside as anywhere else.
SHIPPED = ('glance_store_fastsheep', 'ceilometer_metriccache',
           'sheepdog_emulator')
# The driver whose layers doc/source/contributor/architecture.rst draws.
DRIVER = 'glance_store_fastsheep'
ARCHITECTURE = os.path.join(TOPDIR, 'doc', 'source', 'contributor',
                            'architecture.rst')
SKIP_DIRS = {'.git', '.tox', '.eggs', '.stestr', 'build', 'dist', 'doc',
             'releasenotes', '__pycache__'}


def _walk(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and
                             not d.endswith('.egg-info'))
        yield dirpath, filenames


def collect_modules(topdir):
    """{module id: path}, and each script directory's {name: id}.

    A package module's id is its dotted name; a script's is its path
    relative to ``topdir`` (``tools/ci-report.py``).
    """
    modules = {}
    script_dirs = {}
    packages = sorted(
        d for d in os.listdir(topdir)
        if d not in SKIP_DIRS and
        os.path.isfile(os.path.join(topdir, d, '__init__.py')))
    for package in packages:
        for dirpath, filenames in _walk(os.path.join(topdir, package)):
            if not os.path.isfile(os.path.join(dirpath, '__init__.py')):
                continue
            rel = os.path.relpath(dirpath, topdir).split(os.sep)
            for name in filenames:
                if not name.endswith('.py'):
                    continue
                parts = rel + ([] if name == '__init__.py'
                               else [name[:-3]])
                modules['.'.join(parts)] = os.path.join(dirpath, name)
    tools = os.path.join(topdir, 'tools')
    if os.path.isdir(tools):
        for dirpath, filenames in _walk(tools):
            local = {}
            for name in filenames:
                if name.endswith('.py'):
                    path = os.path.join(dirpath, name)
                    ident = os.path.relpath(path, topdir)
                    modules[ident] = path
                    local[name[:-3]] = ident
            script_dirs[dirpath] = local
    return modules, script_dirs


def _package_of(ident, path):
    if '/' in ident:
        return None
    if os.path.basename(path) == '__init__.py':
        return ident
    return ident.rpartition('.')[0]


def imports_of(ident, path, modules, script_dirs):
    """The project modules ``ident`` imports, by id."""
    with open(path, 'rb') as f:
        tree = ast.parse(f.read(), path)
    local = script_dirs.get(os.path.dirname(path), {})
    package = _package_of(ident, path)

    def resolve(name):
        if name in modules:
            return name
        head = name.split('.')[0]
        if head in local:
            return local[head]
        return None

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                if package is None:
                    continue
                parts = package.split('.')
                parts = parts[:len(parts) - node.level + 1]
                base = '.'.join(parts + ([base] if base else []))
            # ``from pkg import mod`` imports the module pkg.mod when
            # there is one, else a name of pkg.
            names = []
            for alias in node.names:
                full = '%s.%s' % (base, alias.name) if base else alias.name
                names.append(full if full in modules else base)
        else:
            continue
        for name in names:
            target = resolve(name)
            if target is None:
                # ``import a.b.c`` of a project package: its deepest
                # module that exists.
                parts = name.split('.')
                while parts and '.'.join(parts) not in modules:
                    parts.pop()
                target = '.'.join(parts) or None
            # A package naming its own attributes is no cycle.
            if target is not None and target != ident:
                found.add(target)
    return found


def _private(name):
    return name.startswith('_') and not name.endswith('__')


def private_uses(ident, path, modules, script_dirs):
    """``(line, 'module._name')``: others' private names ``ident`` uses.

    Imported (``from m import _f``) or read as an attribute of a module
    bound by an import (``m._f``, ``pkg.m._f``); a name an object of
    another module holds is not seen.
    """
    with open(path, 'rb') as f:
        tree = ast.parse(f.read(), path)
    local = script_dirs.get(os.path.dirname(path), {})
    package = _package_of(ident, path)
    bound, found = {}, []

    def module(name):
        return local.get(name) or (name if name in modules else None)

    def use(node, target, name):
        if target and target != ident and _private(name):
            found.append((node.lineno, '%s.%s' % (target, name)))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split('.')
                for i in range(1, len(parts)):
                    use(node, module('.'.join(parts[:i])), parts[i])
                if alias.asname:
                    bound[alias.asname] = module(alias.name)
                else:
                    bound[parts[0]] = module(parts[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level and package is not None:
                parts = package.split('.')
                parts = parts[:len(parts) - node.level + 1]
                base = '.'.join(parts + ([base] if base else []))
            for alias in node.names:
                use(node, module(base), alias.name)
                full = '%s.%s' % (base, alias.name) if base else alias.name
                bound[alias.asname or alias.name] = module(full)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and bound.get(value.id):
                use(node, module('.'.join([bound[value.id]] + chain)),
                    node.attr)
    return found


def private_imports(topdir):
    """Each project module's private names another module uses.

    ``{(user, 'module._name'): [lines]}``, but for a test module
    ``test_X`` looking inside a module ``X``: the module it tests.
    """
    modules, script_dirs = collect_modules(topdir)
    found = {}
    for ident, path in modules.items():
        tested = ident.rpartition('.')[2][len('test_'):]
        for line, name in private_uses(ident, path, modules, script_dirs):
            module = name.rpartition('.')[0]
            if '.tests.' in ident and module.rpartition('.')[2] == tested:
                continue
            found.setdefault((ident, name), []).append(line)
    return found


def import_graph(topdir):
    modules, script_dirs = collect_modules(topdir)
    return {ident: imports_of(ident, path, modules, script_dirs)
            for ident, path in modules.items()}


def reachable(graph, start):
    """Every module start imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    seen.discard(start)
    return seen


def cycles(graph):
    """Strongly connected components that are cycles (Tarjan)."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    found = []
    counter = [0]

    def visit(node):
        # Iterative: a deep chain must not hit the recursion limit.
        work = [(node, iter(sorted(graph.get(node, ()))))]
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[current] = min(low[current], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[current])
                if low[current] == index[current]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == current:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def layer_rules(text):
    """The "Who may import whom" table of architecture.rst, parsed.

    ``{row: (ranks, allowed)}``: ``ranks`` the row's modules as a list
    of sets, lowest first (``a, b < c``: c may import a and b); the
    names are relative to the driver package. ``allowed`` the rows and
    modules of other rows the row's modules may import.
    """
    section = text.split('Who may import whom', 1)[1]
    table = []
    for line in section.splitlines():
        if line.startswith('   * -'):
            table.append([line[6:].strip()])
        elif line.startswith('     -'):
            table[-1].append(line[6:].strip())
        elif line.startswith('       ') and table:
            table[-1][-1] += ' ' + line.strip()
        elif line.strip() and not line.startswith(' ') and table:
            break
    rules = {}
    for row, modules, allowed in table[1:]:
        ranks = [{name.strip() for name in rank.split(',')}
                 for rank in modules.strip('`').split('<')]
        rules[row] = (ranks, {name.strip() for name in
                              allowed.strip('`').split(',') if name.strip()})
    return rules


def layer_violations(topdir, rules, package):
    """What the layer table refuses in package, sorted.

    ``(importer, imported)`` for each import the table does not allow;
    ``('(no row)', module)`` for a module (not a package's
    ``__init__``, not a test) that no row places; ``('(no module)',
    name)`` for a name of the table that is no module.
    """
    modules, script_dirs = collect_modules(topdir)
    where = {}
    for row, (ranks, _allowed) in rules.items():
        for rank, names in enumerate(ranks):
            for name in names:
                where['%s.%s' % (package, name)] = (row, rank)
    driver = {ident for ident, path in modules.items()
              if ident.startswith(package + '.') and
              '.tests' not in ident[len(package):]}
    packages = {ident for ident in driver
                if os.path.basename(modules[ident]) == '__init__.py'}
    found = [('(no row)', ident) for ident in driver - packages
             if ident not in where]
    found.extend(('(no module)', name) for name in where
                 if name not in driver - packages)
    for row, (_ranks, allowed) in rules.items():
        found.extend(('(no module)', '%s.%s' % (package, name))
                     for name in allowed
                     if name not in rules and
                     '%s.%s' % (package, name) not in where)

    def allows(importer, imported):
        if importer not in where or imported not in where:
            return False
        row, rank = where[importer]
        other_row, other_rank = where[imported]
        if other_row == row:
            return other_rank < rank
        allowed = rules[row][1]
        return (other_row in allowed or
                imported[len(package) + 1:] in allowed)

    for ident in driver:
        for target in imports_of(ident, modules[ident], modules,
                                 script_dirs):
            if target.startswith(package) and not allows(ident, target):
                found.append((ident, target))
    return sorted(found)


class ImportGraphTestCase(testtools.TestCase):

    def tree(self, files):
        """A temporary project of {relative path: text}; its top."""
        top = self.useFixture(fixtures.TempDir()).path
        for name, text in files.items():
            path = os.path.join(top, name)
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path))
            with open(path, 'w') as f:
                f.write(text)
        return top

    def test_no_import_cycle(self):
        graph = import_graph(TOPDIR)
        # The graph covers what it claims to: the harness, the bench and
        # the scripts in tools/.
        self.assertIn('fastpath_integration.harness.stack', graph)
        self.assertIn('fastpath_integration.harness.glance',
                      graph['fastpath_integration.harness.stack'])
        self.assertIn('fastpath_integration.bench.runner',
                      graph['fastpath_integration.bench.cli'])
        self.assertIn('tools/ci-report.py', graph)
        self.assertEqual([], cycles(graph))

    def test_no_private_import(self):
        # Every module of the shipped packages is read.
        modules = collect_modules(TOPDIR)[0]
        for package in SHIPPED:
            self.assertIn(package, modules)
        self.assertIn('sheepdog_emulator.codec', modules)
        self.assertIn('ceilometer_metriccache.index', modules)
        self.assertEqual({}, private_imports(TOPDIR))

    def test_a_private_import_is_found(self):
        """The check can fail: every way of reaching another's _name."""
        top = self.tree({
            'pkg/__init__.py': '',
            'pkg/b.py': '_x = _y = 1\n__all__ = []\n',
            'pkg/a.py': ('from pkg.b import _x\nimport pkg.b as m\n'
                         'import pkg.b\nfrom . import b\n'
                         'print(m._y, pkg.b._y, b._x, m.__all__)\n'),
            'pkg/c.py': '_z = 1\nprint(_z)\n',
            'pkg/tests/__init__.py': '',
            'pkg/tests/test_b.py': 'from pkg import b\nprint(b._x)\n',
            'pkg/tests/test_c.py': 'from pkg import b\nprint(b._x)\n',
            'tools/s.py': 'import t\nprint(t._q)\n',
            'tools/t.py': '_q = 1\n',
        })
        self.assertEqual({
            ('pkg.a', 'pkg.b._x'): [1, 5],
            ('pkg.a', 'pkg.b._y'): [5, 5],
            ('pkg.tests.test_c', 'pkg.b._x'): [2],
            ('tools/s.py', 'tools/t.py._q'): [2],
        }, {use: sorted(lines)
            for use, lines in private_imports(top).items()})

    def test_the_sheepdog_fixture_stands_on_leaves(self):
        """The fixture the plugins' 2.7 tests import: no service harness.

        Its project imports, direct or not, are the ``host`` leaf, which
        imports nothing of the project, and the cluster's processes
        (``sheep_processes``), which import ``host`` alone: processes,
        services and venvs (Python 3 only) stay out of a 2.7 test run.
        """
        graph = import_graph(TOPDIR)
        host = 'fastpath_integration.harness.host'
        sheep = 'fastpath_integration.harness.sheep_processes'
        self.assertEqual(set(), graph[host])
        self.assertEqual({host}, graph[sheep])
        self.assertEqual({host, sheep}, reachable(
            graph, 'fastpath_integration.harness.sheepdog'))
        self.assertIn(host, graph['fastpath_integration.harness.processes'])

    def test_the_driver_keeps_its_drawn_layers(self):
        with open(ARCHITECTURE) as f:
            rules = layer_rules(f.read())
        # The table was read: its rows and the two clients' orders.
        self.assertEqual({'shared', 'native', 'dog', 'entry', 'cmd'},
                         set(rules))
        self.assertEqual({'native.client'}, rules['native'][0][-1])
        self.assertEqual({'dog.client'}, rules['dog'][0][-1])
        # The two clients side by side over the shared layer: neither
        # imports the other, and the store, its settings and options
        # import neither.
        for row in ('native', 'dog', 'entry'):
            self.assertEqual({'shared'}, rules[row][1], row)
        self.assertEqual([], layer_violations(TOPDIR, rules, DRIVER))

    def test_a_layer_violation_is_found(self):
        """The check can fail: each way out of the drawing."""
        page = (
            'Who may import whom\n'
            '===================\n\n'
            '.. list-table::\n'
            '   :header-rows: 1\n\n'
            '   * - row\n'
            '     - modules\n'
            '     - and\n'
            '   * - base\n'
            '     - ``a, b < c, z``\n'
            '     -\n'
            '   * - top\n'
            '     - ``t.low <\n'
            '       t.high``\n'
            '     - ``base, gone``\n'
            '   * - side\n'
            '     - ``s``\n'
            '     - ``a``\n\n'
            'Prose after the table.\n')
        rules = layer_rules(page)
        self.assertEqual(([{'t.low'}, {'t.high'}], {'base', 'gone'}),
                         rules['top'])
        top = self.tree({
            'pkg/__init__.py': '',
            'pkg/a.py': 'from pkg import b\n',  # same rank
            'pkg/b.py': '',
            'pkg/c.py': 'from pkg import a, b\n',  # lower ranks: allowed
            'pkg/s.py': 'from pkg import a\nfrom pkg import c\n',
            'pkg/t/__init__.py': '',
            'pkg/t/low.py': 'from pkg.t import high\n',  # upward
            'pkg/t/high.py': 'from pkg.t import low\nimport pkg.c\n',
            'pkg/u.py': '',  # placed by no row
            'pkg/tests/__init__.py': '',
            'pkg/tests/test_a.py': 'from pkg import s\n',
        })
        self.assertEqual([
            ('(no module)', 'pkg.gone'),
            ('(no module)', 'pkg.z'),
            ('(no row)', 'pkg.u'),
            ('pkg.a', 'pkg.b'),
            ('pkg.s', 'pkg.c'),
            ('pkg.t.low', 'pkg.t.high'),
        ], layer_violations(top, rules, 'pkg'))

    def test_a_cycle_is_found(self):
        """The check can fail: two modules importing each other."""
        top = self.tree({
            'pkg/__init__.py': '',
            'pkg/a.py': 'from pkg import b\n',
            'pkg/b.py': 'def f():\n    from . import a\n',
            'pkg/c.py': 'import pkg.a\n',
            'tools/scripts/x.py': 'import y\n',
            'tools/scripts/y.py': 'import x\nimport pkg.c\n',
        })
        graph = import_graph(top)
        self.assertEqual({'pkg.a'}, graph['pkg.c'])
        self.assertEqual([['pkg.a', 'pkg.b'],
                          ['tools/scripts/x.py', 'tools/scripts/y.py']],
                         cycles(graph))
