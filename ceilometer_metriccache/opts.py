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
               help='How many metric names, and separately how many event '
                    'types, that are not listed literally in the gnocchi '
                    'resource definitions file are remembered with their '
                    'resolved definition (or with "no definition"). The '
                    'least recently used name is forgotten first. Also '
                    'bounds how many unhandled names are remembered as '
                    'already logged. Names listed literally in the file '
                    'are always resolved by a dict lookup and do not count. '
                    'About 200 bytes per entry.'),
]


def register_opts(conf):
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
