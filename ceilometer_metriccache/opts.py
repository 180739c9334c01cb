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
"""Options of the metriccache plugin (``[metriccache]`` section)."""

from oslo_config import cfg

GROUP = 'metriccache'

OPTS = [
    cfg.IntOpt('memo_size',
               default=10000,
               min=16,
               help="""
How many names the plugin remembers, per kind.

Metric names and event types that no entry of the gnocchi resource
definitions file lists literally are resolved against its patterns once
and remembered with the answer ("no definition" included); the least
recently used name is forgotten first. The same bound applies to the names
remembered as already logged as not handled. Names listed literally are
resolved by a dict lookup and do not count. About 200 bytes per entry.

Possible values:
    * An integer of at least 16.

Related options:
    * ``wildcard_metrics``: on current ceilometer, metric names are only
      resolved against patterns when it is set.
"""),
    cfg.BoolOpt('wildcard_metrics',
                default=False,
                help="""
Match metric names against wildcard entries (current ceilometer only).

Since Queens, ceilometer's gnocchi publisher treats every entry of the
``metrics`` of a resource definition as a literal metric name, and a name
listed in several definitions goes to the last one. That is what the
``gnocchi-metriccache`` publisher does by default. Set this to restore
Pike's semantics: fnmatch patterns such as ``hardware.ipmi.*`` match
metric names, and the first definition in file order that matches wins.
On Pike (ceilometer 9.x) the dispatcher always has Pike's semantics and
this option is ignored.

Possible values:
    * False: upstream's current semantics, literal names, last one wins.
    * True: Pike's semantics, wildcards, first match in file order.

Related options:
    * ``memo_size``: bounds the names resolved against patterns.
"""),
]


def register_opts(conf):
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
