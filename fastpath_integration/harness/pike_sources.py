"""What Pike's services need beyond their cached 2.7 venvs.

The released sdists (glance's etc/ files, and the trees the project's
quilt series apply to), an environment for a 2.7 venv's processes, and
this project installed into a Pike venv the way an operator does it.
"""

import os
import subprocess
import tarfile

from fastpath_integration.harness import processes
from fastpath_integration.harness import venvs

TOPDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# patches/<project> applies to this sdist (pinned in patches/sources.txt).
PATCHED_SDISTS = {
    'glance_store': 'glance_store-0.22.0',
    'ceilometer': 'ceilometer-9.0.7',
}


def sdist_cache():
    return os.path.join(os.path.dirname(venvs.cache_root()), 'sdists')


def glance_etc(venv, log):
    """glance 15.0.2's etc/ directory, from its sdist.

    The py2.py3 wheel the venv installed ships no paste configuration;
    Pike's standalone glance-api reads ``glance-api-paste.ini``.
    """
    cache = sdist_cache()
    etc = os.path.join(cache, 'glance-15.0.2', 'etc')
    if os.path.exists(os.path.join(etc, 'glance-api-paste.ini')):
        return etc
    os.makedirs(cache, exist_ok=True)
    processes.run([os.path.join(venv, 'bin', 'pip'), 'download', '-q',
                   '--no-deps', '--no-binary', ':all:', '-d', cache,
                   'glance==15.0.2'], log=log, env=venvs.venv_env(venv))
    with tarfile.open(os.path.join(cache, 'glance-15.0.2.tar.gz')) as tar:
        tar.extractall(cache, [m for m in tar.getmembers()
                               if m.name.startswith('glance-15.0.2/etc/')])
    return etc


def patched_tree(project, workdir, log):
    """A copy of ``project``'s Pike sdist with patches/<project> pushed.

    As tools/test-patches.sh does it: the sha256-verified sdist, Debian's
    quilt, no fuzz. Returns the tree, to put ahead of the venv's own copy
    on PYTHONPATH (the venv's entry points name the same modules).
    """
    cache = sdist_cache()
    tools = os.path.join(TOPDIR, 'tools')
    processes.run(['bash', os.path.join(tools, 'fetch-pike-sdists.sh'),
                   cache], log=log)
    processes.run(['bash', os.path.join(tools, 'ensure-quilt.sh')], log=log)
    os.makedirs(workdir)
    sdist = PATCHED_SDISTS[project]
    with tarfile.open(os.path.join(cache, sdist + '.tar.gz')) as tar:
        tar.extractall(workdir)
    tree = os.path.join(workdir, sdist)
    env = dict(os.environ,
               QUILT_PATCHES=os.path.join(TOPDIR, 'patches', project),
               QUILT_PC='.pc')
    processes.run(['quilt', '--quiltrc', '/dev/null', 'push', '-a',
                   '--fuzz=0'], log=log, cwd=tree, env=env)
    return tree


def install_project(service, log):
    """Install this project into the Pike venv, as an operator would.

    ``pip install --no-deps`` from the checkout with the venv's own 2.7
    pip (a wheel built on Python 3 is tagged py3 only). Run from ``/`` so
    that the checkout does not shadow what was installed.
    """
    venv = venvs.ensure_venv(service)
    processes.run([os.path.join(venv, 'bin', 'pip'), 'install', '-q',
                   '--no-deps', '--force-reinstall', TOPDIR], log=log,
                  env=venvs.venv_env(venv), cwd='/')
    return venv


def module_file(venv, module, env):
    """Where ``module`` is imported from in ``env`` (PYTHONPATH and all)."""
    return subprocess.run(
        [os.path.join(venv, 'bin', 'python'), '-c',
         'import %s as m; print(m.__file__)' % module], env=env, cwd='/',
        check=True, capture_output=True, text=True).stdout.strip()
