#!/bin/bash
# Make sure Debian's quilt (the patch-series tool, not PyPI's unrelated
# "quilt" package) is available; install it with apt-get when running as
# root, otherwise stop with a clear error.
set -euo pipefail
if command -v quilt >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-quilt: 'quilt' is not installed and cannot be installed" \
        "here (needs root and apt-get). Install the Debian/Ubuntu package" \
        "'quilt' (or your distribution's), then re-run." >&2
    exit 1
fi
echo "ensure-quilt: installing Debian's quilt package" >&2
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y quilt
command -v quilt >/dev/null 2>&1
