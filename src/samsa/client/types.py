"""The plain values :class:`~samsa.client.KafkaClient` returns: cluster metadata, fetched data, admin results."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from samsa.new_topic import NewTopic as NewTopic  # re-exported: the one definition
from samsa.topic_partition import TopicPartition as TopicPartition  # re-exported: the one definition


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int = 0
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    error_code: int
    partitions: dict[int, PartitionMetadata]
    internal: bool = False
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    cluster_id: str | None
    controller_id: int
    brokers: dict[int, tuple[str, int, str | None]]
    topics: dict[str, TopicMetadata]


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes
    aborted_transactions: tuple[tuple[int, int], ...] = ()  # (producer_id, first_offset)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool
    source: (
        int  # Kafka's ConfigSource: 1 topic, 2 dynamic broker, 3 dynamic default, 4 static broker, 5 default
    )
    is_sensitive: bool
    is_default: bool
    synonyms: tuple[ConfigSynonym, ...] = ()  # filled when asked for (``include_synonyms``), by precedence


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """Where else a config's value may come from: ``source`` as in :class:`ConfigEntry`."""

    name: str
    value: str | None
    source: int


@dataclass(frozen=True, slots=True)
class LogDirPartition:
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDir:
    path: str
    error_code: int
    partitions: dict[TopicPartition, LogDirPartition]
    total_bytes: int = -1
    usable_bytes: int = -1
