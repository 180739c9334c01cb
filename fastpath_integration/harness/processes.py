"""Child processes for the integration services.

Every service runs in its own session so that stopping it takes its
workers (uWSGI, cotyledon) with it; a cleanup is registered before the
process is started, so a failure half-way through start-up still stops
it.
"""

import logging
import os
import shutil
import signal
import subprocess
import time

import fixtures
import requests

from fastpath_integration.harness import host

LOG = logging.getLogger(__name__)


class Terminated(BaseException):
    """SIGTERM or SIGHUP reached a harness: stop what it started."""


def on_signal(signum, frame):
    raise Terminated('signal %d' % signum)


def save_logs(rundir, log_dir):
    """Copy the run directory's logs and configuration to log_dir."""
    if not log_dir:
        return
    os.makedirs(log_dir, exist_ok=True)
    for dirpath, _dirs, files in os.walk(rundir):
        for name in files:
            if name.endswith(('.log', '.conf', '.yaml', '.ini', '.json')):
                src = os.path.join(dirpath, name)
                rel = os.path.relpath(src, rundir).replace(os.sep, '__')
                try:
                    shutil.copy(src, os.path.join(log_dir, rel))
                except OSError:
                    pass


def wait_until(predicate, timeout, what, proc=None, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError('%s: process exited with %s%s' % (
                what, proc.returncode, tail_hint(log)))
        try:
            if predicate():
                return
        except Exception:  # noqa: the service is still coming up
            pass
        time.sleep(0.3)
    raise RuntimeError('%s: not ready after %ss%s' % (
        what, timeout, tail_hint(log)))


def tail_hint(log, lines=30):
    if not log or not os.path.exists(log):
        return ''
    with open(log, 'rb') as f:
        text = f.read().decode('utf-8', 'replace').splitlines()
    return '\n--- last lines of %s ---\n%s' % (log, '\n'.join(text[-lines:]))


def http_ok(url):
    return requests.get(url, timeout=2).status_code < 500


def cpu_seconds(pid):
    """User + system CPU seconds of a process tree (live processes)."""
    return host.cpu_seconds(host.process_tree(pid))


def cpu_seconds_once_idle(pid):
    """CPU seconds of the tree once it used under 0.05 s in a second.

    A measured burst has been delivered when its last item is seen; the
    process may still be finishing what it has in hand, and that work
    belongs to the burst too.
    """
    last = cpu_seconds(pid)
    while True:
        time.sleep(1)
        now = cpu_seconds(pid)
        if now - last < 0.05:
            return now
        last = now


class Service(fixtures.Fixture):
    """A long-running child process with its log file.

    Stopped with ``stop_signal`` to its whole process group, then SIGKILL after
    ``stop_timeout``.
    """

    def __init__(self, name, cmd, log, env=None, cwd=None, stop_timeout=15,
                 stop_signal=signal.SIGTERM):
        super(Service, self).__init__()
        self.stop_signal = stop_signal
        self.name = name
        self.cmd = cmd
        self.log = log
        self.env = env
        self.cwd = cwd
        self.stop_timeout = stop_timeout
        self.proc = None

    def _setUp(self):
        self.addCleanup(self.stop)
        LOG.info('starting %s: %s', self.name, ' '.join(self.cmd))
        with open(self.log, 'ab') as out:
            self.proc = subprocess.Popen(
                self.cmd, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                start_new_session=True)

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc is None or self.proc.returncode is not None:
            return
        LOG.info('stopping %s', self.name)
        try:
            os.killpg(self.proc.pid, self.stop_signal)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            LOG.warning('%s ignored SIGTERM; killing', self.name)
        # Workers that outlive their master are killed too.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.returncode is None:
            self.proc.wait()

    def wait_ready(self, predicate, timeout, what=None):
        wait_until(predicate, timeout, what or self.name, self.proc,
                   self.log)


def run(cmd, log=None, **kwargs):
    """Run a set-up command, its output into ``log``; raise on failure."""
    LOG.info('running: %s', ' '.join(cmd))
    if log is None:
        return subprocess.run(cmd, check=True, **kwargs)
    with open(log, 'ab') as out:
        out.write(('+ %s\n' % ' '.join(cmd)).encode())
        out.flush()
        try:
            return subprocess.run(cmd, check=True, stdout=out,
                                  stderr=subprocess.STDOUT, **kwargs)
        except subprocess.CalledProcessError as e:
            raise RuntimeError('%s failed (%s)%s' % (
                cmd[0], e.returncode, tail_hint(log)))
