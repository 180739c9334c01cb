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
"""Time two versions of the patched MetricMap.get side by side, one run.

Why: once any wildcard definition exists, the earlier metric map patch
sent every name through its locked, pure-Python OrderedDict memo on 2.7;
the literal-first path answers names that no wildcard precedes from a
plain dict. Both versions get the stock resource file plus one wildcard
definition at its end, and look up every stock metric name (shuffled).

Usage: python measure-metric-map-fast-path.py BEFORE.py AFTER.py YAML
(run by tools/measure-metric-map-fast-path.sh, under Pike's 2.7 venv).
"""

import imp
import random
import sys
import timeit

from stevedore import extension
import yaml


def load(label, path, resources, plugins):
    module = imp.load_source('gnocchi_%s' % label, path)
    definitions = [module.ResourcesDefinition(r, 'low', plugins)
                   for r in resources]
    return module.MetricMap(definitions)


def main():
    before_path, after_path, yaml_path = sys.argv[1:4]
    with open(yaml_path) as f:
        stock = yaml.safe_load(f)['resources']
    resources = stock + [{'resource_type': 'custom',
                          'metrics': ['custom.*']}]
    names = [name for r in stock for name in r['metrics']]
    random.Random(1).shuffle(names)
    plugins = extension.ExtensionManager(
        namespace='ceilometer.event.trait.trait_plugin')
    maps = [('before', load('before', before_path, resources, plugins)),
            ('after', load('after', after_path, resources, plugins))]
    for label, metric_map in maps:
        assert [metric_map.get(n) is not None for n in names] == \
            [True] * len(names), label
    per_call = {}
    rounds = 200
    for label, metric_map in maps:
        get = metric_map.get
        best = min(timeit.repeat(lambda: [get(n) for n in names],
                                 number=rounds, repeat=5))
        per_call[label] = best / (rounds * len(names))
        print('%-6s %.3f us per lookup' % (label, per_call[label] * 1e6))
    print('Python %s, %d stock names, one wildcard definition last: '
          'before/after = %.1f' % (sys.version.split()[0], len(names),
                                   per_call['before'] / per_call['after']))


if __name__ == '__main__':
    main()
