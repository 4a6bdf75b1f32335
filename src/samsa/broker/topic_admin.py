"""Creating, growing and deleting topics on this broker, with Kafka's error codes.

The single-broker default: this node holds every replica, so a replication factor above 1 is refused with
INVALID_REPLICATION_FACTOR, as Kafka refuses one larger than its live broker count. Topic ids are derived from
the topic name (a stable UUID), so they survive restarts without a metadata log.

Event-loop thread only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from samsa.new_topic import NewTopic
from samsa.protocol import ErrorCode
from samsa.storage.errors import InvalidConfigError
from samsa.storage.log_manager import InvalidPartitionsError, TopicExistsError, UnknownTopicError
from samsa.storage.topic import InvalidTopicError, TopicPartition, is_internal, validate_topic

if TYPE_CHECKING:
    import uuid

    from samsa.storage.log_manager import LogManager

    from .config import KafkaConfig
    from .replica_manager import ReplicaManager


@dataclass(frozen=True, slots=True)
class AdminResult:
    error: ErrorCode
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is ErrorCode.NONE


OK = AdminResult(ErrorCode.NONE)


def topic_id(topic: str) -> uuid.UUID:
    import uuid  # start-up time: imported at the first request that names a topic id

    return uuid.uuid5(uuid.NAMESPACE_URL, "samsa-topic:" + topic)


def check_new_topic(
    config: KafkaConfig, log_manager: LogManager, topic: NewTopic, brokers: int
) -> tuple[AdminResult, int, int]:
    """Kafka's checks of a CreateTopics entry against ``brokers`` live brokers, the broker's defaults
    (``config``) and the topic-level ones (``log_manager``): the result (OK when it may be created) with the
    partition count and replication factor after defaults (-1) are applied."""
    partitions, replication_factor = topic.num_partitions, topic.replication_factor
    try:
        validate_topic(topic.name)
    except InvalidTopicError as exc:
        return AdminResult(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)), partitions, replication_factor
    if partitions == -1:
        partitions = int(config.get("num.partitions"))
    if replication_factor == -1:
        replication_factor = int(config.get("default.replication.factor"))
    if partitions < 1:
        result = AdminResult(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    elif replication_factor < 1:
        result = AdminResult(
            ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        )
    elif replication_factor > brokers:
        result = AdminResult(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
            f"{replication_factor} cannot be reached because only {brokers} broker(s) are registered.",
        )
    else:
        try:
            log_manager.default_config.with_overrides(topic.configs)
            result = OK
        except InvalidConfigError as exc:
            result = AdminResult(ErrorCode.INVALID_CONFIG, str(exc))
    return result, partitions, replication_factor


def check_partition_count(topic: str, current: int, total: int) -> AdminResult:
    """Kafka's checks of a CreatePartitions entry growing ``topic`` from ``current`` partitions (0: no such
    topic) to ``total``."""
    if current == 0:
        return AdminResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist.")
    if total < current:
        return AdminResult(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested {total}.",
        )
    if total == current:
        return AdminResult(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    return OK


def check_added_assignment(
    current: int,
    total: int,
    replication_factor: int,
    assignments: Sequence[Sequence[int]] | None,
    brokers: Collection[int],
) -> AdminResult:
    """Kafka's checks of the replicas a CreatePartitions entry names for its new partitions (``assignments``,
    one broker list per partition added; None: the broker places them): one list per new partition, the topic's
    replication factor, no broker twice, only brokers the cluster knows."""
    if assignments is None:
        return OK
    bad = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    if len(assignments) != total - current:
        return AdminResult(
            bad,
            f"Increasing the number of partitions by {total - current} but {len(assignments)} assignments provided.",
        )
    for offset, replicas in enumerate(assignments):
        partition = current + offset
        if len(set(replicas)) != len(replicas):
            return AdminResult(
                bad,
                f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} "
                f"for partition id {partition}.",
            )
        if len(replicas) != replication_factor:
            return AdminResult(
                bad,
                f"Inconsistent replication factor between partitions, partition 0 has {replication_factor} "
                f"while partitions [{partition}] have replication factors [{len(replicas)}], respectively.",
            )
    unknown = sorted({b for replicas in assignments for b in replicas} - set(brokers))
    if unknown:
        return AdminResult(bad, f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.")
    return OK


def check_delete(config: KafkaConfig, exists: bool) -> AdminResult:
    """Kafka's checks of a DeleteTopics entry: the topic exists and ``delete.topic.enable`` allows it."""
    if not exists:
        return AdminResult(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
        )
    if not config.get("delete.topic.enable"):
        return AdminResult(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
    return OK


def already_exists(topic: str) -> AdminResult:
    return AdminResult(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.")


def create_topic(
    config: KafkaConfig,
    manager: LogManager,
    replicas: ReplicaManager,
    topic: NewTopic,
    *,
    validate_only: bool = False,
) -> AdminResult:
    if manager.partitions_of(topic.name):
        return already_exists(topic.name)
    checked, partitions, _ = check_new_topic(config, manager, topic, brokers=1)
    if not checked.ok or validate_only:
        return checked
    try:
        logs = manager.create_topic(topic.name, partitions, dict(topic.configs))
    except TopicExistsError as exc:
        return AdminResult(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc))
    except InvalidTopicError as exc:
        return AdminResult(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc))
    for index, partition_log in enumerate(logs):
        replicas.become_leader(TopicPartition(topic.name, index), partition_log)
    return OK


def auto_create_topic(
    config: KafkaConfig, manager: LogManager, replicas: ReplicaManager, topic: str
) -> AdminResult:
    """Create a topic on first use with the broker's defaults, when auto.create.topics.enable allows it."""
    if not config.get("auto.create.topics.enable") or is_internal(topic):
        return AdminResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    result = create_topic(config, manager, replicas, NewTopic(topic))
    if result.error is ErrorCode.TOPIC_ALREADY_EXISTS:
        return OK
    return result


def add_partitions(
    manager: LogManager,
    replicas: ReplicaManager,
    topic: str,
    total: int,
    assignments: Sequence[Sequence[int]] | None = None,
    *,
    validate_only: bool = False,
) -> AdminResult:
    """Grow ``topic`` to ``total`` partitions on this broker alone (``assignments`` may name only it)."""
    current = len(manager.partitions_of(topic))
    checked = check_partition_count(topic, current, total)
    if checked.ok:
        checked = check_added_assignment(current, total, 1, assignments, [replicas.node_id])
    if not checked.ok or validate_only:
        return checked
    try:
        logs = manager.add_partitions(topic, total)
    except (InvalidPartitionsError, UnknownTopicError) as exc:
        return AdminResult(ErrorCode.INVALID_PARTITIONS, str(exc))
    for offset, partition_log in enumerate(logs):
        replicas.become_leader(TopicPartition(topic, current + offset), partition_log)
    return OK


def delete_topic(
    config: KafkaConfig, manager: LogManager, replicas: ReplicaManager, topic: str
) -> AdminResult:
    partitions = manager.partitions_of(topic)
    checked = check_delete(config, exists=bool(partitions))
    if not checked.ok:
        return checked
    for tp in partitions:
        replicas.remove(tp)
    manager.delete_topic(topic)
    return OK
