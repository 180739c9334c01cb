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
"""Pike's gnocchi dispatcher with O(1) metric and event lookups.

Enabled with ``- gnocchi-metriccache://`` in pipeline.yaml and
event_pipeline.yaml: Pike's DirectPublisher, registered under the same
name, loads the dispatcher of the URL's scheme. Only importable where
``ceilometer.dispatcher.gnocchi`` exists (Pike and Queens).
"""

from ceilometer.dispatcher import gnocchi

from ceilometer_metriccache import index
from ceilometer_metriccache import wiring


class MetricCacheDispatcher(gnocchi.GnocchiDispatcher):
    """GnocchiDispatcher whose lookups are dict hits, not fnmatch loops."""

    def __init__(self, conf):
        super(MetricCacheDispatcher, self).__init__(conf)
        wiring.install(self, conf, metric_patterns=True)
        # Pike's _get_resource_definition_from_metric and _from_event run
        # its fnmatch loops; called once per (resource, metric) group of
        # every batch, they are replaced on the instance by the index's
        # C-level lookups, which give the same answers without a Python
        # frame (about half the cost of a hit).
        self._get_resource_definition_from_metric = (
            self.metric_index.metric_lookup)
        self._get_resource_definition_from_event = (
            self.metric_index.event_lookup)

    def _is_swift_account_sample(self, sample):
        # Pike asks whether any swift_account definition matches, not
        # whether the resolved one is swift_account: keep that answer.
        return self.metric_index.any_swift_account(sample['counter_name'])

    def batch_measures(self, measures, resource_infos, stats):
        # Upstream creates a resource with every entry of its definition's
        # metrics, patterns included as literal metric names. Here a
        # definition with patterns contributes its literal names plus the
        # names its patterns matched in this batch for this resource.
        for resource_id, info in resource_infos.items():
            resource = info.get('resource', {})
            metrics = resource.get('metrics')
            if isinstance(metrics, index.PatternMetrics):
                resource['metrics'] = metrics.for_resource(
                    measures.get(resource_id, ()))
        return super(MetricCacheDispatcher, self).batch_measures(
            measures, resource_infos, stats)
