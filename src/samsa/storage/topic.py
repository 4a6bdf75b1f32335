"""Topic names, ``TopicPartition`` and partition directory names.

Directory name forms inside a log directory (``<uuid>`` = 32 lowercase hex digits, no dashes):

    form                                    meaning
    <topic>-<partition>                     a live partition
    <topic>-<partition>.<uuid>-delete       renamed for asynchronous deletion
    <topic>-<partition>.<uuid>-future       a replica being moved between log directories
    <topic>-<partition>.<uuid>-stray        a replica no longer assigned to this broker

For ``-delete`` and ``-stray`` names the topic is cut so the whole name is at most 255 characters. Parsing splits
at the last ``-`` (topics may contain ``-`` and ``.``). Topic names: 1 to 249 characters of ``[a-zA-Z0-9._-]``, not
``.`` or ``..``; two names collide when they are equal after mapping ``.`` to ``_``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from samsa.topic_partition import TopicPartition as TopicPartition  # re-exported: the one definition

from .errors import StorageError

MAX_TOPIC_NAME_LENGTH = 249
MAX_DIR_NAME_LENGTH = 255
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


class InvalidTopicError(StorageError, ValueError):
    """A topic name that breaks a rule: ``topic`` and the ``rule`` it breaks (Kafka: InvalidTopicException)."""

    def __init__(self, topic: str, rule: str) -> None:
        super().__init__(f"Topic name is invalid: {topic!r} {rule}")
        self.topic = topic
        self.rule = rule


class InvalidPartitionDirError(StorageError, ValueError):
    """A directory name that is not a partition directory (Kafka: KafkaException from parseTopicPartitionName)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(
            f"found directory {name!r}, which is not in the form topic-partition or "
            f"topic-partition.uniqueId-delete (or -future, -stray): {reason}"
        )
        self.name = name
        self.reason = reason


class DirKind(Enum):
    """What a partition directory's name says about it."""

    LIVE = ""
    DELETE = "-delete"
    FUTURE = "-future"
    STRAY = "-stray"


@dataclass(frozen=True, slots=True)
class PartitionDir:
    """A parsed partition directory name."""

    tp: TopicPartition
    kind: DirKind
    unique_id: str | None = None


# --- topic names -------------------------------------------------------------------------------------------


def validate_topic(topic: str) -> None:
    """Raise InvalidTopicError unless ``topic`` is a legal Kafka topic name."""
    if not topic:
        raise InvalidTopicError(topic, "is empty")
    if topic in (".", ".."):
        raise InvalidTopicError(topic, "cannot be '.' or '..'")
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            topic, f"is {len(topic)} characters long, more than the maximum of {MAX_TOPIC_NAME_LENGTH}"
        )
    if not _LEGAL.fullmatch(topic):
        bad = sorted({c for c in topic if not _LEGAL.fullmatch(c)})
        raise InvalidTopicError(
            topic, f"contains {''.join(bad)!r}; legal characters are ASCII alphanumerics, '.', '_' and '-'"
        )


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS


def has_collision_chars(topic: str) -> bool:
    return "." in topic or "_" in topic


def unify_collision_chars(topic: str) -> str:
    return topic.replace(".", "_")


def find_collision(topic: str, existing: Iterable[str]) -> str | None:
    """An existing topic that ``topic`` collides with ('.' vs '_'), or None. Identical names do not collide."""
    if not has_collision_chars(topic):
        return None
    unified = unify_collision_chars(topic)
    for other in existing:
        if other != topic and unify_collision_chars(other) == unified:
            return other
    return None


def ensure_no_collision(topic: str, existing: Iterable[str]) -> None:
    other = find_collision(topic, existing)
    if other is not None:
        raise InvalidTopicError(
            topic, f"collides with existing topic {other!r} ('.' and '_' are treated alike)"
        )


# --- directory names ---------------------------------------------------------------------------------------


def log_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def suffixed_dir_name(tp: TopicPartition, kind: DirKind, unique_id: str | None = None) -> str:
    """``<topic>-<partition>.<uuid><suffix>``, the topic cut so the name fits 255 characters (delete, stray)."""
    if kind is DirKind.LIVE:
        return log_dir_name(tp)
    if unique_id is None:
        import uuid  # start-up time: only renames for deletion or quarantine need a fresh id

        # The OS's randomness, not the clock's: a seeded clock draws the same ids again after a restart, and a
        # rename onto a -delete directory still waiting for file.delete.delay.ms would fail.
        unique_id = uuid.uuid4().hex
    uid = unique_id
    tail = f"-{tp.partition}.{uid}{kind.value}"
    topic = tp.topic
    if kind is not DirKind.FUTURE:
        topic = topic[: max(0, MAX_DIR_NAME_LENGTH - len(tail))]
    return topic + tail


def delete_dir_name(tp: TopicPartition, unique_id: str | None = None) -> str:
    return suffixed_dir_name(tp, DirKind.DELETE, unique_id)


def parse_dir_name(name: str) -> PartitionDir:
    """Parse a partition directory name; InvalidPartitionDirError when it is not one."""
    if not name:
        raise InvalidPartitionDirError(name, "the name is empty")
    kind = DirKind.LIVE
    unique_id: str | None = None
    body = name
    for candidate in (DirKind.DELETE, DirKind.FUTURE, DirKind.STRAY):
        if name.endswith(candidate.value):
            match = re.fullmatch(r"(\S+)-(\S+)\.(\S+)" + re.escape(candidate.value), name)
            if match is None:
                raise InvalidPartitionDirError(
                    name, f"a {candidate.value} name needs '.<uniqueId>' before it"
                )
            kind = candidate
            dot = name.rindex(".")
            body = name[:dot]
            unique_id = name[dot + 1 : -len(candidate.value)]
            break
    dash = body.rfind("-")
    if dash <= 0:
        raise InvalidPartitionDirError(name, "no topic before the last '-'")
    topic, partition_text = body[:dash], body[dash + 1 :]
    if not re.fullmatch(r"-?[0-9]+", partition_text):
        raise InvalidPartitionDirError(name, f"partition {partition_text!r} is not an integer")
    return PartitionDir(TopicPartition(topic, int(partition_text)), kind, unique_id)
