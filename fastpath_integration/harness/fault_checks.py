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
"""What a fault campaign run is checked for, and the counts over runs.

After a run's quiet period a new store without the proxy reads back
every image the run's "glance" still holds, and a census of the sheep's
stores (``sheep_objects.Census``) finds what no image accounts for,
before and after the run's images are deleted. The checks only read
what the run recorded (``RunRecord``) and count into ``Results``: the
campaign decides what to run, this module what a run's outcome means.
"""

from fastpath_integration.harness import fault_store
from fastpath_integration.harness import sheep_objects
from fastpath_integration.harness import sheepdog


class Results(object):
    """Counts over the runs, and what each failing run found.

    ``silent_corruptions`` counts images (an image read wrong by several
    downloads and the final check counts once), ``leaks`` runs that left
    anything (``leaked_*``: what, by census line), the failures
    operations.
    """

    def __init__(self):
        self.runs = 0
        self.silent_corruptions = 0
        self.lost_images = 0
        self.unclear_failures = 0
        self.leaks = 0
        # What the leaks were: VDIs, data objects (lines of the census:
        # one per VDI id) and set attributes.
        self.leaked_vdis = 0
        self.leaked_objects = 0
        self.leaked_attributes = 0
        # Runs that left objects only on a sheep killed in the run
        # (``Census.down_leftovers``): sheep's, not counted as leaks.
        self.down_node_leftovers = 0
        self.clear_failures = 0
        self.successes = 0
        self.failed_runs = []

    @property
    def passed(self):
        return self.runs - len(self.failed_runs)

    def as_dict(self):
        return {'runs': self.runs,
                'silent_corruptions': self.silent_corruptions,
                'lost_images': self.lost_images,
                'unclear_failures': self.unclear_failures,
                'leaks': self.leaks,
                'leaked_vdis': self.leaked_vdis,
                'leaked_objects': self.leaked_objects,
                'leaked_attributes': self.leaked_attributes,
                'down_node_leftovers': self.down_node_leftovers,
                'clear_failures': self.clear_failures,
                'successes': self.successes,
                'failed_seeds': [seed for seed, _why in self.failed_runs]}


class RunRecord(object):
    """What one run did that its checks account for.

    ``baseline``: the object ids left before the run (earlier runs'
    leftovers on sheep killed then), not this run's wherever recovery
    moves them. ``killed``: indexes of the sheep the run killed;
    ``revived``: what only those held before they came back;
    ``corrupted``: names of the images found corrupted, each counted
    once; ``findings``: what makes the run fail, in order.
    """

    def __init__(self, schedule, baseline):
        self.schedule = schedule
        self.baseline = baseline
        self.killed = set()
        self.revived = {}
        self.corrupted = set()
        self.findings = []


def check_run(cluster, record, results, port, entry_points, say):
    """Read back, census, delete and census again, after the quiet period.

    The store is glance's configuration again (port, the proxy's, now
    fault-free: the locations glance holds name its address).
    """
    sd, conf = fault_store.make_store(port, entry_points)
    live = _read_back(cluster, record, results, sd, conf)
    census = sheep_objects.Census(cluster)
    leaked = set(census.leaks(live, record.killed, record.baseline,
                              record.revived))
    left = set(census.down_leftovers(live, record.killed, record.baseline,
                                     record.revived))
    _delete_images(record, results, sd, conf)
    census = sheep_objects.Census(cluster)
    leaked |= set(census.leaks(down=record.killed, known=record.baseline,
                               revived=record.revived))
    left |= set(census.down_leftovers(down=record.killed,
                                      known=record.baseline,
                                      revived=record.revived))
    _count_leftovers(record, results, leaked, left, say)


def _read_back(cluster, record, results, sd, conf):
    """Check every image glance holds; the names of their VDIs.

    An upload that returned success must read back byte-exact through
    get_size, get and ``dog vdi read``; one that cannot be read is lost,
    unless a delete of it failed (then it may be gone, or half).
    """
    errors = fault_store.store_errors()
    live = []
    for image in record.schedule.images:
        if image.uri is None or image.deleted:
            continue
        loc = fault_store.location(conf, image.uri)
        # The VDI's name is the upload attempt's (store.vdi_name).
        vdi = loc.store_location.image
        live.append(vdi)
        want = (image.md5, len(image.data))
        try:
            size = sd.get_size(loc)
            got = fault_store.read(sd, loc)
            dog = cluster.vdi_digest(vdi)
        except errors as exc:
            if not image.delete_failed:
                record.findings.append('lost image: %s (uploaded, never '
                                       'deleted) cannot be read: %s'
                                       % (image.name, exc))
                results.lost_images += 1
            continue
        except sheepdog.ClusterError as exc:
            if not image.delete_failed:
                record.findings.append('lost image: dog cannot read %s: %s'
                                       % (image.name, exc))
                results.lost_images += 1
            continue
        if size != len(image.data) or got != want or dog != want:
            record.findings.append(
                'silent corruption: %s (%s) reads back as size %d, '
                'get %r, dog %r; upload returned %r' % (
                    image.name, 'delete failed' if image.delete_failed
                    else 'active', size, got, dog, image.result))
            record.corrupted.add(image.name)
    return live


def _delete_images(record, results, sd, conf):
    """The run's images go: a delete that failed is retried here."""
    from glance_store import exceptions
    errors = fault_store.store_errors()
    for image in record.schedule.images:
        if image.uri is None or image.deleted:
            continue
        try:
            sd.delete(fault_store.location(conf, image.uri))
        except exceptions.NotFound:
            # An earlier delete's DEL_VDI that landed after it gave
            # up: glance's delete takes NotFound as done, and the
            # census after this counts what it may have left.
            if not image.delete_failed:
                record.findings.append('lost image: %s (never deleted) '
                                       'was gone after the quiet period'
                                       % image.name)
                results.lost_images += 1
        except errors as exc:
            record.findings.append('delete of %s after the quiet period '
                                   'failed: %s' % (image.name, exc))


def _count_leftovers(record, results, leaked, left, say):
    """Count leaks as the run's failure; a killed sheep's copies apart."""
    if left:
        results.down_node_leftovers += 1
        for line in sorted(left):
            say('faults:   seed %d: left on a sheep killed in the run '
                '(sheep keeps it; not a leak): %s'
                % (record.schedule.seed, line))
    if leaked:
        results.leaks += 1
        for line in leaked:
            kind = ('leaked_attributes' if line.startswith('attribute')
                    else 'leaked_vdis' if line.startswith('VDI')
                    else 'leaked_objects')
            setattr(results, kind, getattr(results, kind) + 1)
        record.findings.extend('leak: %s' % line for line in sorted(leaked))
