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
"""A bounded, thread-safe least-recently-used map.

Metric names and event types arrive from outside ceilometer's control, so
anything remembered per name must stay bounded: cachetools' LRUCache
(a ceilometer requirement since before Pike) evicts the least recently
used entry one at a time, never everything at once (clearing the whole
cache when full is what made oslo.utils' fallback fnmatch thrash).

LRUCache is not thread-safe (a read reorders it), so one lock guards every
operation; nothing inside the lock can block or yield, so the map is safe
under native threads and under eventlet (whether or not ``threading`` was
monkey-patched before this module was imported).
"""

import threading

import cachetools


class BoundedMemo(object):
    """Map with at most ``maxsize`` entries, least recently used evicted."""

    def __init__(self, maxsize):
        maxsize = int(maxsize)
        if maxsize < 1:
            raise ValueError('maxsize must be at least 1, got %r' % maxsize)
        self._cache = cachetools.LRUCache(maxsize)
        self._lock = threading.Lock()

    @property
    def maxsize(self):
        return self._cache.maxsize

    def __len__(self):
        return len(self._cache)

    def __contains__(self, key):
        """Whether key is remembered; does not count as a use."""
        with self._lock:
            return key in self._cache

    def get(self, key, default=None):
        """Return the value for key and mark it most recently used."""
        with self._lock:
            return self._cache.get(key, default)

    def put(self, key, value):
        """Store key, evicting the least recently used entry when full.

        Returns the value now stored for key: when two threads resolve the
        same key at once, both get the first stored value, so callers that
        mutate the value share one object.
        """
        with self._lock:
            try:
                return self._cache[key]
            except KeyError:
                self._cache[key] = value
                return value


class BoundedNameSet(object):
    """The ``set`` upstream uses to log "not handled" once per name.

    Upstream keeps every name it has ever warned about; under a stream of
    distinct unknown names that set grows without limit. This keeps the
    ``in`` / ``add`` interface upstream code uses, within a bound: a name
    is warned about again only after ``maxsize`` other names pushed it out.
    """

    def __init__(self, maxsize):
        self._memo = BoundedMemo(maxsize)

    def __contains__(self, name):
        # Upstream checks, warns, then adds, and the agent runs that in
        # several threads at once. A check that only read let every thread
        # that saw a new name before the first add warn: three lines for
        # one name in the integration suite's concurrent deliveries. So
        # the check claims the name: exactly one caller sees it missing,
        # and upstream's add after its warning finds it there.
        token = object()
        return self._memo.put(name, token) is not token

    def __len__(self):
        return len(self._memo)

    def add(self, name):
        self._memo.put(name, True)
