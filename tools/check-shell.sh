#!/bin/bash
# bashate over every shell script the project ships (devstack plugin,
# tools, CI entry point). E006 (long lines) is left on.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t scripts < <(git ls-files -co --exclude-standard \
    '*.sh' 'devstack/settings' 'devstack/plugin.sh' 'devstack/lib/*' \
    '.ci/run' | sort -u)
if [ "${#scripts[@]}" -eq 0 ]; then
    echo "check-shell: no shell scripts found" >&2
    exit 1
fi
bashate -v "${scripts[@]}"
