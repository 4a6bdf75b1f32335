"""Kafka's ZooKeeper layout: the paths and the JSON of each znode, as Kafka's ZooKeeper-mode brokers write them.

Pure data (no ZooKeeper connection here): each znode is a frozen dataclass with ``to_json() -> bytes`` and
``from_json(bytes)``, so a tool that reads Kafka's znodes reads ours, and ours read theirs.

====================================================  =========  ==================================================
path                                                  kind       JSON
====================================================  =========  ==================================================
/brokers/ids/<id>                                     ephemeral  BrokerRegistration (version 5); its czxid is the
                                                                 broker epoch
/brokers/topics/<topic>                               persistent TopicAssignment (version 3, "partitions":
                                                                 {"0": [1, 2]}, "topic_id" as base64 when known)
/brokers/topics/<topic>/partitions/<p>/state          persistent PartitionState (version 1); the znode's version is
                                                                 the partition epoch
/controller                                           ephemeral  ControllerRegistration (version 2)
/controller_epoch                                     persistent the epoch as decimal text; writes are fenced on
                                                                 this znode's version
/config/topics/<topic>                                persistent TopicConfig (version 1, string values)
/config/changes/config_change_<seq>                   sequential ConfigChangeNotification (version 2)
/admin/delete_topics/<topic>                          persistent empty
/admin/reassign_partitions                            persistent ReassignPartitions (version 1): moves asked for
                                                                 by a tool older than KIP-455
/latest_producer_id_block                             persistent ProducerIdBlock (version 1, bounds as strings)
/cluster/id                                           persistent ClusterIdZNode ("version": "1", a string)
====================================================  =========  ==================================================

Timestamps are milliseconds since the epoch written as JSON strings, as Kafka does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from samsa.topic_partition import TopicPartition

__all__ = [
    "ADMIN_DELETE_TOPICS",
    "ADMIN_REASSIGN_PARTITIONS",
    "BROKER_IDS",
    "BROKER_TOPICS",
    "CLUSTER_ID",
    "CONFIG_BROKERS",
    "CONFIG_CHANGES",
    "CONFIG_TOPICS",
    "CONTROLLER",
    "CONTROLLER_EPOCH",
    "LOG_DIR_EVENTS",
    "PERSISTENT_PATHS",
    "PRODUCER_ID_BLOCK",
    "BrokerRegistration",
    "ClusterIdZNode",
    "ConfigChangeNotification",
    "ControllerRegistration",
    "Endpoint",
    "LogDirEventNotification",
    "PartitionState",
    "ProducerIdBlock",
    "ReassignPartitions",
    "TopicAssignment",
    "TopicConfig",
    "ZNodeFormatError",
    "broker_path",
    "partition_state_path",
    "topic_config_path",
    "topic_path",
]

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_CHANGES = "/config/changes"
ADMIN_DELETE_TOPICS = "/admin/delete_topics"
ADMIN_REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CLUSTER_ID = "/cluster/id"
LOG_DIR_EVENTS = "/log_dir_event_notification"

# Created by every broker at start when missing (Kafka also creates the notification paths it no longer uses).
PERSISTENT_PATHS = (
    BROKER_IDS,
    BROKER_TOPICS,
    "/brokers/seqid",
    CONFIG_CHANGES,
    CONFIG_TOPICS,
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
    ADMIN_DELETE_TOPICS,
    "/isr_change_notification",
    LOG_DIR_EVENTS,
    "/consumers",
)

NO_LEADER = -1


class ZNodeFormatError(ValueError):
    """A znode whose bytes are not the JSON its path holds (path and reason in the message)."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def _dump(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _load(data: bytes | None, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data or b"")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZNodeFormatError(f"{what}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ZNodeFormatError(f"{what}: expected a JSON object, found {type(value).__name__}")
    return value


@contextmanager
def _decoding(what: str) -> Iterator[None]:
    """Turns a wrong type or value anywhere in a znode's JSON into ZNodeFormatError naming the path."""
    try:
        yield
    except ZNodeFormatError:
        raise
    except (TypeError, ValueError, AttributeError) as exc:
        raise ZNodeFormatError(f"{what}: {exc}") from None


def _field(value: dict[str, Any], key: str, what: str) -> Any:
    try:
        return value[key]
    except KeyError:
        raise ZNodeFormatError(f"{what}: missing field {key!r}") from None


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener of a broker: ``PLAINTEXT://127.0.0.1:9092`` is listener PLAINTEXT, protocol PLAINTEXT."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def url(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"

    @classmethod
    def parse(cls, url: str, protocols: dict[str, str]) -> Endpoint:
        listener, _, address = url.partition("://")
        host, _, port = address.rpartition(":")
        return cls(listener, host, int(port), protocols.get(listener, listener))


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """``/brokers/ids/<id>``: where a live broker listens. ``host``/``port`` name its first PLAINTEXT endpoint."""

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    timestamp_ms: int = 0
    features: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> bytes:
        plaintext = next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)
        return _dump(
            {
                "features": self.features,
                "listener_security_protocol_map": {e.listener: e.security_protocol for e in self.endpoints},
                "endpoints": [e.url() for e in self.endpoints],
                "jmx_port": -1,
                "port": plaintext.port if plaintext else -1,
                "host": plaintext.host if plaintext else None,
                "version": 5,
                "timestamp": str(self.timestamp_ms),
                "rack": self.rack,
            }
        )

    @classmethod
    def from_json(cls, broker_id: int, data: bytes | None) -> BrokerRegistration:
        what = broker_path(broker_id)
        value = _load(data, what)
        with _decoding(what):
            protocols = value.get("listener_security_protocol_map") or {}
            endpoints = tuple(Endpoint.parse(url, protocols) for url in _field(value, "endpoints", what))
            features = value.get("features") or {}
            return cls(broker_id, endpoints, value.get("rack"), int(value.get("timestamp", 0)), features)


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """``/brokers/topics/<topic>``: replicas per partition (leader preference first) and the topic id."""

    partitions: dict[int, tuple[int, ...]]
    topic_id: str | None = None
    adding_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def to_json(self) -> bytes:
        value: dict[str, Any] = {
            "partitions": _replica_map(self.partitions),
            "adding_replicas": _replica_map(self.adding_replicas),
            "removing_replicas": _replica_map(self.removing_replicas),
            "version": 3,
        }
        if self.topic_id is not None:
            value["topic_id"] = self.topic_id
        return _dump(value)

    @classmethod
    def from_json(cls, topic: str, data: bytes | None) -> TopicAssignment:
        what = topic_path(topic)
        value = _load(data, what)
        return cls(
            _parse_replica_map(_field(value, "partitions", what), what),
            value.get("topic_id"),
            _parse_replica_map(value.get("adding_replicas") or {}, what),
            _parse_replica_map(value.get("removing_replicas") or {}, what),
        )


def _replica_map(replicas: dict[int, tuple[int, ...]]) -> dict[str, list[int]]:
    return {str(partition): list(brokers) for partition, brokers in sorted(replicas.items())}


def _parse_replica_map(value: Any, what: str) -> dict[int, tuple[int, ...]]:
    if not isinstance(value, dict):
        raise ZNodeFormatError(f"{what}: a replica map must be a JSON object")
    with _decoding(what):
        return {int(partition): tuple(int(b) for b in brokers) for partition, brokers in value.items()}


@dataclass(frozen=True, slots=True)
class PartitionState:
    """``.../partitions/<p>/state``: leader (-1 when none), leader epoch, ISR, and the controller epoch that wrote it.

    The partition epoch is not here: it is the znode's version, read beside the data.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    recovering: bool = False

    def to_json(self) -> bytes:
        value: dict[str, Any] = {
            "controller_epoch": self.controller_epoch,
            "leader": self.leader,
            "version": 1,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
        }
        if self.recovering:
            value["leader_recovery_state"] = 1
        return _dump(value)

    @classmethod
    def from_json(cls, topic: str, partition: int, data: bytes | None) -> PartitionState:
        what = partition_state_path(topic, partition)
        value = _load(data, what)
        with _decoding(what):
            return cls(
                int(_field(value, "leader", what)),
                int(_field(value, "leader_epoch", what)),
                tuple(int(b) for b in _field(value, "isr", what)),
                int(_field(value, "controller_epoch", what)),
                value.get("leader_recovery_state", 0) == 1,
            )


@dataclass(frozen=True, slots=True)
class ReassignPartitions:
    """``/admin/reassign_partitions``: the target replicas of each partition a pre-KIP-455 tool asked to move,
    ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`` (a partition named twice: the
    last entry counts, as Kafka reads it). The controller starts the moves and shrinks the znode as they end."""

    partitions: dict[TopicPartition, tuple[int, ...]]

    def to_json(self) -> bytes:
        entries = [
            {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
            for tp, replicas in sorted(self.partitions.items())
        ]
        return _dump({"version": 1, "partitions": entries})

    @classmethod
    def from_json(cls, data: bytes | None) -> ReassignPartitions:
        what = ADMIN_REASSIGN_PARTITIONS
        value = _load(data, what)
        entries = _field(value, "partitions", what)
        if not isinstance(entries, list):
            raise ZNodeFormatError(f"{what}: partitions must be a JSON array")
        partitions: dict[TopicPartition, tuple[int, ...]] = {}
        with _decoding(what):
            for entry in entries:
                topic, replicas = _field(entry, "topic", what), _field(entry, "replicas", what)
                if not isinstance(topic, str) or not isinstance(replicas, list):
                    raise ZNodeFormatError(f"{what}: topic must be a string and replicas an array: {entry}")
                tp = TopicPartition(topic, int(_field(entry, "partition", what)))
                partitions[tp] = tuple(int(r) for r in replicas)
        return cls(partitions)


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """``/controller``: the broker elected controller."""

    broker_id: int
    timestamp_ms: int = 0

    def to_json(self) -> bytes:
        return _dump(
            {
                "version": 2,
                "brokerid": self.broker_id,
                "timestamp": str(self.timestamp_ms),
                "kraftControllerEpoch": -1,
            }
        )

    @classmethod
    def from_json(cls, data: bytes | None) -> ControllerRegistration:
        value = _load(data, CONTROLLER)
        with _decoding(CONTROLLER):
            return cls(int(_field(value, "brokerid", CONTROLLER)), int(value.get("timestamp", 0)))


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """``/config/topics/<topic>``: the topic's overrides of broker defaults, every value a string (a broker's
    dynamic configs in ``/config/brokers/<id>`` have the same form)."""

    config: dict[str, str]

    def to_json(self) -> bytes:
        return _dump({"version": 1, "config": dict(self.config)})

    @classmethod
    def from_json(cls, topic: str, data: bytes | None) -> TopicConfig:
        what = topic_config_path(topic)
        config = _load(data, what).get("config") or {}
        if not isinstance(config, dict):
            raise ZNodeFormatError(f"{what}: config must be a JSON object")
        return cls({str(key): str(value) for key, value in config.items()})


@dataclass(frozen=True, slots=True)
class ConfigChangeNotification:
    """``/config/changes/config_change_<seq>``: tells every broker which entity's config to re-read."""

    entity_path: str

    def to_json(self) -> bytes:
        return _dump({"version": 2, "entity_path": self.entity_path})

    @classmethod
    def from_json(cls, data: bytes | None) -> ConfigChangeNotification:
        return cls(str(_field(_load(data, CONFIG_CHANGES), "entity_path", CONFIG_CHANGES)))


@dataclass(frozen=True, slots=True)
class LogDirEventNotification:
    """``/log_dir_event_notification/log_dir_event_<seq>``: a broker's log dir failed (event 1, Kafka's only one).
    Samsa's brokers write it when a leader append finds the disk full, so that the controller moves their
    leaderships to in-sync followers (``Elections.log_dir_failed``)."""

    broker: int
    event: int = 1

    def to_json(self) -> bytes:
        return _dump({"version": 1, "broker": self.broker, "event": self.event})

    @classmethod
    def from_json(cls, data: bytes | None) -> LogDirEventNotification:
        loaded = _load(data, LOG_DIR_EVENTS)
        return cls(
            int(_field(loaded, "broker", LOG_DIR_EVENTS)), int(_field(loaded, "event", LOG_DIR_EVENTS))
        )


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """``/latest_producer_id_block``: the last block of producer ids handed to a broker, bounds inclusive."""

    broker_id: int
    block_start: int
    block_end: int

    BLOCK_SIZE = 1000

    def to_json(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "broker": self.broker_id,
                "block_start": str(self.block_start),
                "block_end": str(self.block_end),
            }
        )

    @classmethod
    def from_json(cls, data: bytes | None) -> ProducerIdBlock | None:
        """The stored block, or None for the empty znode a new cluster starts with."""
        if not data:
            return None
        value = _load(data, PRODUCER_ID_BLOCK)
        with _decoding(PRODUCER_ID_BLOCK):
            return cls(
                int(_field(value, "broker", PRODUCER_ID_BLOCK)),
                int(_field(value, "block_start", PRODUCER_ID_BLOCK)),
                int(_field(value, "block_end", PRODUCER_ID_BLOCK)),
            )

    @classmethod
    def after(cls, previous: ProducerIdBlock | None, broker_id: int) -> ProducerIdBlock:
        """The block following ``previous`` (the first block, [0, 999], when there is none)."""
        start = 0 if previous is None else previous.block_end + 1
        return cls(broker_id, start, start + cls.BLOCK_SIZE - 1)


@dataclass(frozen=True, slots=True)
class ClusterIdZNode:
    """``/cluster/id``: the cluster id every broker adopts (Kafka writes the version as a string here)."""

    cluster_id: str

    def to_json(self) -> bytes:
        return _dump({"version": "1", "id": self.cluster_id})

    @classmethod
    def from_json(cls, data: bytes | None) -> ClusterIdZNode:
        return cls(str(_field(_load(data, CLUSTER_ID), "id", CLUSTER_ID)))
