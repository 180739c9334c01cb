#!/bin/bash
# Find or build a real sheepdog (sheep, dog, collie) for the tests and the
# bench, and print its install prefix on stdout.
#
#   SHEEPDOG_PREFIX  an installed sheepdog (PREFIX/sbin/sheep and
#                    PREFIX/bin/dog); used as it is, nothing is built.
#   SHEEPDOG_SOURCE  a sheepdog source archive (git archive of a tag);
#                    default ../shared/sheepdog/sheepdog-1.0.1.tar.gz
#                    beside the checkout, checked against the SHA256SUMS
#                    file next to it when there is one.
#   SHEEPDOG_SHA256  the archive's expected sha256; a mismatch fails.
#   SHEEPDOG_REQUIRE_SHA256
#                    when 1, an archive that neither SHEEPDOG_SHA256 nor a
#                    SHA256SUMS entry vouches for is refused (the devstack
#                    plugin sets it: its archive may come from a URL).
#
#   build-sheepdog.sh --packages prints the Debian packages a build needs
#   and exits (the devstack plugin installs them with install_package).
#
# A build goes to FASTPATH_CACHE_DIR (default ~/.cache/openstack-fastpath)
# under sheepdog/<sha256 of the archive>, never into /usr, and is reused.
# It needs the Debian packages named in ../shared/sheepdog/README.md and
# installs them with apt-get when run as root. Sheepdog is GPL-2.0: a build
# input for tests, never part of the project.
#
# Exit status: 0 and the prefix printed; 3 when there is neither a prefix
# nor a source archive (the caller says which suites did not run); any
# other non-zero status is a failed build, with the tail of its log.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "build-sheepdog: $*" >&2; }
packages="autoconf automake libtool pkg-config make gcc liburcu-dev yasm"
if [ "${1:-}" = "--packages" ]; then
    echo "$packages"
    exit 0
fi

# A complete install: sbin/sheep, and dog under bin (1.0 on) or sbin
# (0.9.5 installs dog and collie there).
installed() {
    [ -x "$1/sbin/sheep" ] && { [ -x "$1/bin/dog" ] || [ -x "$1/sbin/dog" ]; }
}

if [ -n "${SHEEPDOG_PREFIX:-}" ]; then
    if ! installed "$SHEEPDOG_PREFIX"; then
        log "SHEEPDOG_PREFIX=$SHEEPDOG_PREFIX has no sbin/sheep and dog"
        exit 1
    fi
    echo "$SHEEPDOG_PREFIX"
    exit 0
fi

source=${SHEEPDOG_SOURCE:-$root/../shared/sheepdog/sheepdog-1.0.1.tar.gz}
if [ ! -f "$source" ]; then
    log "no sheepdog source archive at $source and no SHEEPDOG_PREFIX"
    exit 3
fi
source=$(cd "$(dirname "$source")" && pwd)/$(basename "$source")
sha=$(sha256sum "$source" | cut -d' ' -f1)
sums=$(dirname "$source")/SHA256SUMS
verified=""
if [ -f "$sums" ] && grep -q "$(basename "$source")" "$sums"; then
    if ! grep "$(basename "$source")" "$sums" | grep -q "^$sha "; then
        log "$source does not match $sums"
        exit 1
    fi
    verified=$sums
fi
if [ -n "${SHEEPDOG_SHA256:-}" ]; then
    if [ "$sha" != "$SHEEPDOG_SHA256" ]; then
        log "$source has sha256 $sha, not SHEEPDOG_SHA256=$SHEEPDOG_SHA256"
        exit 1
    fi
    verified=SHEEPDOG_SHA256
fi
if [ "${SHEEPDOG_REQUIRE_SHA256:-0}" = "1" ] && [ -z "$verified" ]; then
    log "$source is not verified: set SHEEPDOG_SHA256 to the sha256 you"
    log "have for this archive from a source you trust, or list it in a"
    log "SHA256SUMS file beside it"
    exit 1
fi

cache=${FASTPATH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/openstack-fastpath}
prefix=$cache/sheepdog/$sha
if installed "$prefix"; then
    echo "$prefix"
    exit 0
fi

mkdir -p "$cache/sheepdog"
# One build at a time; a second caller waits and then reuses it.
exec 9>"$cache/sheepdog/.lock"
flock 9
if installed "$prefix"; then
    echo "$prefix"
    exit 0
fi

missing=""
for package in $packages; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
            grep -q "ok installed"; then
        missing="$missing $package"
    fi
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        log "missing build dependencies:$missing (needs root and apt-get)"
        exit 1
    fi
    log "installing Debian packages:$missing"
    apt-get update -qq >&2
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >&2
fi

work=$(mktemp -d "$cache/sheepdog/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
buildlog=$work/build.log
log "building $(basename "$source") into $prefix (about a minute)"
if ! (
    set -e
    tar xzf "$source" -C "$work"
    cd "$work"/sheepdog-*
    ./autogen.sh
    # -fcommon: 1.0.1 defines globals in headers (GCC 10+ is -fno-common).
    ./configure --prefix="$prefix" --disable-corosync --disable-zookeeper \
        --disable-sheepfs CFLAGS="-fcommon -O2"
    make -j"$(nproc)"
    make install
) >"$buildlog" 2>&1; then
    log "build failed; the end of $buildlog:"
    tail -n 30 "$buildlog" >&2
    rm -rf "$prefix"
    trap - EXIT
    exit 1
fi
echo "$prefix"
