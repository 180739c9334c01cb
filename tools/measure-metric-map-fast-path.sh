#!/bin/bash
# Measure the ceilometer metric map patch's literal-first path against an
# earlier version of the same patch (default: the one before it, commit
# 513a369), on CPython 2.7 with Pike's pins, side by side in one run.
#
# Usage: tools/measure-metric-map-fast-path.sh [GIT_REV]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-513a369}
patch_file=patches/ceilometer/gnocchi-dispatcher-metric-map.patch
cache=${PIKE_SDISTS:-$root/.tox/pike-sdists}
bash "$root/tools/fetch-pike-sdists.sh" "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for side in before after; do
    mkdir "$tmp/$side"
    tar -xzf "$cache/ceilometer-9.0.7.tar.gz" -C "$tmp/$side"
done
git -C "$root" show "$rev:$patch_file" |
    patch -d "$tmp/before/ceilometer-9.0.7" -p1 --fuzz=0 --quiet
patch -d "$tmp/after/ceilometer-9.0.7" -p1 --fuzz=0 --quiet \
    < "$root/$patch_file"
py27=$(cd "$root" && python3 -m fastpath_integration.harness.venvs \
    pike27-patches)/bin/python
tree=$tmp/after/ceilometer-9.0.7
PYTHONPATH=$tree "$py27" "$root/tools/measure-metric-map-fast-path.py" \
    "$tmp/before/ceilometer-9.0.7/ceilometer/dispatcher/gnocchi.py" \
    "$tree/ceilometer/dispatcher/gnocchi.py" \
    "$tree/ceilometer/dispatcher/data/gnocchi_resources.yaml"
