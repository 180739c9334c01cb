#!/bin/bash
# devstack plugin for openstack-fastpath: installs the distribution into
# the environment glance and ceilometer run from and writes their
# configuration through devstack/lib/fastpath (the functions the local
# integration harness also runs).

# Save trace setting
_XTRACE_FASTPATH=$(set +o | grep xtrace)
set -o xtrace

source "$FASTPATH_DIR/devstack/lib/fastpath"
source "$FASTPATH_DIR/devstack/lib/sheepdog"

# The interpreter of the environment glance and ceilometer use: the
# global venv on current devstack, the system python on older ones.
function _fastpath_python {
    if [[ -n "${DEVSTACK_VENV:-}" && -x "$DEVSTACK_VENV/bin/python" ]]; then
        echo "$DEVSTACK_VENV/bin/python"
    else
        echo "${PYTHON:-python3}"
    fi
}

function install_fastpath {
    # Not setup_develop: an editable checkout in glance's working
    # directory would shadow the installed package.
    pip_install "$FASTPATH_DIR"
}

function install_fastpath_emulator {
    mkdir -p "$FASTPATH_EMULATOR_DIR"
    "$(_fastpath_python)" -m sheepdog_emulator.emulator \
        --root "$FASTPATH_EMULATOR_DIR" \
        --address "$FASTPATH_SHEEPDOG_ADDRESS" \
        --port "$FASTPATH_SHEEPDOG_PORT" \
        setup --bin "$FASTPATH_EMULATOR_DIR/bin"
    if [[ -z "$FASTPATH_SHEEPDOG_COMMAND" ]]; then
        FASTPATH_SHEEPDOG_COMMAND=$FASTPATH_EMULATOR_DIR/bin/dog
    fi
    # The emulator speaks the dog command line, not sheep's protocol.
    FASTPATH_SHEEPDOG_CLIENT=dog
}

function configure_fastpath {
    if is_service_enabled fastsheep-cluster; then
        fastpath_use_cluster
    fi
    if is_service_enabled fastsheep && is_service_enabled g-api; then
        configure_fastpath_glance "$GLANCE_API_CONF" \
            "$(fastpath_glance_store_mode "$(_fastpath_python)")"
    fi
    if is_service_enabled metriccache && \
            is_service_enabled ceilometer-anotification; then
        configure_fastpath_ceilometer_pipelines \
            "$CEILOMETER_CONF_DIR/pipeline.yaml" \
            "$CEILOMETER_CONF_DIR/event_pipeline.yaml"
    fi
}

# Fail the stack run early and clearly if the services cannot load the
# plugins from their entry points.
function verify_fastpath {
    local python
    python=$(_fastpath_python)
    if is_service_enabled fastsheep; then
        "$python" -c "import stevedore; stevedore.driver.DriverManager(
'glance_store.drivers', 'fastsheep', invoke_on_load=False)"
    fi
    if is_service_enabled metriccache; then
        "$python" -c "import stevedore; stevedore.driver.DriverManager(
'ceilometer.sample.publisher', '$FASTPATH_CEILOMETER_PUBLISHER',
invoke_on_load=False)"
    fi
    if is_service_enabled fastsheep-cluster; then
        fastpath_cluster_wait_running
    fi
}

function cleanup_fastpath {
    if is_service_enabled metriccache; then
        unconfigure_fastpath_ceilometer_pipelines \
            "$CEILOMETER_CONF_DIR/pipeline.yaml" \
            "$CEILOMETER_CONF_DIR/event_pipeline.yaml"
    fi
    rm -rf "$FASTPATH_EMULATOR_DIR"
    if is_service_enabled fastsheep-cluster; then
        cleanup_fastpath_cluster
    fi
    pip_uninstall openstack-fastpath || true
}

if [[ "$1" == "stack" ]] && is_service_enabled fastsheep-cluster && \
        is_service_enabled fastsheep-emulator; then
    die $LINENO "fastsheep-cluster and fastsheep-emulator are exclusive:" \
        "glance's default store is one or the other"
fi

if is_service_enabled fastsheep metriccache fastsheep-emulator \
        fastsheep-cluster; then
    if [[ "$1" == "stack" && "$2" == "pre-install" ]]; then
        if is_service_enabled fastsheep-cluster; then
            # The build's packages: the stack user runs the build
            # without root.
            # shellcheck disable=SC2046
            install_package $(fastpath_sheepdog_packages)
        fi
    elif [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing openstack-fastpath"
        install_fastpath
        if is_service_enabled fastsheep-cluster; then
            echo_summary "Building sheepdog for fastsheep-cluster"
            install_fastpath_sheepdog
        fi
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring openstack-fastpath"
        if is_service_enabled fastsheep-cluster; then
            # Before glance-api starts (after this phase), so that its
            # store finds the cluster formatted.
            echo_summary "Starting the sheepdog cluster"
            start_fastpath_cluster
        fi
        if is_service_enabled fastsheep-emulator; then
            install_fastpath_emulator
        fi
        configure_fastpath
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        verify_fastpath
    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        # Nothing for tempest: the stock image tests exercise the default
        # store, which is fastsheep once configured above.
        :
    fi

    if [[ "$1" == "unstack" ]]; then
        # glance and ceilometer are stopped by devstack, the emulator is
        # plain files; the cluster's nodes are this plugin's services.
        if is_service_enabled fastsheep-cluster; then
            stop_fastpath_cluster
        fi
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_fastpath
    fi
fi

# Restore xtrace
$_XTRACE_FASTPATH
