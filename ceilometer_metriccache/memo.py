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
anything remembered per name must stay bounded: this map evicts the least
recently used entry one at a time, never everything at once (clearing the
whole cache when full is what made oslo.utils' fallback fnmatch thrash).

One lock guards every operation and nothing inside the lock can block or
yield, so the map is safe under native threads and under eventlet (whether
or not ``threading`` was monkey-patched before this module was imported).
"""

import collections
import threading


class BoundedMemo(object):
    """Map with at most ``maxsize`` entries, least recently used evicted."""

    def __init__(self, maxsize):
        maxsize = int(maxsize)
        if maxsize < 1:
            raise ValueError('maxsize must be at least 1, got %r' % maxsize)
        self.maxsize = maxsize
        # OrderedDict is in 2.7 and 3.1+; vermin counts 3.0 as a target.
        self._data = collections.OrderedDict()  # novermin
        self._lock = threading.Lock()
        # Python 3 moves an entry to the end in C; Python 2.7's
        # OrderedDict has no move_to_end, pop and re-insert does the same.
        self._move_to_end = getattr(self._data, 'move_to_end', None)

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        with self._lock:
            return key in self._data

    def get(self, key, default=None):
        """Return the value for key and mark it most recently used."""
        with self._lock:
            try:
                value = self._data[key]
            except KeyError:
                return default
            if self._move_to_end is not None:
                self._move_to_end(key)
            else:
                del self._data[key]
                self._data[key] = value
            return value

    def put(self, key, value):
        """Store key, evicting the least recently used entry when full.

        Returns the value now stored for key: when two threads resolve the
        same key at once, both get the first stored value, so callers that
        mutate the value share one object.
        """
        with self._lock:
            if key in self._data:
                return self._data[key]
            while len(self._data) >= self.maxsize:
                self._data.popitem(last=False)
            self._data[key] = value
            return value

    def add(self, key):
        """Remember key; True when it was not remembered already."""
        with self._lock:
            if key in self._data:
                return False
            while len(self._data) >= self.maxsize:
                self._data.popitem(last=False)
            self._data[key] = True
            return True

    def keys(self):
        """Snapshot of the keys, least recently used first."""
        with self._lock:
            return list(self._data)


class BoundedNameSet(object):
    """The ``set`` upstream uses to log "not handled" once per name.

    Upstream keeps every name it has ever warned about; under a stream of
    distinct unknown names that set grows without limit. This keeps the
    ``in`` / ``add`` interface upstream code uses, within a bound: a name
    is warned about again only after ``maxsize`` other names pushed it out.
    """

    def __init__(self, maxsize):
        self._memo = BoundedMemo(maxsize)

    @property
    def maxsize(self):
        return self._memo.maxsize

    def __contains__(self, name):
        # Upstream checks, warns, then adds; the agent's threads run that
        # concurrently, so two of them could both pass the check and warn
        # twice (seen with the real agent). The first check claims the
        # name: exactly one caller sees it missing.
        return not self._memo.add(name)

    def __len__(self):
        return len(self._memo)

    def add(self, name):
        self._memo.add(name)
