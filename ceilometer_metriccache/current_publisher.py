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
"""Current ceilometer's gnocchi publisher with O(1) metric/event lookups.

Every query option of ``gnocchi://`` is parsed by the parent class, so
``gnocchi-metriccache://?filter_project=...&archive_policy=...`` means
what it means for ``gnocchi://``. Only importable where
``ceilometer.publisher.gnocchi`` exists (Queens and later).
"""

from ceilometer.publisher import gnocchi

from ceilometer_metriccache import index
from ceilometer_metriccache import wiring


class MetricCachePublisher(gnocchi.GnocchiPublisher):
    """GnocchiPublisher that honours wildcards without an fnmatch loop."""

    def __init__(self, conf, parsed_url):
        super(MetricCachePublisher, self).__init__(conf, parsed_url)
        wiring.install(self, conf)
        # Upstream's metric_map holds literal names only (last definition
        # wins on duplicates); this one follows file order and patterns.
        self.metric_map = index.MetricMap(self.metric_index.metrics)
        # Bound on the instance: no Python frame per event (see the
        # method below for what it answers).
        self._get_resource_definition_from_event = (
            self.metric_index.event_lookup)

    def _get_resource_definition_from_event(self, event_type):
        return self.metric_index.event(event_type)

    def _is_swift_account_sample(self, sample):
        return self.metric_index.is_swift_account(sample.name)
