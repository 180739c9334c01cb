"""devstack/lib/fastpath, run the way the devstack plugin runs it.

Glance and ceilometer get their plugin configuration from these
functions, so the integration suite tests what devstack writes.
"""

import configparser
import os
import subprocess

from fastpath_integration.harness import processes
from fastpath_integration.harness import venvs

TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
LIB_FASTPATH = os.path.join(TOPDIR, 'devstack', 'lib', 'fastpath')


def run(function, args, env=None, log=None):
    """Run one function of devstack/lib/fastpath, as the plugin does."""
    script = 'set -eu; source "$0"; %s "$@"' % function
    full_env = dict(os.environ)
    full_env.update(env or {})
    processes.run(['bash', '-c', script, LIB_FASTPATH] + list(args),
                  log=log, env=full_env)


def glance_store_mode(venv, env):
    """``legacy`` or ``multi``: what the plugin picks for ``venv``."""
    return subprocess.run(
        ['bash', '-c', 'source "$0"; fastpath_glance_store_mode "$1"',
         LIB_FASTPATH, os.path.join(venv, 'bin', 'python')],
        check=True, capture_output=True, text=True,
        env=venvs.venv_env(venv, env)).stdout.strip()


def sheepdog_env(sheepdog, backend_id):
    """The FASTPATH_* settings that point the plugin at ``sheepdog``.

    ``sheepdog`` is a real cluster or the emulator: anything with
    ``address``, ``port`` and ``dog_path``.
    """
    return {
        'FASTPATH_GLANCE_BACKEND_ID': backend_id,
        'FASTPATH_SHEEPDOG_ADDRESS': sheepdog.address,
        'FASTPATH_SHEEPDOG_PORT': str(sheepdog.port),
        'FASTPATH_SHEEPDOG_COMMAND': sheepdog.dog_path,
    }


def write_ini(path, settings):
    """An ini file from (section, option, value) triples.

    What ``iniset`` once per triple would write, for the files devstack
    itself writes (the plugin's functions then edit them).
    """
    parser = configparser.ConfigParser(interpolation=None)
    for section, option, value in settings:
        if section != 'DEFAULT' and not parser.has_section(section):
            parser.add_section(section)
        parser.set(section, option, value)
    with open(path, 'w') as f:
        parser.write(f)
