"""Service virtualenvs, built once and cached by a hash of what they hold.

Each service runs from its own venv, as devstack and distributions keep
them apart: glance, gnocchi and ceilometer pin conflicting libraries. A
fresh machine builds them (a few minutes, uWSGI and psycopg2 compile);
re-runs reuse them from the cache, keyed by the requirement file, the
interpreter version and this module's build recipe, so a changed pin
builds a new venv instead of patching an old one.
"""

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys

LOG = logging.getLogger(__name__)

REQUIREMENTS_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))),
    'tools', 'integration', 'requirements')

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


def venv_key(service):
    digest = hashlib.sha256()
    with open(requirements_file(service), 'rb') as f:
        digest.update(f.read())
    digest.update(('%d.%d' % sys.version_info[:2]).encode())
    digest.update(RECIPE_VERSION.encode())
    return digest.hexdigest()[:16]


def venv_path(service):
    return os.path.join(cache_root(), '%s-%s' % (service, venv_key(service)))


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


def ensure_venv(service, python=None):
    """Return the venv for ``service``, building it if the cache misses.

    The complete marker is written last, so an interrupted build is
    thrown away and redone rather than used half-installed.
    """
    path = venv_path(service)
    marker = os.path.join(path, '.fastpath-complete')
    with _locked(path):
        if os.path.exists(marker):
            LOG.info('%s venv: cached at %s', service, path)
            return path
        shutil.rmtree(path, ignore_errors=True)
        LOG.info('%s venv: building at %s', service, path)
        logfile = path + '.build.log'
        with open(logfile, 'wb') as log:
            try:
                _run([python or sys.executable, '-m', 'venv', path], log)
                pip = os.path.join(path, 'bin', 'pip')
                _run([pip, 'install', '-q', '-U', 'pip', 'setuptools',
                      'wheel'], log)
                _run([pip, 'install', '-q', '-r',
                      requirements_file(service)], log)
            except subprocess.CalledProcessError:
                LOG.error('%s venv build failed; see %s', service, logfile)
                raise
        with open(marker, 'w') as f:
            f.write(venv_key(service) + '\n')
        return path


def main():
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    for service in sys.argv[1:] or SERVICES:
        print(ensure_venv(service))


if __name__ == '__main__':
    main()
