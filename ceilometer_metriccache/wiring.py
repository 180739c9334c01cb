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
"""What the Pike dispatcher and the current publisher share.

Both subclasses keep upstream's code paths and only swap the lookups they
call: after upstream has loaded the resource definitions, ``install``
builds the index over them and replaces the unbounded "already logged"
sets with bounded ones.
"""

from ceilometer_metriccache import index
from ceilometer_metriccache import memo
from ceilometer_metriccache import opts


def install(host, conf, metric_patterns):
    """Index ``host.resources_definition`` and bound its logged-name sets.

    ``metric_patterns``: index metric names with Pike's semantics too (see
    ``index.DefinitionIndex``); event types are always indexed.
    """
    opts.register_opts(conf)
    memo_size = conf[opts.GROUP].memo_size
    host.resources_definition = index.usable_definitions(
        host.resources_definition)
    host.metric_index = index.DefinitionIndex(
        host.resources_definition, memo_size, metric_patterns)
    host._already_logged_metric_names = memo.BoundedNameSet(memo_size)
    host._already_logged_event_types = memo.BoundedNameSet(memo_size)
    return host.metric_index
