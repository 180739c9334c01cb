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
"""Metric name and event type -> resource definition, without a scan.

Upstream answers "which definition handles this metric?" by calling
fnmatch on every entry of every definition, in file order, for every
sample. The answer only depends on the name and on the file, so it is
computed once:

* names listed literally in the file go into a dict at load time, already
  resolved against the patterns that come before them (a pattern in an
  earlier definition wins over a literal in a later one, as in the loop);
* any other name is checked against the patterns only, in file order
  (a literal can never match it), and the answer, a miss included, is kept
  in a bounded LRU map.

Patterns are compiled here, once, with the same translation fnmatch uses,
so no global regex cache of fnmatch or re is involved. A pattern Python
2.7's re rejects (a reversed range such as ``[z-a]``) matches nothing on
every interpreter and is logged once, with its definition.
"""

import fnmatch
import os
import re
import warnings

from oslo_log import log
import six

from ceilometer_metriccache import memo

LOG = log.getLogger(__name__)

EVENT_KEYS = (('event_create', 'create'),
              ('event_delete', 'delete'),
              ('event_update', 'update'))

# Characters that make fnmatch treat an entry as a pattern. An entry
# without them matches only itself (os.path.normcase is the identity on
# POSIX, where ceilometer runs).
_WILDCARD = re.compile(r'[*?[]')


def is_pattern(entry):
    return _WILDCARD.search(entry) is not None


def _bracket_sets(pattern):
    """Each ``[...]`` set of a pattern as Python 2.7's fnmatch writes it.

    Same scan as fnmatch.translate: an unclosed ``[`` is a literal, a
    leading ``!`` negates, a ``]`` right after ``[`` or ``[!`` is a member.
    """
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c != '[':
            continue
        j = i
        if j < n and pattern[j] == '!':
            j += 1
        if j < n and pattern[j] == ']':
            j += 1
        while j < n and pattern[j] != ']':
            j += 1
        if j >= n:
            continue
        stuff = pattern[i:j].replace('\\', '\\\\')
        i = j + 1
        if stuff[0] == '!':
            stuff = '^' + stuff[1:]
        elif stuff[0] == '^':
            stuff = '\\' + stuff
        yield '[%s]' % stuff


def pattern_problem(pattern):
    """Why re rejects this fnmatch pattern on Python 2.7, or None.

    Python 2.7's fnmatch raises on a set with a reversed range such as
    ``[z-a]``, while 3.x quietly drops the range (``[z-a]`` then matches
    nothing, ``[!z-a]`` everything). Checking every set the 2.7 way, on
    whichever interpreter runs, gives one verdict on both.
    """
    try:
        with warnings.catch_warnings():
            # 3.7+ warns about sets such as [[; translate() warns again.
            warnings.simplefilter('ignore', FutureWarning)
            for bracket in _bracket_sets(pattern):
                re.compile(bracket)
        re.compile(fnmatch.translate(os.path.normcase(pattern)))
    except re.error as exc:
        return str(exc)
    return None


def _matches_nothing(name):
    return False


def compile_pattern(pattern):
    """A matcher equal to ``fnmatch.fnmatch(name, pattern)``.

    A pattern ``pattern_problem`` rejects matches nothing, on every
    interpreter, instead of raising while the index is built.
    """
    if pattern_problem(pattern) is not None:
        return _matches_nothing
    match = re.compile(fnmatch.translate(os.path.normcase(pattern))).match
    normcase = os.path.normcase

    def matches(name):
        return match(normcase(name)) is not None
    return matches


def _as_list(value):
    # Upstream's _ensure_list: one string stands for a list of one.
    return value if isinstance(value, list) else [value]


def metric_entries(rd):
    """The metric entries of a definition, in file order."""
    metrics = rd.cfg.get('metrics')
    if isinstance(metrics, dict):
        return list(metrics)
    return list(metrics or [])


def event_entries(rd):
    """(event type entry, operation) of a definition, in match order."""
    entries = []
    for key, operation in EVENT_KEYS:
        for entry in _as_list(rd.cfg.get(key, [])):
            entries.append((entry, operation))
    return entries


def definition_problem(rd):
    """Why the index cannot use this definition, or None.

    Upstream loads such a definition and then fails with a TypeError in
    the middle of a batch when a lookup reaches it; here it is rejected
    at load time, with the same log-and-skip treatment upstream gives to
    definitions with a missing or mistyped mandatory field.
    """
    for entry in metric_entries(rd):
        if not isinstance(entry, six.string_types):
            return 'metric entry %r is not a string' % (entry,)
    for entry, operation in event_entries(rd):
        if not isinstance(entry, six.string_types):
            return 'event_%s entry %r is not a string' % (operation, entry)
    return None


def usable_definitions(definitions):
    """Definitions in file order, without those the index cannot use."""
    usable = []
    for rd in definitions:
        problem = definition_problem(rd)
        if problem is None:
            usable.append(rd)
        else:
            LOG.error('Skipping gnocchi resource definition %(type)s: '
                      '%(problem)s', {'type': rd.cfg.get('resource_type'),
                                      'problem': problem})
    return usable


class _Table(dict):
    """Literal keys resolved at load, other keys scanned once and memoised.

    ``table[key]`` is the value, or None when nothing matches; it never
    raises, so that a hit costs one C-level dict lookup.
    """

    def __init__(self, literals, patterns, memo_size):
        super(_Table, self).__init__(literals)
        # [(matcher, value, extra)] in file order.
        self._patterns = patterns
        self.memo = memo.BoundedMemo(memo_size)

    @property
    def pattern_count(self):
        return len(self._patterns)

    def _scan(self, key):
        for matches, value, extra in self._patterns:
            if matches(key):
                # A fresh copy per name: upstream writes the unit into
                # the metric entry, names must not share one.
                return value, (dict(extra) if extra is not None else None)
        return None, None

    def resolve(self, key):
        """(value, extra) of a key no literal covers; (None, None) if none."""
        found = self.memo.get(key)
        if found is None:
            found = self.memo.put(key, self._scan(key))
        return found

    def __missing__(self, key):
        if not self._patterns:
            return None
        return self.resolve(key)[0]

    @property
    def lookup(self):
        """``self[key]`` as a bound C method.

        Without patterns a miss needs no memo and the inherited
        ``dict.get`` answers hits and misses alike; with patterns
        ``__getitem__`` answers hits in C and calls ``__missing__`` only
        for keys no literal covers.
        """
        if self._patterns:
            return self.__getitem__
        return self.get


def _build(entries, memo_size):
    """Build a _Table from (entry, value, extra) in file order."""
    literals = {}
    patterns = []
    for entry, value, extra in entries:
        if is_pattern(entry):
            patterns.append((compile_pattern(entry), value, extra))
        elif entry not in literals:
            # The first earlier pattern matching this literal wins, as
            # the loop would have reached it first.
            for matches, earlier, _extra in patterns:
                if matches(entry):
                    value = earlier
                    break
            literals[entry] = value
    return _Table(literals, patterns, memo_size)


class PatternMetrics(dict):
    """``rd.metrics`` of a definition with wildcard entries.

    Upstream code indexes ``rd.metrics[metric_name]`` by the literal
    name; for a name matched only by a pattern that is a KeyError and the
    whole batch is lost. Here such a name gets the entry of its pattern
    (archive policy included), memoised per name.
    """

    def __init__(self, rd, table):
        super(PatternMetrics, self).__init__(rd.metrics)
        self._rd = rd
        self._table = table
        self.literal_names = tuple(n for n in rd.metrics if not is_pattern(n))

    def __missing__(self, name):
        rd, entry = self._table.resolve(name)
        if rd is self._rd and entry is not None:
            return entry
        raise KeyError(name)

    def for_resource(self, measured_names):
        """Metrics to create a resource with.

        The literal names, then the measured names this definition's
        patterns matched; never the patterns themselves.
        """
        metrics = dict((n, dict.__getitem__(self, n))
                       for n in self.literal_names)
        for name in measured_names:
            if name not in metrics:
                try:
                    metrics[name] = self[name]
                except KeyError:
                    pass
        return metrics


# (resource type, field, entry) of every bad pattern already logged: the
# Pike sample and event dispatchers, or several publishers, each build an
# index over the same file at start-up; the operator needs one line.
_LOGGED_BAD_PATTERNS = set()


def _log_bad_pattern(rd, field, entry):
    problem = pattern_problem(entry) if is_pattern(entry) else None
    if problem is None:
        return
    key = (rd.cfg.get('resource_type'), field, entry)
    if key in _LOGGED_BAD_PATTERNS:
        return
    _LOGGED_BAD_PATTERNS.add(key)
    LOG.warning('Gnocchi resource definition %(type)s: %(field)s entry '
                '%(entry)r is not a valid pattern (%(problem)s); it matches '
                'nothing', {'type': key[0], 'field': field, 'entry': entry,
                            'problem': problem})


class DefinitionIndex(object):
    """The lookups of a list of gnocchi resource definitions.

    ``metric_patterns`` builds the metric lookups with Pike's semantics
    (wildcards, first match in file order); without it only event types
    are indexed and metric names are left to upstream's own code.
    """

    def __init__(self, definitions, memo_size, metric_patterns=True):
        definitions = list(definitions)
        metrics = []
        events = []
        for rd in definitions:
            for entry in metric_entries(rd):
                if metric_patterns:
                    _log_bad_pattern(rd, 'metrics', entry)
                metrics.append((entry, rd, rd.metrics.get(entry)))
            for entry, operation in event_entries(rd):
                _log_bad_pattern(rd, 'event_' + operation, entry)
                events.append((entry, (rd, operation), None))
        self.events = _build(events, memo_size)
        self.metrics = self.swift_accounts = None
        if not metric_patterns:
            return
        self.metrics = _build(metrics, memo_size)
        self.swift_accounts = _build(
            [m for m in metrics if m[1].cfg['resource_type'] ==
             'swift_account'], memo_size)
        for rd in definitions:
            if any(is_pattern(n) for n in metric_entries(rd)):
                rd.metrics = PatternMetrics(rd, self.metrics)

    @property
    def metric_lookup(self):
        """Name -> the definition Pike's fnmatch loop returns, or None.

        A C-level callable (see ``_Table.lookup``): the per-sample path
        pays no Python frame for a literal name.
        """
        return self.metrics.lookup

    @property
    def event_lookup(self):
        """Event type -> (definition, operation) upstream's loop returns."""
        return self.events.lookup

    def any_swift_account(self, name):
        """Pike semantics: some swift_account definition matches name."""
        return self.swift_accounts[name] is not None


class MetricMap(object):
    """Stands in for current ceilometer's ``metric_map`` dict.

    ``get`` and ``[]`` behave as on the plain dict of literal names, but
    names matched by a pattern are found too.
    """

    def __init__(self, table):
        self._table = table

    def get(self, name, default=None):
        rd = self._table[name]
        return default if rd is None else rd

    def __getitem__(self, name):
        rd = self._table[name]
        if rd is None:
            raise KeyError(name)
        return rd


def metric_map(table):
    """A ``metric_map`` with Pike's semantics over a metric table.

    Without patterns in the file a plain dict of the literal names (first
    definition wins, as in Pike) answers alike, at dict speed.
    """
    if table.pattern_count:
        return MetricMap(table)
    return dict(table)
