#!/bin/bash
# Usage: hermetic-check.sh [stestr run arguments]
# The unit and functional suites of every package (or the tests
# the arguments select) where a glance host could have them run: a real
# sheep listening on sheepdog's default 127.0.0.1:7000, holding images
# named as the tests name theirs, and a real dog and collie first on
# PATH. No test may reach either: each uses the fake dog, the emulator or
# a cluster of its own, on a port it chose, and a command it was given.
# The sheep's VDI list must be the same after the run as before it.
#
# Everything runs in private network, mount and PID namespaces (unshare,
# as root or mapped to root): the sheep on 7000 clashes with no other on
# the host, sheep's local-driver lock directory is a private tmpfs, and
# when the run ends the kernel kills whatever it left in its
# PID namespace, the sheep included, even if this script is killed.
# Without a sheepdog build (tools/build-sheepdog.sh) it says so and runs
# the suites without the check (the envlist runs them only here), unless
# FASTPATH_REQUIRE_REAL_SHEEPDOG is set (.ci/run): then it fails.
set -euo pipefail
PORT=7000
if [ "${FASTPATH_HERMETIC_INSIDE:-}" != 1 ]; then
    if ! prefix=$(bash tools/build-sheepdog.sh); then
        if [ -n "${FASTPATH_REQUIRE_REAL_SHEEPDOG:-}" ]; then
            echo "hermetic-check: no sheepdog build and" \
                "FASTPATH_REQUIRE_REAL_SHEEPDOG is set" >&2
            exit 1
        fi
        echo "hermetic-check: skipped: no sheepdog to build or use" \
            "(set SHEEPDOG_PREFIX or SHEEPDOG_SOURCE); the suites run" \
            "without it"
        # For toxfile.py's end-of-run report.
        if [ -n "${FASTPATH_SKIP_LOG:-}" ]; then
            printf '%s\t%s\t%s\n' "${TOX_ENV_NAME:--}" \
                "the hermetic check" "no sheepdog to build or use" \
                >> "$FASTPATH_SKIP_LOG" || true
        fi
        # The envlist runs the unit and functional suites only here.
        exec bash tools/run-tests.sh "unit functional" "$@"
    fi
    namespaces=(--net --mount --pid --fork --kill-child --mount-proc)
    if [ "$(id -u)" != 0 ]; then
        namespaces+=(--map-root-user)
    fi
    export SHEEPDOG_PREFIX=$prefix FASTPATH_HERMETIC_INSIDE=1
    exec unshare "${namespaces[@]}" bash "$0" "$@"
fi

prefix=$SHEEPDOG_PREFIX
ip link set lo up
# Only sheep's fixed lock directory is made private, as the cluster
# fixture does (fastpath_integration/harness/sheep_processes.py).
mkdir -p /tmp/sheepdog_locks
mount -t tmpfs sheepdog-locks /tmp/sheepdog_locks
work=$(mktemp -d)
dog=$prefix/bin/dog
[ -x "$dog" ] || dog=$prefix/sbin/dog
sheep_pid=
stop_sheep() {
    if [ -n "$sheep_pid" ]; then
        kill "$sheep_pid" 2>/dev/null || true
        wait "$sheep_pid" 2>/dev/null || true
        sheep_pid=
    fi
}
clean_up() {
    stop_sheep
    rm -rf "$work"
}
trap clean_up EXIT
"$prefix/sbin/sheep" -f -c "local:$work/shm" -b 127.0.0.1 -p $PORT \
    "$work/node" >"$work/sheep.out" 2>&1 &
sheep_pid=$!
for _try in $(seq 100); do
    if "$dog" node list -p $PORT >/dev/null 2>&1; then
        break
    fi
    sleep 0.1
done
"$dog" cluster format -c 1 -p $PORT >/dev/null
# Names the unit and functional tests upload, read and delete: a test
# that reached this sheep would find them, or change them.
for name in img four five gone new; do
    "$dog" vdi create -p $PORT "$name" 8M
    printf 'real sheep at 127.0.0.1:%d\n' $PORT |
        "$dog" vdi write -p $PORT "$name" 0 31
done
before=$("$dog" vdi list -r -p $PORT)
echo "hermetic-check: real sheep at 127.0.0.1:$PORT, $dog first on PATH"
PATH=$prefix/bin:$prefix/sbin:$PATH
if [ $# = 0 ]; then
    set -- glance_store_fastsheep
fi
status=0
bash tools/run-tests.sh "unit functional" "$@" || status=$?
after=$("$dog" vdi list -r -p $PORT)
if [ "$before" != "$after" ]; then
    echo "hermetic-check: a test changed the real sheep's VDIs:" >&2
    diff <(echo "$before") <(echo "$after") >&2 || true
    status=1
fi
exit $status
