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
"""How far a bench run is: section, row and round, and what remains.

A full run takes about an hour, most of it in a few sections whose rows
each take minutes: a section's start and end alone say too little. The
unit of progress is a row, done when the report records it (measured
or failed); a row of an interleaved ratio is also done by ``1/rounds``
a round on the way. The estimate of what remains is the pace so far
over the rows of every selected section's tables, known before the
first one runs.

On a terminal, one tqdm bar on stderr; elsewhere (CI logs, a file), one
plain line per row and round, with the same counts and estimate.
"""

import sys

import tqdm


class Progress(object):
    """The run's progress over total rows, written to stream."""

    def __init__(self, total, stream=None, terminal=None):
        self.stream = stream or sys.stderr
        if terminal is None:
            terminal = self.stream.isatty()
        # On a terminal the bar redraws itself; elsewhere it draws into
        # nothing, and the lines give its counts and estimate.
        self.bar = tqdm.tqdm(total=total, unit='row',
                             file=self.stream if terminal else _Nowhere(),
                             dynamic_ncols=True, mininterval=0)
        self.terminal = terminal
        self.section = ''
        # Row key -> the part of it done so far (0 to 1).
        self.given = {}

    def start_section(self, name):
        self.section = name
        self._show('%s: starting' % name)

    def start_row(self, key, number=1, rounds=1):
        """Row key is about to run (round number of rounds)."""
        if rounds > 1:
            self._show('%s: %s, round %d of %d' % (
                self.section, key, number, rounds))
        else:
            self._show('%s: %s' % (self.section, key))

    def round_done(self, key, rounds):
        """One of rounds rounds of row key ran: 1/rounds of it done."""
        if self.given.get(key, 0.0) + 1.0 / rounds < 1.0:
            self._give(key, 1.0 / rounds)

    def recorded(self, key):
        """Row key is measured or failed: all of it done, once."""
        self._give(key, 1.0 - self.given.get(key, 0.0))

    def _give(self, key, steps):
        self.given[key] = self.given.get(key, 0.0) + steps
        self.bar.update(steps)

    def _show(self, what):
        if self.terminal:
            self.bar.set_description_str(what[:60], refresh=True)
            return
        counts = self.bar.format_meter(**dict(
            self.bar.format_dict,
            bar_format='rows {n:.3g} of {total:.0f}, {remaining} left'))
        self.stream.write('bench: %s (%s)\n' % (what, counts))
        self.stream.flush()

    def close(self):
        self.bar.close()


class Silent(object):
    """The Progress of a Report no runner watches (tools, tests)."""

    def start_section(self, name):
        pass

    def start_row(self, key, number=1, rounds=1):
        pass

    def round_done(self, key, rounds):
        pass

    def recorded(self, key):
        pass

    def close(self):
        pass


class _Nowhere(object):
    """A file for the bar off a terminal: its drawing goes nowhere."""

    def write(self, text):
        pass

    def flush(self):
        pass
