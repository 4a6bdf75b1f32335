"""An asyncio client for any Kafka-protocol broker, over :mod:`samsa.protocol` and :mod:`samsa.records`.

:class:`KafkaClient` (async) and :class:`SyncClient` (blocking, any thread) send any generated request
(``send``) and offer metadata, list_offsets, fetch, produce and admin calls. :mod:`samsa.client.records` builds
batches to produce and decodes fetched bytes. This package never imports the broker or storage.
"""

from .client import KafkaClient
from .errors import BrokerError, KafkaError
from .security import ClientSecurity, SecurityConfigError
from .sync import SyncClient
from .types import (
    ClusterMetadata,
    ConfigEntry,
    ConfigSynonym,
    FetchedPartition,
    LogDir,
    LogDirPartition,
    NewTopic,
    PartitionMetadata,
    TopicMetadata,
    TopicPartition,
)

__all__ = [
    "BrokerError",
    "ClientSecurity",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigSynonym",
    "FetchedPartition",
    "KafkaClient",
    "KafkaError",
    "LogDir",
    "LogDirPartition",
    "NewTopic",
    "PartitionMetadata",
    "SecurityConfigError",
    "SyncClient",
    "TopicMetadata",
    "TopicPartition",
]
