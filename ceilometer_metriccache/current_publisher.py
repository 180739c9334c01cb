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
"""Current ceilometer's gnocchi publisher with O(1) event type lookups.

Every query option of ``gnocchi://`` is parsed by the parent class, so
``gnocchi-metriccache://?filter_project=...&archive_policy=...`` means
what it means for ``gnocchi://``. Only importable where
``ceilometer.publisher.gnocchi`` exists (Queens and later).
"""

from ceilometer.publisher import gnocchi

from ceilometer_metriccache import index
from ceilometer_metriccache import opts
from ceilometer_metriccache import wiring


class MetricCachePublisher(gnocchi.GnocchiPublisher):
    """GnocchiPublisher with indexed event types and bounded name sets.

    Metric names keep upstream's semantics (its own ``metric_map``: literal
    names, last definition wins) unless ``[metriccache] wildcard_metrics``
    asks for Pike's (patterns, first match in file order).
    """

    def __init__(self, conf, parsed_url):
        super(MetricCachePublisher, self).__init__(conf, parsed_url)
        opts.register_opts(conf)
        wildcards = conf[opts.GROUP].wildcard_metrics
        wiring.install(self, conf, metric_patterns=wildcards)
        if wildcards:
            # Upstream's _is_swift_account_sample reads metric_map too, so
            # it follows the same semantics.
            self.metric_map = index.metric_map(self.metric_index.metrics)
        # Upstream's _get_resource_definition_from_event runs an fnmatch
        # loop per event; the index's C-level lookup gives its answers.
        self._get_resource_definition_from_event = (
            self.metric_index.event_lookup)
