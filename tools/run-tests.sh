#!/bin/bash
# Usage: run-tests.sh KINDS [stestr run arguments]
# Run the tests of each kind in KINDS ("unit", "functional", "real";
# "real=REGEX": only that kind's tests matching REGEX, unless filters
# are given) of
# every package that has them (PACKAGE/tests/KIND: both plugins and the
# sheepdog emulator), passing stestr run's arguments on: `tox -e py3 --
# REGEX` must not fail because one package has no test matching REGEX.
# When the arguments are filters only, a suite with no matching test is
# skipped with a line saying so, and filters that match no test at all
# fail.
# Options (--serial, ...) go to every suite's run unchecked.
# Workers: FASTPATH_TEST_CONCURRENCY, else three per CPU. Most tests
# spend their time waiting (for a stall or transfer timeout of a fake
# or real sheep, for a child process), not computing: on 2 CPUs the
# unit suite takes about 40 s with 6 workers and 95 s with 2 (stestr's
# default, one per CPU). --concurrency or --serial given here wins.
set -euo pipefail
kinds=$1
shift
filters_only=1
workers_given=0
for arg in "$@"; do
    case $arg in
        --concurrency*|--serial) filters_only=0; workers_given=1 ;;
        -*) filters_only=0 ;;
    esac
done
workers=()
if [ $workers_given = 0 ]; then
    workers=(--concurrency "${FASTPATH_TEST_CONCURRENCY:-$((3 * $(nproc)))}")
fi
# `stestr list` needs the repository that `stestr run` would create.
if [ ! -d .stestr ]; then
    stestr init >/dev/null
fi
# PATH is left as it is: on a glance host with the default (native)
# client there is no dog, so no test may need one on PATH; tests that
# run a dog get it from their fixture by its full path. The real-cluster
# tests ("real") find the sheepdog build through SHEEPDOG_PREFIX. That
# no test reaches a real dog on PATH, or a real sheep on 127.0.0.1:7000,
# is tools/hermetic-check.sh's job (tox -e hermetic).
if prefix=$(bash tools/build-sheepdog.sh); then
    echo "run-tests: real sheepdog at $prefix (SHEEPDOG_PREFIX)"
    SHEEPDOG_PREFIX=$prefix
    export SHEEPDOG_PREFIX
elif [[ " $kinds " == *" real"[\ =]* ]]; then
    echo "run-tests: the real-cluster tests will skip or fail: no sheepdog"
fi
ran=0
for spec in $kinds; do
    kind=${spec%%=*}
    args=("$@")
    if [ "$kind" != "$spec" ] && [ $# = 0 ]; then
        args=("${spec#*=}")
    fi
    for path in ./*/tests/"$kind"; do
        [ -d "$path" ] || continue
        package=${path#./}
        package=${package%%/*}
        if [ ${#args[@]} -gt 0 ] && [ $filters_only = 1 ]; then
            matches=$(stestr --test-path "$path" list \
                ${args[@]+"${args[@]}"} || true)
            if [ -z "$matches" ]; then
                echo "run-tests: no $package $kind test matches: ${args[*]}"
                continue
            fi
        fi
        stestr --test-path "$path" run ${workers[@]+"${workers[@]}"} \
            ${args[@]+"${args[@]}"}
        ran=1
    done
done
if [ $ran = 0 ]; then
    echo "run-tests: no $kinds test matches: $*" >&2
    exit 1
fi
