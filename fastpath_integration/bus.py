"""Notifications on the bus, as OpenStack services and ceilometer's
polling agents send them."""

import datetime
import uuid

from oslo_config import cfg
import oslo_messaging


def notifier(transport_url, topic, exchange, publisher_id='fastpath.test'):
    """A Notifier publishing on ``exchange``.

    ceilometer listens on a fixed list of exchanges: ``ceilometer`` for
    samples from its polling agents, ``glance`` for glance's own
    notifications.
    """
    # The exchange is read from the transport's conf when it is built.
    oslo_messaging.set_transport_defaults(control_exchange=exchange)
    conf = cfg.ConfigOpts()
    conf([], project='fastpath-integration')
    transport = oslo_messaging.get_notification_transport(
        conf, url=transport_url)
    return oslo_messaging.Notifier(transport, publisher_id=publisher_id,
                                   driver='messagingv2', topics=[topic])


def sample(name, resource_id, volume=1.0, unit='B', metadata=None):
    """One sample as ceilometer's notifier publisher serialises it."""
    return {
        'counter_name': name,
        'counter_type': 'gauge',
        'counter_unit': unit,
        'counter_volume': volume,
        'user_id': 'fastpath-user',
        'project_id': 'fastpath-project',
        'resource_id': resource_id,
        'timestamp': datetime.datetime.utcnow().isoformat(),
        'resource_metadata': metadata or {},
        'source': 'openstack',
        'message_id': uuid.uuid4().hex,
    }


def send_samples(notifier_, samples):
    """Samples travel as a ``telemetry.polling`` notification."""
    notifier_.sample({}, 'telemetry.polling', {'samples': samples})
