"""__consumer_offsets record formats and group-to-partition mapping, with known bytes and Java's hash values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from samsa.coordinator.group import Group, GroupConfig, GroupState, JoinRequest, OffsetAndMetadata
from samsa.coordinator.offsets_topic import (
    GroupRecord,
    LoadedPartition,
    OffsetRecord,
    build_records,
    decode_record,
    group_metadata_key,
    group_metadata_value,
    iter_log_records,
    java_string_hash,
    offset_commit_key,
    offset_commit_value,
    partition_for,
    restore_group,
)
from samsa.protocol.errors import ErrorCode
from samsa.records import Record
from samsa.storage.topic import TopicPartition
from tests.groups.test_group_state import SESSION, T0, joins, new_member, request, stable_group


def test_java_string_hash_known_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("test-group") == 627841412
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # two UTF-16 code units


def test_partition_for_follows_kafka_utils_abs() -> None:
    assert partition_for("test-group", 50) == 627841412 % 50
    assert partition_for("polygenelubricants", 50) == 0  # abs(MIN_VALUE) is 0 in Kafka's Utils.abs
    assert partition_for("hello", 7) == 99162322 % 7


@given(st.text(max_size=40), st.integers(1, 200))
def test_partition_for_is_in_range(group_id: str, partitions: int) -> None:
    assert 0 <= partition_for(group_id, partitions) < partitions


def test_offset_commit_key_bytes() -> None:
    key = offset_commit_key("g", TopicPartition("t", 3))
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"


def test_offset_commit_value_v3_bytes_and_v1_with_expiry() -> None:
    value = offset_commit_value(OffsetAndMetadata(10, 2, "m", 1000))
    assert value == (
        b"\x00\x03"
        + (10).to_bytes(8, "big")
        + (2).to_bytes(4, "big")
        + b"\x00\x01m"
        + (1000).to_bytes(8, "big")
    )
    v1 = offset_commit_value(OffsetAndMetadata(10, -1, "", 1000, 5000))
    assert v1[:2] == b"\x00\x01" and v1.endswith((5000).to_bytes(8, "big"))


def test_group_metadata_key_bytes() -> None:
    assert group_metadata_key("grp") == b"\x00\x02\x00\x03grp"


@given(
    group_id=st.text(min_size=1, max_size=20),
    topic=st.text(min_size=1, max_size=20),
    partition=st.integers(0, 2**31 - 1),
    offset=st.integers(-1, 2**62),
    metadata=st.text(max_size=30),
    expire=st.sampled_from([-1, 123456]),
)
def test_offset_records_round_trip(
    group_id: str, topic: str, partition: int, offset: int, metadata: str, expire: int
) -> None:
    tp = TopicPartition(topic, partition)
    committed = OffsetAndMetadata(offset, -1 if expire >= 0 else 5, metadata, 42, expire)
    record = Record(0, 0, offset_commit_key(group_id, tp), offset_commit_value(committed))
    assert decode_record(record) == OffsetRecord(group_id, tp, committed)
    assert decode_record(Record(1, 0, offset_commit_key(group_id, tp), None)) == OffsetRecord(
        group_id, tp, None
    )


def _stable_group() -> Group:
    group = Group("g", GroupConfig(initial_rebalance_delay_ms=0))
    request = JoinRequest("", "inst", "cid", "/1.2.3.4", 10_000, 20_000, "consumer", [("range", b"sub")])
    group.join(request, 5)
    [reply] = group.take_replies()
    group.sync(reply.member_id, 1, "inst", {reply.member_id: b"assigned"}, 6)
    group.assignment_stored(1, ErrorCode.NONE, 6)
    assert group.state is GroupState.STABLE
    return group


def test_group_metadata_round_trip_restores_a_stable_group() -> None:
    group = _stable_group()
    record = Record(0, 0, group_metadata_key("g"), group_metadata_value(group))
    decoded = decode_record(record)
    assert isinstance(decoded, GroupRecord) and decoded.value is not None
    restored = Group("g")
    restore_group(restored, decoded.value, now_ms=99)
    assert restored.state is GroupState.STABLE
    assert (
        restored.generation_id == 1
        and restored.protocol_name == "range"
        and restored.protocol_type == "consumer"
    )
    [member] = restored.members.values()
    original = next(iter(group.members.values()))
    assert (member.member_id, member.group_instance_id, member.client_id, member.client_host) == (
        original.member_id,
        "inst",
        "cid",
        "/1.2.3.4",
    )
    assert member.assignment == b"assigned" and member.metadata("range") == b"sub"
    assert member.last_heartbeat_ms == 99
    assert restored.static_members == {"inst": member.member_id}


def _loaded(group: Group, loaded_at: int) -> Group:
    """``group`` as a new coordinator loads it from its stored generation at ``loaded_at``."""
    decoded = decode_record(Record(0, 0, group_metadata_key("g"), group_metadata_value(group)))
    assert isinstance(decoded, GroupRecord) and decoded.value is not None
    loaded = Group("g", GroupConfig(initial_rebalance_delay_ms=0))
    restore_group(loaded, decoded.value, now_ms=loaded_at)
    return loaded


def test_a_member_that_rejoined_under_a_new_id_leaves_its_old_one_a_full_session_after_each_load() -> None:
    """Found by the nemesis (2026-11-29): a consumer whose session ran out on its side rejoins as a new member, and
    its old id is still in the stored generation. A coordinator that loads the group gives every stored member a
    fresh session, as Kafka's does, so the rebalance completes only a session after the load: each coordinator
    move starts that wait again (187 s of no reads through 11 moves)."""
    stored, (ghost, other) = stable_group(2)
    loaded_at = T0 + 500_000
    group = _loaded(stored, loaded_at)
    again = new_member(group, loaded_at + 100)  # the consumer that lost its session, under a new id
    group.join(request(again), loaded_at + 100)
    group.join(request(other), loaded_at + 200)
    assert joins(group) == {}  # both wait
    group.poll(loaded_at + SESSION - 1)
    assert joins(group) == {} and ghost in group.members
    group.poll(loaded_at + SESSION)  # the ghost's session, counted from the load
    assert set(joins(group)) == {again, other} and ghost not in group.members


def test_a_static_member_that_rejoins_takes_its_stored_place_at_once_after_a_load() -> None:
    """The same consumer as a static member (``group.instance.id``): it rejoins in its old member's place, with
    its assignment and no rebalance, however recently the group was loaded."""
    loaded_at = T0 + 500_000
    group = _loaded(_stable_group(), loaded_at)
    [old] = group.members
    again = group.join(request(instance="inst", protocols=[("range", b"sub")]), loaded_at + 100)
    assert getattr(again, "error", None) is ErrorCode.NONE, again  # answered at once, not Pending
    assert getattr(again, "member_id", old) != old
    assert group.state is GroupState.STABLE and old not in group.members


def test_replay_applies_tombstones_in_log_order() -> None:
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    items: list[tuple[bytes, bytes | None]] = [
        (offset_commit_key("g", tp0), offset_commit_value(OffsetAndMetadata(1))),
        (offset_commit_key("g", tp1), offset_commit_value(OffsetAndMetadata(2))),
        (offset_commit_key("g", tp0), offset_commit_value(OffsetAndMetadata(3))),
        (offset_commit_key("g", tp1), None),
        (group_metadata_key("g"), group_metadata_value(_stable_group())),
        (offset_commit_key("gone", tp0), offset_commit_value(OffsetAndMetadata(9))),
        (offset_commit_key("gone", tp0), None),
        (group_metadata_key("other"), group_metadata_value(_stable_group())),
        (group_metadata_key("other"), None),
    ]
    batch = build_records(items, now_ms=7)
    loaded = LoadedPartition.replay(iter_log_records(bytes(batch)))
    assert loaded.offsets["g"] == {tp0: OffsetAndMetadata(3)}
    assert loaded.group_ids() == {"g"}
