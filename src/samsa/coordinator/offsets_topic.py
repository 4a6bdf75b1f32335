"""``__consumer_offsets``: the records the group coordinator writes, where a group's records go, and reading them back.

Each record's key and value start with an int16 schema version (big-endian), then the body of Kafka's message of
that version (``samsa.protocol.messages.offset_commit_record`` / ``group_metadata_record``)::

    key version   key body                                  value (null value = tombstone)
    0 or 1        OffsetCommitKey  group, topic, partition  int16 version 0-4 + OffsetCommitValue
                                                            (written: v3 offset, leader epoch, metadata, commit ts;
                                                             v1 when the commit carried an expire timestamp)
    2             GroupMetadataKey group                    int16 version 0-4 + GroupMetadataValue (written: v3)

A group's records all go to partition ``abs(hashCode(group)) % offsets.topic.num.partitions``, with Java's
``String.hashCode`` over UTF-16 code units and Kafka's ``Utils.abs`` (Integer.MIN_VALUE maps to 0).

Pure functions over bytes and records; the coordinator does the appending and the reading of logs. The generated
record modules are imported by the functions that use them, when a group first commits or a partition is loaded,
so a broker with no groups never pays for them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from samsa.protocol.errors import DecodeError
from samsa.records import CorruptRecordError, Record, RecordsError, build_batch, iter_batches, iter_records
from samsa.storage.topic import TopicPartition

from .group import Group, GroupState, Member, OffsetAndMetadata

if TYPE_CHECKING:
    from samsa.protocol.messages.group_metadata_record import GroupMetadataValue

_VERSION = struct.Struct(">h")
OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_KEY_VERSION = 2
GROUP_VALUE_VERSION = 3


class OffsetsRecordError(ValueError):
    """A __consumer_offsets record that cannot be read: the ``offset`` and why."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"__consumer_offsets record at offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: s[0]*31^(n-1) + ... over UTF-16 code units, as a signed int32."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partitions: int) -> int:
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# --- encoding --------------------------------------------------------------------------------------------------


def offset_commit_key(group_id: str, tp: TopicPartition) -> bytes:
    from samsa.protocol.messages.offset_commit_record import OffsetCommitKey

    return _VERSION.pack(OFFSET_KEY_VERSION) + OffsetCommitKey(group_id, tp.topic, tp.partition).encode(
        OFFSET_KEY_VERSION
    )


def offset_commit_value(committed: OffsetAndMetadata) -> bytes:
    from samsa.protocol.messages.offset_commit_record import OffsetCommitValue

    version = OFFSET_VALUE_VERSION_WITH_EXPIRY if committed.expire_timestamp >= 0 else OFFSET_VALUE_VERSION
    value = OffsetCommitValue(
        offset=committed.offset,
        leader_epoch=committed.leader_epoch if version >= 3 else -1,
        metadata=committed.metadata,
        commit_timestamp=committed.commit_timestamp,
        expire_timestamp=committed.expire_timestamp if version == 1 else -1,
    )
    return _VERSION.pack(version) + value.encode(version)


def group_metadata_key(group_id: str) -> bytes:
    from samsa.protocol.messages.group_metadata_record import GroupMetadataKey

    return _VERSION.pack(GROUP_KEY_VERSION) + GroupMetadataKey(group_id).encode(GROUP_KEY_VERSION)


def group_metadata_value(group: Group) -> bytes:
    from samsa.protocol.messages.group_metadata_record import GroupMetadataValue, MemberMetadata

    members = [
        MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name),
            assignment=m.assignment,
        )
        for m in group.members.values()
    ]
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=group.state_timestamp_ms,
        members=members,
    )
    return _VERSION.pack(GROUP_VALUE_VERSION) + value.encode(GROUP_VALUE_VERSION)


def build_records(items: Iterable[tuple[bytes, bytes | None]], now_ms: int) -> bytearray:
    """One uncompressed v2 batch of (key, value) records, offsets from 0 (the log assigns the real ones)."""
    records = [Record(i, now_ms, key, value) for i, (key, value) in enumerate(items)]
    return bytearray(build_batch(records, base_offset=0))


# --- decoding --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetRecord:
    group_id: str
    tp: TopicPartition
    value: OffsetAndMetadata | None  # None: tombstone


@dataclass(frozen=True, slots=True)
class GroupRecord:
    group_id: str
    value: GroupMetadataValue | None  # None: tombstone


def decode_record(record: Record) -> OffsetRecord | GroupRecord | None:
    """What one __consumer_offsets record says; None for a record kind we do not use (raises OffsetsRecordError)."""
    from samsa.protocol.messages.group_metadata_record import GroupMetadataKey
    from samsa.protocol.messages.offset_commit_record import OffsetCommitKey

    if record.key is None or len(record.key) < 2:
        raise OffsetsRecordError(record.offset, "the key is missing or shorter than its version")
    (key_version,) = _VERSION.unpack_from(record.key)
    try:
        if key_version in (0, 1):
            key = OffsetCommitKey.decode(record.key[2:], key_version)
            tp = TopicPartition(key.topic, key.partition)
            if record.value is None:
                return OffsetRecord(key.group, tp, None)
            return OffsetRecord(key.group, tp, _decode_offset_value(record.value))
        if key_version == GROUP_KEY_VERSION:
            group_key = GroupMetadataKey.decode(record.key[2:], GROUP_KEY_VERSION)
            if record.value is None:
                return GroupRecord(group_key.group, None)
            return GroupRecord(group_key.group, _decode_group_value(record.value))
    except (DecodeError, struct.error, KeyError) as exc:
        raise OffsetsRecordError(record.offset, str(exc)) from exc
    return None


def _decode_offset_value(data: bytes) -> OffsetAndMetadata:
    from samsa.protocol.messages.offset_commit_record import OffsetCommitValue

    (version,) = _VERSION.unpack_from(data)
    value = OffsetCommitValue.decode(data[2:], min(version, 4))
    return OffsetAndMetadata(
        value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, value.expire_timestamp
    )


def _decode_group_value(data: bytes) -> GroupMetadataValue:
    from samsa.protocol.messages.group_metadata_record import GroupMetadataValue

    (version,) = _VERSION.unpack_from(data)
    return GroupMetadataValue.decode(data[2:], min(version, 4))


def iter_log_records(data: bytes, bad: list[OffsetsRecordError] | None = None) -> Iterator[Record]:
    """Every record of the batches in ``data`` (the bytes of a log, read from its start). A batch that cannot
    be read (a corrupt one) raises OffsetsRecordError, or with ``bad`` is added there and skipped, as are the
    bytes after a batch whose header is damaged."""
    try:
        for batch in iter_batches(data):
            if batch.magic >= 2 and batch.is_control:
                continue
            try:
                records = list(iter_records(batch))
            except RecordsError as exc:
                error = OffsetsRecordError(batch.base_offset, str(exc))
                if bad is None:
                    raise error from exc
                bad.append(error)
                continue
            yield from records
    except CorruptRecordError as exc:  # a header no batch can have: the rest of ``data`` cannot be walked
        if bad is None:
            raise OffsetsRecordError(-1, str(exc)) from exc
        bad.append(OffsetsRecordError(-1, str(exc)))


# --- rebuilding groups -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class LoadedPartition:
    """What one __consumer_offsets partition holds once replayed: live offsets and group metadata per group."""

    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]]
    groups: dict[str, GroupMetadataValue]

    @classmethod
    def replay(
        cls, records: Iterable[Record], bad: list[OffsetsRecordError] | None = None
    ) -> LoadedPartition:
        """Replay ``records`` in order; a record that cannot be decoded raises, or with ``bad`` is added there
        and skipped (the records after it still count: a later commit replaces what it held)."""
        loaded = cls({}, {})
        loaded.add(records, bad)
        return loaded

    def add(self, records: Iterable[Record], bad: list[OffsetsRecordError] | None = None) -> None:
        """Replay ``records``, the next ones in log order (``replay``), onto what is loaded so far."""
        for record in records:
            try:
                decoded = decode_record(record)
            except OffsetsRecordError as exc:
                if bad is None:
                    raise
                bad.append(exc)
                continue
            if isinstance(decoded, OffsetRecord):
                group_offsets = self.offsets.setdefault(decoded.group_id, {})
                if decoded.value is None:
                    group_offsets.pop(decoded.tp, None)
                else:
                    group_offsets[decoded.tp] = decoded.value
            elif isinstance(decoded, GroupRecord):
                if decoded.value is None:
                    self.groups.pop(decoded.group_id, None)
                else:
                    self.groups[decoded.group_id] = decoded.value

    def group_ids(self) -> set[str]:
        return {g for g, o in self.offsets.items() if o} | set(self.groups)


def restore_group(group: Group, metadata: GroupMetadataValue | None, now_ms: int) -> None:
    """Put a group back as it was stored: Stable with its members (who must heartbeat within their session
    timeout from ``now_ms``), or Empty."""
    if metadata is None:
        group.state_timestamp_ms = now_ms
        return
    group.generation_id = metadata.generation
    group.protocol_type = metadata.protocol_type or None
    group.protocol_name = metadata.protocol
    group.leader_id = metadata.leader
    group.state_timestamp_ms = (
        metadata.current_state_timestamp if metadata.current_state_timestamp >= 0 else now_ms
    )
    for stored in metadata.members:
        member = Member(
            member_id=stored.member_id,
            group_instance_id=stored.group_instance_id,
            client_id=stored.client_id,
            client_host=stored.client_host,
            rebalance_timeout_ms=stored.rebalance_timeout
            if stored.rebalance_timeout >= 0
            else stored.session_timeout,
            session_timeout_ms=stored.session_timeout,
            protocol_type=metadata.protocol_type,
            protocols=[(metadata.protocol or "", stored.subscription)],
            assignment=stored.assignment,
            is_new=False,
            last_heartbeat_ms=now_ms,
        )
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY
    if group.leader_id not in group.members:
        group.leader_id = next(iter(group.members), None)
