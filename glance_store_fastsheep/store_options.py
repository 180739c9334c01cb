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
"""Where a fastsheep store reads its options, registered as it needs them.

Pike reads one store's options from ``[glance_store]``; multi-store
glance from the backend id's group, falling back to
``[backend_defaults]`` on the releases that have it. Every entry point
(the store, its locations, the commands) resolves the group the same
way here, so that a value set in one place is read in all of them.
"""

from glance_store import driver
from oslo_config import cfg
from oslo_log import log as logging

from glance_store_fastsheep import opts

LOG = logging.getLogger(__name__)


def store_conf(conf, backend_group):
    """Where one store reads its options: an object with one per attribute.

    Pike (single store): ``[glance_store]``. With ``enabled_backends``:
    the backend id's group, read through glance_store's
    ``BackendGroupConfiguration`` where it has one (as rbd does), so that
    a value left unset there comes from ``[backend_defaults]``; older
    multi-store releases read the backend's group alone.
    """
    if not backend_group:
        return conf.glance_store
    grafted = getattr(driver, 'BackendGroupConfiguration', None)
    if grafted is None:
        return getattr(conf, backend_group)
    return grafted(opts.SHEEPDOG_OPTS, backend_group, conf=conf)


def register_options(conf, backend_group, options=opts.SHEEPDOG_OPTS):
    """Register every option that is not registered yet, one by one.

    ``opts`` shares the in-tree driver's option objects where
    glance_store has one, so ``glance_store.register_opts`` and the
    base class see no duplicate. Those names registered first with
    other objects would still make the base class's single
    ``register_opts`` call stop at the first duplicate and leave the
    options added here unregistered; one by one, only the duplicate is
    skipped.
    """
    groups = [backend_group or 'glance_store']
    shared = getattr(driver, 'SHARED_CONF_GROUP', None)
    if backend_group and shared:
        # [backend_defaults], which store_conf falls back to.
        groups.append(shared)
    for group in groups:
        for opt in options:
            try:
                conf.register_opt(opt, group=group)
            except cfg.DuplicateOptError:
                pass


def warn_ignored_defaults(conf, backend_group, name):
    """WARNING when the config has a section this store never reads.

    ``[backend_defaults]`` came with glance_store 5.0.0 (2025.2), and
    only a backend of ``enabled_backends`` reads it: an older
    glance_store, or a single store (``[glance_store]``), ignores all of
    it, silently (on Yoga a port set only there falls back to 7000).
    """
    if backend_group and getattr(driver, 'SHARED_CONF_GROUP', None):
        return
    if 'backend_defaults' not in conf.list_all_sections():
        return
    LOG.warning('fastsheep store %s: the config has a [backend_defaults] '
                'section, which %s never reads: set the store\'s '
                'options in [%s]', name, 'a single store' if not
                backend_group else 'this glance_store (before '
                '5.0.0, 2025.2)', backend_group or 'glance_store')
