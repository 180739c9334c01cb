#!/bin/bash
# Runs inside the harness (FASTPATH_INTEGRATION_ENV is set): the
# functional checks in parallel, then the CPU comparison alone so that
# no other test's traffic lands on either notification agent while it
# is measured.
set -euo pipefail
tests=./fastpath_integration/tests
cpu='AgentCPUTestCase'
rc=0
stestr --test-path "$tests" --top-dir ./ run --concurrency 2 \
    --exclude-regex "$cpu" "$@" || rc=$?
stestr --test-path "$tests" --top-dir ./ run --concurrency 1 "$cpu" \
    || rc=$?
exit "$rc"
