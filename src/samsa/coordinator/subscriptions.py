"""Reading the consumer protocol's member metadata: which topics a member subscribes to.

Layout (Kafka's ``ConsumerProtocolSubscription``): int16 version, then the version's body (big-endian; topics as an
int32-counted array of int16-length strings first in every version). A version newer than we know is read with
the newest layout we have and its trailing bytes ignored, as Kafka's consumer does. The generated module is imported
at the first join, not with the coordinator.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from samsa.protocol.errors import DecodeError

if TYPE_CHECKING:
    from samsa.protocol.messages.consumer_protocol import ConsumerProtocolSubscription

_VERSION = struct.Struct(">h")


def decode_subscription(metadata: bytes) -> ConsumerProtocolSubscription | None:
    """The subscription in a JoinGroup protocol's metadata, or None when it cannot be read."""
    from samsa.protocol.messages.consumer_protocol import CONSUMERPROTOCOLSUBSCRIPTION_DECODERS

    if len(metadata) < 2:
        return None
    (version,) = _VERSION.unpack_from(metadata)
    if version < 0:
        return None
    decoder = CONSUMERPROTOCOLSUBSCRIPTION_DECODERS[min(version, max(CONSUMERPROTOCOLSUBSCRIPTION_DECODERS))]
    try:
        subscription, _ = decoder(memoryview(metadata), 2)
    except (DecodeError, struct.error, IndexError, ValueError):
        return None
    return subscription


def topics_of_subscription(metadata: bytes) -> set[str] | None:
    subscription = decode_subscription(metadata)
    return None if subscription is None else set(subscription.topics)
