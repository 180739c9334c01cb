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
"""``fastsheep-orphans``: the VDIs no glance location names.

Space the cluster holds for no image: uploads that failed where their
cleanup could not finish, deletes that glance recorded while the
cluster was down, VDIs written by hand. The command lists every current
VDI of each sheepdog backend of a glance-api config, with its size, and
names the ones that no location of the input refers to. It never
deletes anything: an upload still running has no location yet, and a
VDI of another service on the same cluster (a Cinder volume) is no
image; the operator decides, with ``dog vdi delete`` or glance.

The config and the locations are read as ``fastsheep-locations`` reads
them (``glance_store_fastsheep.cmd.locations``): the same stores, built
as glance-api builds them, and the same input. A VDI counts as
referenced when any sheepdog location of the input names it, whichever
backend or address the location gives, so that two backends on one
cluster, or a location written through an old address, never make an
image look orphaned.
"""

from __future__ import print_function

import logging
import sys

from glance_store import exceptions
from glance_store import location as gs_location
from oslo_config import cfg

from glance_store_fastsheep.cmd import glance_stores
from glance_store_fastsheep.cmd import location_input
from glance_store_fastsheep.cmd import locations
from glance_store_fastsheep import store as fastsheep_store
from glance_store_fastsheep import store_location

# Exit statuses: no orphan, some orphans, nothing (or not all) checked.
NO_ORPHAN = 0
SOME_ORPHANS = 1
ERROR = 2

CLI_OPTS = [
    cfg.StrOpt('locations',
               positional=True,
               required=False,
               default='-',
               help='File of every location glance holds (default: '
                    'standard input), in any form fastsheep-locations '
                    'reads.'),
]

DESCRIPTION = ('List the VDIs of each sheepdog backend of a glance-api '
               'config that no image location names, with their sizes; '
               'delete nothing. Exit status: 0 none, 1 some, 2 bad config, '
               'bad input or a cluster that could not be listed.')


def referenced_names(found):
    """The VDI names the sheepdog locations among found name."""
    names = set()
    for loc in found:
        for scheme in store_location.SCHEMES:
            prefix = scheme + '://'
            if loc.uri.startswith(prefix):
                # ADDRESS:PORT:IMAGE, or the pre-Mitaka IMAGE alone.
                names.add(loc.uri[len(prefix):].rsplit(':', 2)[-1])
    return names


def sheepdog_stores(checker):
    """(backend, store) of every fastsheep store checker built."""
    if checker.mode == 'multi':
        maps = [(backend_id, info['store']) for stores in
                gs_location.SCHEME_TO_CLS_BACKEND_MAP.values()
                for backend_id, info in stores.items()]
    else:
        maps = [(info['store_entry'], info['store']) for info in
                gs_location.SCHEME_TO_CLS_MAP.values()]
    found = {}
    for backend, instance in maps:
        if isinstance(instance, fastsheep_store.Store):
            found.setdefault(backend, instance)
    return sorted(found.items())


def audit(checker, names, out, err):
    """Print each backend's unreferenced VDIs; the exit status."""
    status = NO_ORPHAN
    backends = sheepdog_stores(checker)
    if not backends:
        print('fastsheep-orphans: the config has no fastsheep backend',
              file=err)
        return ERROR
    for backend, instance in backends:
        try:
            vdis = instance.client.vdis()
        except (exceptions.BackendException,
                exceptions.GlanceStoreException) as exc:
            print('fastsheep-orphans: could not list the VDIs of backend '
                  '%s: %s' % (backend, glance_stores.message(exc)), file=err)
            status = ERROR
            continue
        orphans = [(name, size) for name, size in vdis if name not in names]
        for name, size in orphans:
            print('orphan    %s %s %d' % (backend, name, size), file=out)
        print('backend %s: %d VDI(s), %d named by no location (%d bytes)'
              % (backend, len(vdis), len(orphans),
                 sum(size for _name, size in orphans)), file=out)
        if orphans and status == NO_ORPHAN:
            status = SOME_ORPHANS
    return status


def main(argv=None, stdin=None, out=None, err=None):
    """The console script; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    handler = locations.command_logging(err)
    try:
        conf = locations.load_config(
            sys.argv[1:] if argv is None else argv, CLI_OPTS,
            'fastsheep-orphans', DESCRIPTION)
        text = location_input.read_input(conf.locations, stdin)
        checker = glance_stores.Checker(conf)
        names = referenced_names(location_input.parse_locations(text))
        return audit(checker, names, out, err)
    except glance_stores.ConfigError as exc:
        print('fastsheep-orphans: bad config: %s' % exc, file=err)
        return ERROR
    except location_input.InputError as exc:
        print('fastsheep-orphans: bad input: %s' % exc, file=err)
        return ERROR
    finally:
        logging.getLogger().removeHandler(handler)


def console_main():
    sys.exit(main())
