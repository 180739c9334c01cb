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
"""The ``gnocchi-metriccache`` publisher of whichever ceilometer is here.

Decided once, at import time, by what the installed ceilometer provides:

* Queens and later have ``ceilometer.publisher.gnocchi``: the publisher is
  a subclass of its GnocchiPublisher (current_publisher.py).
* Pike has only the gnocchi dispatcher: the publisher is Pike's own
  DirectPublisher, which loads the ``ceilometer.dispatcher.meter`` and
  ``ceilometer.dispatcher.event`` driver named by the URL scheme, i.e.
  this plugin's MetricCacheDispatcher (pike_dispatcher.py).
"""

try:
    from ceilometer.publisher import gnocchi as _current
except ImportError:
    _current = None

if _current is not None:
    from ceilometer_metriccache.current_publisher import (  # noqa: F401
        MetricCachePublisher)
else:
    from ceilometer.publisher.direct import (  # noqa: F401
        DirectPublisher as MetricCachePublisher)
