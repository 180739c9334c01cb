#!/bin/bash
# Print the files a quilt series touches, one per line, in series order:
# the "+++ b/<path>" lines of its -p1 patches.
#
# Usage: tools/patched-files.sh patches/<project>
set -euo pipefail
dir=${1:?usage: patched-files.sh SERIES_DIR}
while read -r patch _; do
    case $patch in ''|'#'*) continue ;; esac
    sed -n 's#^+++ b/\([^[:space:]]*\).*#\1#p' "$dir/$patch"
done < "$dir/series" | awk '!seen[$0]++'
