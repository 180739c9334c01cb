#!/bin/bash
# tox -e patches, second half: the glance series of patches/lines/ against
# the released glance sdists of patches/lines/sources.txt (sha256-pinned):
# each series must apply to every sdist that names it with quilt push -a
# and no fuzz or offset, and the patched modules must compile. The series'
# unit tests need glance's whole test environment (os-brick, the store
# clients, oslotest, ...), which this env does not build; see
# patches/README.rst, "Series for the current lines", for where they ran.
#
# Usage: tools/test-line-patches.sh SDIST_CACHE WORKDIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sources=$root/patches/lines/sources.txt
cache=${1:?usage: test-line-patches.sh SDIST_CACHE WORKDIR}
work=${2:?usage: test-line-patches.sh SDIST_CACHE WORKDIR}
python=${PYTHON:-python3}
mkdir -p "$cache"
rm -rf "$work"
mkdir -p "$work"

bash "$root/tools/ensure-quilt.sh"
summary=()
# name==version --hash=sha256:HEX  # series...
while read -r requirement hash rest; do
    case $requirement in ''|'#'*) continue ;; esac
    name=${requirement%%==*}
    version=${requirement##*==}
    sha=${hash#--hash=sha256:}
    tarball=$cache/$name-$version.tar.gz
    if ! echo "$sha  $tarball" | sha256sum --quiet -c - >/dev/null 2>&1; then
        rm -f "$tarball"
        # One requirement a run: pip refuses two versions of a project.
        echo "$requirement $hash" > "$work/requirement.txt"
        "$python" -m pip download -q --no-deps --no-binary :all: \
            --require-hashes --dest "$cache" -r "$work/requirement.txt" || {
            echo "test-line-patches: cannot download $requirement" \
                "(network?)" >&2
            exit 1
        }
        echo "$sha  $tarball" | sha256sum --quiet -c -
    fi
    for series in ${rest#\#}; do
        series_dir=$root/patches/lines/$series
        tree=$work/$series/$name-$version
        mkdir -p "$work/$series"
        tar -xzf "$tarball" -C "$work/$series"
        log=$work/$series-$version-quilt-push.log
        if ! (cd "$tree" && QUILT_PATCHES=$series_dir QUILT_PC=.pc \
                quilt --quiltrc /dev/null push -a --fuzz=0) >"$log" 2>&1
        then
            cat "$log"
            echo "ERROR: $series: quilt push -a failed on" \
                "$name $version" >&2
            exit 1
        fi
        if grep -Eiq 'offset|fuzz|reject' "$log"; then
            cat "$log"
            echo "ERROR: $series: applies to $name $version only with an" \
                "offset or fuzz" >&2
            exit 1
        fi
        mapfile -t touched < <(bash "$root/tools/patched-files.sh" \
            "$series_dir" | grep '\.py$')
        (cd "$tree" && "$python" -m py_compile "${touched[@]}")
        summary+=("$series on $name $version: $(grep -c '^Applying' \
            "$log") patches, no fuzz or offset; ${#touched[@]} files compile")
    done
done < "$sources"
printf '%s\n' "${summary[@]}"
