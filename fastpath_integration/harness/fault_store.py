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
"""The store a fault campaign run drives, configured as glance would.

A run uploads, downloads and deletes through a fastsheep store (the
native client) whose timeouts are small enough that a held or delayed
request makes it give up and fail over within the run, then checks the
result with a new store of the same configuration without the proxy.
glance_store is imported only when a store is made: the campaign's
module loads (and skips) where glance_store is not installed.
"""

import hashlib
import io

STALL = 1.0
TRANSFER_TIMEOUT = 8.0
FAILOVER_ATTEMPTS = 4


def store_errors():
    """glance_store's errors: a failure raised as one of them is clear.

    A clear failure is also one with a message; anything else a store
    raises is an unclear failure of the run.
    """
    from glance_store import exceptions
    return (exceptions.GlanceStoreException, exceptions.BackendException)


def make_store(port, entry_points=(), **overrides):
    """A configured fastsheep store (native client) at 127.0.0.1:port."""
    from glance_store import backend
    from oslo_config import cfg

    from glance_store_fastsheep import store
    conf = cfg.ConfigOpts()
    conf.register_opts(backend._STORE_OPTS, group='glance_store')
    conf([], project='glance')
    store.Store(conf)
    values = {'sheepdog_store_client': 'native',
              'sheepdog_store_port': port,
              'sheepdog_store_addresses': ['127.0.0.1:%d' % entry
                                           for entry in entry_points],
              'sheepdog_store_stall_timeout': STALL,
              'sheepdog_store_transfer_timeout': TRANSFER_TIMEOUT,
              'sheepdog_store_failover_attempts': FAILOVER_ATTEMPTS}
    values.update(overrides)
    for name, value in values.items():
        conf.set_override(name, value, group='glance_store')
    sd = store.Store(conf)
    sd.configure(re_raise_bsc=True)
    return sd, conf


def location(conf, uri):
    from glance_store import location as glance_location

    from glance_store_fastsheep import store
    return glance_location.Location('sheepdog', store.StoreLocation, conf,
                                    uri=uri)


def add(sd, name, data, size):
    from glance_store_fastsheep import store
    if store.MULTIHASH:
        return sd.add(name, io.BytesIO(data), size, 'sha512')
    return sd.add(name, io.BytesIO(data), size)


def read(sd, loc):
    """(md5, length) of what get() yields."""
    stream, _length = sd.get(loc)
    digest = hashlib.md5()
    length = 0
    for piece in stream:
        digest.update(piece)
        length += len(piece)
    return digest.hexdigest(), length
