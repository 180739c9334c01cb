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
"""A Gnocchi API stand-in behind a real gnocchiclient.

The tests stub gnocchi at its HTTP boundary: ceilometer talks to a real
``gnocchiclient.v1.client.Client`` whose keystoneauth session is this fake,
so request building, JSON encoding and error mapping are the real ones.
"""

import json
import re

import requests
import six

_RESOURCE = re.compile(r'^v1/resource/(?P<type>[^/]+)(/(?P<id>[^/]+))?$')
_SEARCH = re.compile(r'^v1/search/resource/(?P<type>[^/]+)$')
_BATCH = 'v1/batch/resources/metrics/measures'


def _response(status, body=None):
    resp = requests.Response()
    resp.status_code = status
    resp.url = 'http://gnocchi.test/'
    if body is not None:
        resp.headers['Content-Type'] = 'application/json'
        resp._content = json.dumps(body).encode('utf-8')
    else:
        resp._content = b''
    return resp


def _error(status, description):
    return _response(status, {'code': status, 'title': 'error',
                              'description': description})


class FakeGnocchiSession(object):
    """Just enough of a keystoneauth session to play Gnocchi 4."""

    def __init__(self):
        # id -> {'type': ..., 'attributes': {...}}
        self.resources = {}
        # (resource id, metric name) -> {'archive_policy_name', 'unit',
        #                                'measures'}
        self.metrics = {}
        self.requests = []
        self.archive_policies = []
        self.fail_batch = None

    # keystoneauth's Adapter calls this with a relative url.
    def request(self, url, method, **kwargs):
        url = url.split('?')[0].strip('/')
        body = kwargs.get('data') or kwargs.get('json')
        if isinstance(body, (bytes, six.text_type)):
            body = json.loads(body)
        self.requests.append((method, url, body))
        if url == _BATCH and method == 'POST':
            return self._batch(body)
        if url == 'v1/archive_policy' and method == 'POST':
            self.archive_policies.append(body)
            return _response(201, body)
        match = _SEARCH.match(url)
        if match and method == 'POST':
            return _response(200, [])
        match = _RESOURCE.match(url)
        if match and method == 'POST' and not match.group('id'):
            return self._create(match.group('type'), body)
        if match and method == 'PATCH' and match.group('id'):
            return self._update(match.group('type'), match.group('id'), body)
        return _error(404, 'The resource could not be found.')

    def get_endpoint(self, *args, **kwargs):
        return 'http://gnocchi.test'

    def _batch(self, body):
        if self.fail_batch is not None:
            return _error(*self.fail_batch)
        unknown = [rid for rid in body if rid not in self.resources]
        if unknown:
            return _error(400, {
                'cause': 'Unknown resources',
                'detail': [{'resource_id': rid, 'original_resource_id': rid}
                           for rid in sorted(unknown)]})
        for rid, metrics in body.items():
            for name, value in metrics.items():
                if isinstance(value, dict):
                    measures = value['measures']
                    policy = value.get('archive_policy_name')
                    unit = value.get('unit')
                else:
                    measures, policy, unit = value, None, None
                metric = self.metrics.setdefault(
                    (rid, name), {'archive_policy_name': policy,
                                  'unit': unit, 'measures': []})
                metric['measures'].extend(measures)
        return _response(202)

    def _create(self, resource_type, body):
        rid = body['id']
        if rid in self.resources:
            return _error(409, 'Resource %s already exists' % rid)
        attributes = dict((k, v) for k, v in body.items() if k != 'metrics')
        self.resources[rid] = {'type': resource_type,
                               'attributes': attributes}
        for name, spec in (body.get('metrics') or {}).items():
            spec = spec or {}
            self.metrics[(rid, name)] = {
                'archive_policy_name': spec.get('archive_policy_name'),
                'unit': spec.get('unit'), 'measures': []}
        return _response(201, dict(attributes, type=resource_type))

    def _update(self, resource_type, rid, body):
        if rid not in self.resources:
            return _error(404, 'Resource %s does not exist' % rid)
        self.resources[rid]['attributes'].update(body)
        return _response(200, self.resources[rid]['attributes'])


def gnocchi_client(session):
    from gnocchiclient.v1 import client
    return client.Client(session=session)
