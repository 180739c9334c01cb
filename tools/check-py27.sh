#!/bin/bash
# The plugin packages must load in a Pike venv, which runs Python 2.7:
# check that their code stays in the Python 2.7/3 common subset. Tests are
# left out: they run on the Python 3 interpreter of the tox envs only.
set -euo pipefail
cd "$(dirname "$0")/.."
vermin --no-tips --violations -t=2.7- -t=3- \
    --exclude-regex '/tests/' \
    glance_store_fastsheep ceilometer_metriccache
# The code the backport patches in patches/ produce, applied to the
# verified Pike sdists (see patches/README.rst).
bash tools/check-patches-py27.sh
