#!/bin/bash
# The light, quilt-free half of the patches' Python 2.7 subset check, for
# tox -e pep8: apply each series in patches/ with `patch -p1` to its
# sha256-verified Pike sdist in a temporary directory and run vermin over
# the non-test files the series touch. tox -e patches runs the same check
# on the trees it tests. Once the sdist cache is filled this runs offline.
#
# Usage: tools/check-patches-py27.sh [SDIST_CACHE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-${PIKE_SDISTS:-$root/.tox/pike-sdists}}
bash "$root/tools/fetch-pike-sdists.sh" "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for series in "$root"/patches/*/series; do
    series_dir=$(dirname "$series")
    project=$(basename "$series_dir")
    version=$(grep -F "$project==" "$root/patches/sources.txt" |
        sed -E 's/^[^=]+==([^ ]+) .*/\1/')
    tar -xzf "$cache/$project-$version.tar.gz" -C "$tmp"
    tree=$tmp/$project-$version
    while read -r patch _; do
        case $patch in ''|'#'*) continue ;; esac
        patch -d "$tree" -p1 --fuzz=0 --quiet --batch \
            < "$series_dir/$patch"
    done < "$series"
    mapfile -t code < <(bash "$root/tools/patched-files.sh" "$series_dir" |
        grep -v '/tests/' | grep '\.py$' || true)
    if [ "${#code[@]}" -eq 0 ]; then
        continue
    fi
    echo "check-patches-py27: $project: ${code[*]}"
    # Pike supports Python 2.7 and 3.5; see patches/README.rst.
    (cd "$tree" && vermin --no-tips --violations -t=2.7- -t=3.5- \
        "${code[@]}")
done
