#!/bin/bash
# Usage: run-tests.sh KINDS [stestr run arguments]
# Run the tests of each kind in KINDS ("unit", "functional" or both) of
# both plugins, passing stestr run's arguments on: `tox -e py3 -- REGEX`
# must not fail because one plugin has no test matching REGEX. When the
# arguments are filters only, a suite with no matching test is skipped
# with a line saying so, and filters that match no test at all fail.
# Options (--serial, ...) go to every suite's run unchecked.
set -euo pipefail
kinds=$1
shift
filters_only=1
for arg in "$@"; do
    case $arg in
        -*) filters_only=0 ;;
    esac
done
# `stestr list` needs the repository that `stestr run` would create.
if [ ! -d .stestr ]; then
    stestr init >/dev/null
fi
ran=0
for kind in $kinds; do
    for package in glance_store_fastsheep ceilometer_metriccache; do
        path=./$package/tests/$kind
        if [ $# -gt 0 ] && [ $filters_only = 1 ]; then
            matches=$(stestr --test-path "$path" list "$@" || true)
            if [ -z "$matches" ]; then
                echo "run-tests: no $package $kind test matches: $*"
                continue
            fi
        fi
        stestr --test-path "$path" run "$@"
        ran=1
    done
done
if [ $ran = 0 ]; then
    echo "run-tests: no $kinds test matches: $*" >&2
    exit 1
fi
