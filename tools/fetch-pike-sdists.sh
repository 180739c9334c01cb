#!/bin/bash
# Put the stable/pike sdists of patches/sources.txt into DEST, verified by
# sha256. Files already in DEST with the right hash are kept, so once the
# cache is filled the patch checks (tox -e patches, pep8, bench) run
# offline. A file with a wrong hash is deleted and fetched again.
#
# Usage: tools/fetch-pike-sdists.sh DEST
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sources=$root/patches/sources.txt
dest=${1:?usage: fetch-pike-sdists.sh DEST}
python=${PYTHON:-python3}
mkdir -p "$dest"

# name==version --hash=sha256:HEX  ->  "name-version.tar.gz HEX"
expected() {
    grep -v '^[[:space:]]*#' "$sources" | grep -v '^[[:space:]]*$' |
        sed -E 's/^([^=]+)==([^ ]+) +--hash=sha256:([0-9a-f]{64}).*$/'\
'\1-\2.tar.gz \3/'
}

verify() {
    local missing=0 file sha
    while read -r file sha; do
        if [ ! -f "$dest/$file" ]; then
            missing=1
        elif ! echo "$sha  $dest/$file" | sha256sum --quiet -c - ; then
            echo "fetch-pike-sdists: $file: sha256 mismatch, removing" >&2
            rm -f "$dest/$file"
            missing=1
        fi
    done < <(expected)
    return $missing
}

if verify; then
    exit 0
fi
"$python" -m pip download --no-deps --no-binary :all: --require-hashes \
    --dest "$dest" -r "$sources" || {
    echo "fetch-pike-sdists: download failed (network?); the sdists in" \
        "$sources are needed in $dest" >&2
    exit 1
}
if ! verify; then
    echo "fetch-pike-sdists: sdists in $dest do not match $sources" >&2
    exit 1
fi
