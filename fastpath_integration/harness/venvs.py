"""Service virtualenvs, built once and cached by a hash of what they hold.

Each service runs from its own venv, as devstack and distributions keep
them apart: glance, gnocchi and ceilometer pin conflicting libraries. A
fresh machine builds them (a few minutes, uWSGI and psycopg2 compile);
re-runs reuse them from the cache, keyed by the requirement file, the
interpreter version and this module's build recipe, so a changed pin
builds a new venv instead of patching an old one.

Services named ``pike27-*`` are Pike's: CPython 2.7 (pyenv's 2.7.18 on
this project's machines), created by virtualenv older than 20.22 (the
last that makes 2.7 environments), with tools/pike-constraints.txt, the
project's copy of Pike's pins, named in their requirement file.
"""

import contextlib
import fcntl
import glob
import hashlib
import logging
import os
import shutil
import subprocess
import sys

LOG = logging.getLogger(__name__)

TOOLS_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), 'tools')
REQUIREMENTS_DIR = os.path.join(TOOLS_DIR, 'integration', 'requirements')
PIKE_CONSTRAINTS = os.path.join(TOOLS_DIR, 'pike-constraints.txt')
PIKE_PREFIX = 'pike27-'
PATCHES_DIR = os.path.join(os.path.dirname(TOOLS_DIR), 'patches')
# The quilt series of patches/ a venv gets on top of what pip installs
# (into its site-packages, before it is marked complete): the glance
# bugs tempest's image tests found on a line. The series are part of
# the cache key, so a changed patch builds a new venv.
SERIES = {
    'openstack-2023.1': ('lines/glance-2023.1',),
    'openstack-2026.1': ('lines/glance-2026.1',),
}

# Bump to rebuild every cached venv when the recipe below changes.
RECIPE_VERSION = '1'

SERVICES = ('glance', 'glance-eventlet', 'gnocchi', 'ceilometer')


def cache_root():
    base = os.environ.get('FASTPATH_CACHE_DIR') or os.path.join(
        os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'),
        'openstack-fastpath')
    return os.path.join(base, 'venvs')


def requirements_file(service):
    return os.path.join(REQUIREMENTS_DIR, '%s.txt' % service)


def is_pike(service):
    return service.startswith(PIKE_PREFIX)


def python27():
    """The CPython 2.7 interpreter Pike venvs are made from.

    ``FASTPATH_PYTHON27`` if set, else ``interpreter((2, 7))``.
    """
    return interpreter((2, 7), os.environ.get('FASTPATH_PYTHON27'))


def interpreter(version, configured=None):
    """A CPython of version ((major, minor)) that runs, outside any venv.

    configured if given; else pyenv's newest of that version (the
    ``pythonX.Y`` on PATH is a pyenv shim that fails unless
    PYENV_VERSION names it, so the real binary is preferred); else a
    ``pythonX.Y`` on PATH that runs.
    """
    name = 'python%d.%d' % version
    candidates = [configured] if configured else sorted(glob.glob(
        os.path.expanduser('~/.pyenv/versions/%d.%d.*/bin/%s'
                           % (version + (name,)))),
        reverse=True) + [name]
    for candidate in candidates:
        try:
            subprocess.run([candidate, '-c', 'import sys; '
                            'assert sys.version_info[:2] == %r'
                            % (tuple(version),)],
                           check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError):
            continue
        return candidate
    raise RuntimeError('no working CPython %d.%d (tried %s)'
                       % (version + (', '.join(candidates),)))


def _named_files(requirements):
    """The constraint and requirement files a requirement file names.

    pip reads them relative to the file that names them; a changed pin
    there must build a new venv as a changed line here does.
    """
    named = []
    with open(requirements) as f:
        for line in f:
            words = line.split()
            if len(words) == 2 and words[0] in ('-c', '-r'):
                named.append(os.path.join(os.path.dirname(requirements),
                                          words[1]))
    return named


def series_files(series):
    """The ``series`` file of patches/SERIES and the patches it lists."""
    directory = os.path.join(PATCHES_DIR, series)
    with open(os.path.join(directory, 'series')) as f:
        names = [line.split('#')[0].strip() for line in f]
    return [os.path.join(directory, 'series')] + [
        os.path.join(directory, name) for name in names if name]


def venv_key(service):
    digest = hashlib.sha256()
    patches = [name for series in SERIES.get(service, ())
               for name in series_files(series)]
    for name in [requirements_file(service)] + _named_files(
            requirements_file(service)) + patches:
        with open(name, 'rb') as f:
            digest.update(f.read())
    if is_pike(service):
        with open(PIKE_CONSTRAINTS, 'rb') as f:
            digest.update(f.read())
        digest.update(b'2.7')
    else:
        digest.update(('%d.%d' % sys.version_info[:2]).encode())
    digest.update(RECIPE_VERSION.encode())
    return digest.hexdigest()[:16]


def venv_path(service):
    return os.path.join(cache_root(), '%s-%s' % (service, venv_key(service)))


def venv_env(venv, extra=None):
    """The environment of a process run from ``venv`` (3.x or 2.7).

    Without the test runner's own venv: uWSGI reads VIRTUAL_ENV to pick
    its Python home, and a 2.7 service would import tox's 3.x packages.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in ('VIRTUAL_ENV', 'PYTHONHOME', 'PYTHONPATH',
                        'PYTHONWARNINGS', 'PYTHONDONTWRITEBYTECODE')}
    env['VIRTUAL_ENV'] = venv
    env['PATH'] = os.path.join(venv, 'bin') + ':' + env.get('PATH', '')
    env.update(extra or {})
    return env


@contextlib.contextmanager
def _locked(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(cmd, log):
    log.write(('+ %s\n' % ' '.join(cmd)).encode())
    log.flush()
    # Nothing of the calling venv (tox's) may leak into the build.
    env = {k: v for k, v in os.environ.items()
           if k not in ('VIRTUAL_ENV', 'PYTHONHOME', 'PYTHONPATH')}
    subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT,
                   env=env)


def base_python():
    """The interpreter this one was made from, outside any venv.

    A venv made from tox's venv would point its ``home`` at tox's env
    and break when that env is recreated or its worktree removed.
    """
    candidate = os.path.join(sys.base_prefix, 'bin',
                             'python%d.%d' % sys.version_info[:2])
    return candidate if os.path.exists(candidate) else sys.executable


def apply_series(venv, series, log):
    """``patch -p1 --fuzz=0`` each patch of a series into site-packages.

    The series are made against the released sdists; the wheels pip
    installs hold the same files at the same paths under site-packages
    (tests included), so they apply there as to the unpacked sdist.
    """
    site = glob.glob(os.path.join(venv, 'lib', 'python*', 'site-packages'))
    for patch in series_files(series)[1:]:
        _run(['patch', '-p1', '--fuzz=0', '--forward', '--batch',
              '-d', site[0], '-i', patch], log)


def ensure_venv(service, python=None):
    """Return the venv for ``service``, building it if the cache misses.

    The complete marker is written last, so an interrupted build is
    thrown away and redone rather than used half-installed.
    """
    path = venv_path(service)
    marker = os.path.join(path, '.fastpath-complete')
    with _locked(path):
        # A marker without a working interpreter (its base removed) is
        # built again.
        if os.path.exists(marker) and os.path.exists(
                os.path.join(path, 'bin', 'python')):
            LOG.info('%s venv: cached at %s', service, path)
            return path
        shutil.rmtree(path, ignore_errors=True)
        LOG.info('%s venv: building at %s', service, path)
        logfile = path + '.build.log'
        with open(logfile, 'wb') as log:
            pip = os.path.join(path, 'bin', 'pip')
            try:
                if is_pike(service):
                    # virtualenv<20.22 seeds pip 20.3.4, the last for 2.7.
                    _run([sys.executable, '-m', 'virtualenv', '-q', '-p',
                          python or python27(), path], log)
                else:
                    _run([python or base_python(), '-m', 'venv', path], log)
                    _run([pip, 'install', '-q', '-U', 'pip', 'setuptools',
                          'wheel'], log)
                _run([pip, 'install', '-q', '-r',
                      requirements_file(service)], log)
                for series in SERIES.get(service, ()):
                    apply_series(path, series, log)
            except subprocess.CalledProcessError:
                LOG.error('%s venv build failed; see %s', service, logfile)
                raise
        with open(marker, 'w') as f:
            f.write(venv_key(service) + '\n')
        return path


def uwsgi_app(venv, module, script):
    """The uWSGI option that loads a service's WSGI application.

    ``module`` (``glance.wsgi.api``, whose ``application`` it is) where
    the installed release has it, else the release's own WSGI script
    (``glance-wsgi-api``) in the venv's bin, as devstack loaded it
    before the modules came (glance 2024.2, keystone 2025.1).
    """
    path = module.replace('.', os.sep) + '.py'
    if glob.glob(os.path.join(venv, 'lib', 'python*', 'site-packages',
                              path)):
        return 'module = %s:application' % module
    return 'wsgi-file = %s' % os.path.join(venv, 'bin', script)


def install_wheel(rundir, services):
    """pip install one wheel of this project, --no-deps, into services.

    As devstack's install phase does: not editable, and not from a
    service's working directory. The wheel is built by the first
    service's venv. Returns the log.
    """
    wheels = os.path.join(rundir, 'wheel')
    log = os.path.join(rundir, 'install.log')
    venv = ensure_venv(services[0])
    with open(log, 'ab') as out:
        _run([os.path.join(venv, 'bin', 'pip'), 'wheel', '-q', '--no-deps',
              '-w', wheels, os.path.dirname(TOOLS_DIR)], out)
        wheel = glob.glob(os.path.join(wheels, '*.whl'))[0]
        for service in services:
            _run([os.path.join(ensure_venv(service), 'bin', 'pip'),
                  'install', '-q', '--no-deps', '--force-reinstall', wheel],
                 out)
    return log


def main():
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    for service in sys.argv[1:] or SERVICES:
        print(ensure_venv(service))


if __name__ == '__main__':
    main()
