#!/usr/bin/env python3
"""Print what failed in a tox run, from its --result-json file.

CI keeps only the end of a run's output, and `tox` runs a dozen envs: the
output of an env that failed early is far above that end. .ci/run has tox
write its result file (TOX_RESULT_JSON) and, when tox fails, calls this to
repeat each failed command with the end of its output and its errors, so
that the end of the CI log says what failed and why.

Usage: ci-report.py RESULT_JSON [LINES]
"""

import json
import sys

#: Lines of output and of errors repeated for each failed command.
DEFAULT_LINES = 60


def tail(text, lines):
    """The last `lines` lines of text, without trailing blank lines."""
    return '\n'.join(text.rstrip().splitlines()[-lines:])


def failed_commands(result):
    """(env, phase, command) for every command that exited non-zero."""
    for env, data in sorted(result.get('testenvs', {}).items()):
        for phase in ('setup', 'test'):
            for command in data.get(phase, []):
                if command.get('retcode'):
                    yield env, phase, command


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    lines = int(argv[2]) if len(argv) == 3 else DEFAULT_LINES
    try:
        with open(argv[1]) as source:
            result = json.load(source)
    except (IOError, ValueError) as error:
        print('ci-report: no tox result to report from: %s' % error)
        return 1
    failures = list(failed_commands(result))
    if not failures:
        print('ci-report: tox failed, but no command in %s did' % argv[1])
        return 0
    for env, phase, command in failures:
        print('=' * 72)
        print('ci-report: %s %s failed (exit %s): %s' % (
            env, phase, command['retcode'], ' '.join(command['command'])))
        for name in ('output', 'err'):
            text = command.get(name) or ''
            if text.strip():
                print('--- the end of its %s ---' % name)
                print(tail(text, lines))
    print('=' * 72)
    print('ci-report: failed: %s' % ', '.join(
        sorted(set(env for env, _phase, _command in failures))))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
