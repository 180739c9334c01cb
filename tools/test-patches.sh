#!/bin/bash
# tox -e patches: apply every quilt series in patches/ to its stable/pike
# sdist (sha256-verified), refuse any fuzz or offset, check the patched
# code stays in the Python 2.7/3 subset, and run the project's own unit
# tests for the touched modules: first on the UNPATCHED tree (so that a
# failure caused by this environment's shims shows up there too), then on
# the patched tree with the tests the patches add. Each run happens twice:
# on this env's Python 3 with current libraries, and on CPython 2.7 with
# Pike's pins (the pike27-patches venv of fastpath_integration/harness/
# venvs.py, cached; or $PYTHON27, a 2.7 interpreter that has them).
#
# Usage: tools/test-patches.sh SDIST_CACHE WORKDIR [PROJECT...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:?usage: test-patches.sh SDIST_CACHE WORKDIR [PROJECT...]}
work=${2:?usage: test-patches.sh SDIST_CACHE WORKDIR [PROJECT...]}
shift 2
if [ "$#" -gt 0 ]; then
    projects=("$@")
else
    projects=()
    for series in "$root"/patches/*/series; do
        projects+=("$(basename "$(dirname "$series")")")
    done
fi
python=${PYTHON:-python}
if [ -n "${PYTHON27:-}" ]; then
    py27=$PYTHON27
else
    # Builds the venv on the first run (a few minutes), then reuses it.
    py27=$(cd "$root" && "$python" -m fastpath_integration.harness.venvs \
        pike27-patches)/bin/python
fi
"$py27" -c 'import sys; assert sys.version_info[:2] == (2, 7), sys.version'

# The project's existing test module for each module the series touches.
# Test modules the patches themselves add or change are found from the
# patches, and run on the patched tree too.
declare -A base_tests=(
    [oslo.utils]=oslo_utils.tests.test_fnmatch
    [ceilometer]=ceilometer.tests.unit.dispatcher.test_gnocchi
    [glance_store]=glance_store.tests.unit.test_sheepdog_store
)

bash "$root/tools/ensure-quilt.sh"
bash "$root/tools/fetch-pike-sdists.sh" "$cache"
rm -rf "$work"
mkdir -p "$work/pristine" "$work/patched" "$work/logs"

failed=()
summary=()
extra_path=

run_tests() {
    # run_tests PYTHON TREE LABEL MODULE...
    local interpreter=$1 tree=$2 label=$3 log path
    shift 3
    log=$work/logs/$label.log
    path=$tree${extra_path:+:$extra_path}${PYTHONPATH:+:$PYTHONPATH}
    echo "-- $label: $interpreter -m unittest -v $*"
    if (cd "$tree" && PYTHONPATH=$path OS_LOG_CAPTURE=1 \
            OS_STDOUT_CAPTURE=1 OS_STDERR_CAPTURE=1 \
            "$interpreter" -m unittest -v "$@") >"$log" 2>&1; then
        summary+=("$label: $(grep -E '^Ran [0-9]+ tests?' "$log") OK")
        return 0
    fi
    tail -n 80 "$log"
    summary+=("$label: FAILED (log: $log)")
    failed+=("$label")
    return 1
}

for project in "${projects[@]}"; do
    series_dir=$root/patches/$project
    if [ ! -f "$series_dir/series" ]; then
        echo "ERROR: no quilt series in $series_dir" >&2
        exit 1
    fi
    version=$(grep -F "$project==" "$root/patches/sources.txt" |
        sed -E 's/^[^=]+==([^ ]+) .*/\1/')
    tarball=$cache/$project-$version.tar.gz
    tree=$work/patched/$project-$version
    pristine=$work/pristine/$project-$version
    echo "== $project $version"
    tar -xzf "$tarball" -C "$work/pristine"
    tar -xzf "$tarball" -C "$work/patched"

    # quilt refuses fuzz with --fuzz=0; an offset is accepted by quilt
    # (and patch), so its message is looked for in the output.
    push_log=$work/logs/$project-quilt-push.log
    if ! (cd "$tree" && QUILT_PATCHES=$series_dir QUILT_PC=.pc \
            quilt --quiltrc /dev/null push -a --fuzz=0) >"$push_log" 2>&1
    then
        cat "$push_log"
        echo "ERROR: $project: quilt push -a failed" >&2
        exit 1
    fi
    cat "$push_log"
    if grep -Eiq 'offset|fuzz|reject' "$push_log"; then
        echo "ERROR: $project: a patch applied with an offset or fuzz;" \
            "refresh it against $project $version" >&2
        exit 1
    fi

    mapfile -t touched < <(bash "$root/tools/patched-files.sh" "$series_dir")
    code=()
    tests=("${base_tests[$project]}")
    for file in "${touched[@]}"; do
        case $file in
            */tests/*test_*.py)
                module=${file%.py}
                module=${module//\//.}
                [[ " ${tests[*]} " == *" $module "* ]] || tests+=("$module")
                ;;
            *.py)
                code+=("$file")
                ;;
        esac
    done

    if [ "${#code[@]}" -gt 0 ]; then
        # Pike runs on Python 2.7 and 3.5: 3.5 is the Python 3 floor here
        # (collections.OrderedDict, say, is 3.1+ and fine for Pike).
        echo "-- $project: vermin -t=2.7- -t=3.5- on ${code[*]}"
        (cd "$tree" && vermin --no-tips --violations -t=2.7- -t=3.5- \
            "${code[@]}")
        echo "-- $project: py_compile on Python 2.7"
        (cd "$tree" && "$py27" -m py_compile "${code[@]}")
    fi

    pristine_tests=()
    for module in "${tests[@]}"; do
        if [ -f "$pristine/${module//.//}.py" ]; then
            pristine_tests+=("$module")
        fi
    done
    run_tests "$python" "$pristine" "$project-unpatched" \
        "${pristine_tests[@]}" || true
    run_tests "$python" "$tree" "$project-patched" "${tests[@]}" || true
    run_tests "$py27" "$pristine" "$project-unpatched-py27" \
        "${pristine_tests[@]}" || true
    run_tests "$py27" "$tree" "$project-patched-py27" "${tests[@]}" || true

    if [ "$project" = glance_store ]; then
        # The patched tree with the fastsheep plugin importable from this
        # repository: both drivers' options in [glance_store].
        extra_path=$root:$root/patches/tests
        run_tests "$python" "$tree" "$project-patched+fastsheep" \
            test_patched_tree_with_plugin || true
        run_tests "$py27" "$tree" "$project-patched+fastsheep-py27" \
            test_patched_tree_with_plugin || true
        extra_path=
    fi
done

version() {
    "$1" -c 'import platform; print(platform.python_version())'
}
echo
echo "== summary (Python $(version "$python");" \
    "-py27: Python $(version "$py27"))"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "FAILED: ${failed[*]}" >&2
    exit 1
fi
