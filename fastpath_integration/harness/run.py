"""Start the services, run the integration tests against them, stop all.

    python -m fastpath_integration.harness.run [--stock] -- CMD...

CMD (the test runner) gets FASTPATH_INTEGRATION_ENV, the path of a JSON
file saying where each service listens. Whatever happens (test failure,
start-up failure, SIGTERM, Ctrl-C) every service is stopped and the run
directory removed; service logs are copied to --log-dir first when one is
given.
"""

import argparse
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from fastpath_integration.harness import processes
from fastpath_integration.harness import stack

LOG = logging.getLogger('fastpath_integration')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--stock', action='store_true',
                        help='stock file store and gnocchi:// only')
    parser.add_argument('--log-dir', help='copy service logs here')
    parser.add_argument('command', nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ['--'] else args.command
    logging.basicConfig(level=logging.INFO,
                        format='%(asctime)s harness %(message)s')
    signal.signal(signal.SIGTERM, processes.on_signal)
    signal.signal(signal.SIGHUP, processes.on_signal)

    started = time.monotonic()
    rundir = tempfile.mkdtemp(prefix='fastpath-integration-')
    # The private PostgreSQL runs as the postgres user: let it in.
    os.chmod(rundir, 0o755)
    harness = stack.Stack(rundir, plugins=not args.stock)
    rc = 1
    try:
        try:
            harness.setUp()
        except Exception:
            # fixtures has already run every cleanup registered so far.
            LOG.exception('service start-up failed')
            harness = None
            raise
        up = time.monotonic()
        LOG.info('services up in %.1fs; env file %s', up - started,
                 harness.env_file)
        if command:
            env = dict(os.environ,
                       FASTPATH_INTEGRATION_ENV=harness.env_file)
            rc = subprocess.call(command, env=env)
            report = harness.info['report']
            if os.path.exists(report):
                with open(report) as f:
                    print('\n' + f.read(), flush=True)
            LOG.info('tests finished (rc=%d) in %.1fs', rc,
                     time.monotonic() - up)
        else:
            rc = 0
    except (KeyboardInterrupt, processes.Terminated) as e:
        LOG.error('interrupted: %s', e)
        rc = 130
    except Exception:
        rc = 1
    finally:
        processes.save_logs(rundir, args.log_dir)
        try:
            if harness is not None:
                harness.cleanUp()
        finally:
            shutil.rmtree(rundir, ignore_errors=True)
        LOG.info('integration wall time %.1fs (rc=%d)',
                 time.monotonic() - started, rc)
    return rc


if __name__ == '__main__':
    sys.exit(main())
