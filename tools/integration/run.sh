#!/bin/bash
# tox -e integration: start the real services, run the integration
# tests against them, stop everything.
#
# The harness stops its services and removes its run directory itself
# (fixtures cleanups); this trap is the second line: if the harness is
# killed outright, whatever is left of its process group goes too.
set -euo pipefail
cd "$(dirname "$0")/../.."

harness_pid=
function cleanup {
    local rc=$?
    if [[ -n "$harness_pid" ]] && kill -0 "$harness_pid" 2>/dev/null; then
        kill -TERM "$harness_pid" 2>/dev/null || true
        wait "$harness_pid" 2>/dev/null || true
    fi
    exit "$rc"
}
trap cleanup EXIT INT TERM HUP

start=$(date +%s)
python -m fastpath_integration.harness.run \
    --log-dir "${FASTPATH_LOG_DIR:-.tox/integration-logs}" \
    -- bash tools/integration/run-tests.sh "$@" &
harness_pid=$!
rc=0
wait "$harness_pid" || rc=$?
harness_pid=
echo "tox -e integration: wall time $(( $(date +%s) - start ))s (rc=$rc)"
exit "$rc"
