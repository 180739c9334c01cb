# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""``fastsheep-locations``: which backend of a glance config serves a location.

A cloud that leaves Pike's single ``[glance_store]`` for multi-store
config keeps its image locations as they were written. Current glance
gives a location that carries no backend id to the backend whose
``url_prefix`` begins it (glance's ``store_utils._get_store_id_from_uri``,
run lazily by ``authorization.lazy_update_store_info``), so a location
written through another sheep's address, or in the pre-Mitaka
``sheepdog://IMAGE`` form, belongs to no backend and cannot be read. This
command tells the operator which locations a config serves before glance
runs on it.

It builds the stores (``glance_stores.Checker``) with glance_store's own
code, as glance-api does at start-up
(``multi_backend.create_multi_stores``, or ``backend.create_stores`` for
a single-store config), so every driver computes its own ``url_prefix``
and parses its own locations. That also means it configures every
backend as glance-api would: it asks each sheepdog cluster to answer,
and the file store checks (and creates) its directory. Run it where
glance-api runs, as its user, with its config. See
doc/source/migration.rst.
"""

from __future__ import print_function

import logging
import sys

from oslo_config import cfg

from glance_store_fastsheep.cmd import glance_stores
from glance_store_fastsheep.cmd import location_input

LOG = logging.getLogger(__name__)

# Exit statuses: every location served, some not, or nothing checked.
ALL_SERVED = 0
SOME_UNSERVED = 1
ERROR = 2

# glance's own definition (glance/common/config.py); glance_store reads it
# but leaves registering it to the service.
ENABLED_BACKENDS = cfg.DictOpt(
    'enabled_backends',
    help='Key:value pairs of store identifier and store type, as glance '
         'reads them.')

CLI_OPTS = [
    cfg.BoolOpt('unserved-only',
                default=False,
                help='Print only the locations no backend serves.'),
    cfg.StrOpt('locations',
               positional=True,
               required=False,
               default='-',
               help='File of locations (default: standard input): one URI '
                    'per line, or the JSON of `openstack image show -f '
                    'json` (one or several), a list of such objects, or '
                    'glance\'s GET /v2/images.'),
]

DESCRIPTION = ('Say which backend of a glance-api config serves each image '
               'location, and name the ones no backend serves. Exit status: '
               '0 all served, 1 some served by no backend, 2 bad config or '
               'input.')


def load_config(args, cli_opts=None, prog='fastsheep-locations',
                description=DESCRIPTION):
    """A ConfigOpts read as glance-api reads its files, and the CLI options.

    args are command-line arguments: ``--config-file``/``--config-dir``
    as glance-api takes them, else glance-api's own default files.
    cli_opts are the command's own (this one's by default).
    """
    conf = cfg.ConfigOpts()
    conf.register_opt(ENABLED_BACKENDS)
    conf.register_cli_opts(CLI_OPTS if cli_opts is None else cli_opts)
    try:
        conf(args=args, project='glance', prog=prog,
             description=description,
             default_config_files=cfg.find_config_files(
                 project='glance', prog='glance-api'))
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError) as exc:
        raise glance_stores.ConfigError(str(exc))
    if not conf.config_file and not conf.config_dir:
        raise glance_stores.ConfigError(
            'no glance-api.conf found where glance-api looks for it; give '
            '--config-file')
    return conf


def check_locations(conf, text):
    """The Checker of conf and one Result per location in text."""
    checker = glance_stores.Checker(conf)
    found = location_input.parse_locations(text)
    return checker, [checker.check(loc) for loc in found]


def _summary(checker, results, out):
    unserved = [r for r in results if r.backend is None]
    searched = [r for r in results if r.how == 'search']
    print('%d location(s): %d served, %d served by no backend'
          % (len(results), len(results) - len(unserved), len(unserved)),
          file=out)
    if searched:
        print('  %d served only through glance_store\'s search by store type'
              % len(searched), file=out)
    if checker.mode != 'multi':
        return
    # Sheepdog locations that no backend takes, by the sheep they were
    # written through: each such address is a backend to add (same
    # cluster) or a set of locations to re-attribute.
    sheep = {}
    for result in unserved:
        uri = result.location.uri
        if uri.startswith(('sheepdog://', 'fastsheep://')):
            rest = uri.split('://', 1)[1]
            pieces = rest.rsplit(':', 2)
            if len(pieces) == 3:
                through = 'sheepdog://%s:%s:' % tuple(pieces[:2])
            else:
                through = 'sheepdog://IMAGE (no address)'
            sheep[through] = sheep.get(through, 0) + 1
    for prefix, count in sorted(sheep.items()):
        print('  %d unserved through %s' % (count, prefix), file=out)


def command_logging(err):
    """Warnings on err while the stores are built; the handler to remove.

    glance_store lists every installed driver's options; one whose
    library is missing is reported by stevedore, although only the
    configured ones matter (an unloadable one is a ConfigError).
    """
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter('%(levelname)s %(name)s: '
                                           '%(message)s'))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.WARNING)
    logging.getLogger('stevedore').setLevel(logging.CRITICAL)
    return handler


def main(argv=None, stdin=None, out=None, err=None):
    """The console script; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    handler = command_logging(err)
    try:
        conf = load_config(sys.argv[1:] if argv is None else argv)
        text = location_input.read_input(conf.locations, stdin)
        checker, results = check_locations(conf, text)
    except glance_stores.ConfigError as exc:
        print('fastsheep-locations: bad config: %s' % exc, file=err)
        return ERROR
    except location_input.InputError as exc:
        print('fastsheep-locations: bad input: %s' % exc, file=err)
        return ERROR
    finally:
        logging.getLogger().removeHandler(handler)
    for backend_id, prefix in sorted(checker.prefixes.items()):
        if not prefix:
            print('fastsheep-locations: backend %s has no url_prefix (see '
                  'the warnings above): glance gives it no location that '
                  'lacks a backend id' % backend_id, file=err)
    for result in results:
        loc = result.location
        if result.backend is not None:
            if conf.unserved_only:
                continue
            line = 'served    %s %s' % (result.backend, loc.uri)
            if result.how == 'search':
                line += (' (no backend id: glance_store finds it by store '
                         'type for reads and deletes only)')
        else:
            line = 'UNSERVED  - %s: %s' % (loc.uri, result.reason)
        if loc.image:
            line += ' (image %s)' % loc.image
        print(line, file=out)
    _summary(checker, results, out)
    if any(r.backend is None for r in results):
        return SOME_UNSERVED
    return ALL_SERVED


def console_main():
    sys.exit(main())
