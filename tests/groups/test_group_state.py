"""The group state machine alone: time passed in, no sleeping, every answer checked."""

from __future__ import annotations

import random

import pytest

from samsa.coordinator.group import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    Group,
    GroupConfig,
    GroupState,
    JoinRequest,
    JoinResult,
    OffsetAndMetadata,
    Pending,
    SyncResult,
)
from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import TopicPartition

SESSION = 10_000
REBALANCE = 30_000
T0 = 1_000_000


def config(delay: int = 0) -> GroupConfig:
    return GroupConfig(initial_rebalance_delay_ms=delay)


def request(
    member_id: str = "",
    *,
    instance: str | None = None,
    protocols: list[tuple[str, bytes]] | None = None,
    session: int = SESSION,
    protocol_type: str = "consumer",
) -> JoinRequest:
    return JoinRequest(
        member_id=member_id,
        group_instance_id=instance,
        client_id="client",
        client_host="/127.0.0.1",
        session_timeout_ms=session,
        rebalance_timeout_ms=REBALANCE,
        protocol_type=protocol_type,
        protocols=protocols if protocols is not None else [("range", b"m")],
    )


def new_member(group: Group, now: int = T0, **kwargs: object) -> str:
    """A member id handed out by MEMBER_ID_REQUIRED (the v4+ two-step join)."""
    first = group.join(request(**kwargs), now)  # type: ignore[arg-type]
    assert isinstance(first, JoinResult) and first.error is ErrorCode.MEMBER_ID_REQUIRED
    return first.member_id


def joins(group: Group) -> dict[str, JoinResult]:
    out = {}
    for reply in group.take_replies():
        assert reply.kind == "join"
        assert isinstance(reply.result, JoinResult)
        out[reply.member_id] = reply.result
    return out


def syncs(group: Group) -> dict[str, SyncResult]:
    out = {}
    for reply in group.take_replies():
        assert reply.kind == "sync"
        assert isinstance(reply.result, SyncResult)
        out[reply.member_id] = reply.result
    return out


def store_assignment(group: Group, now: int, error: ErrorCode = ErrorCode.NONE) -> dict[str, SyncResult]:
    """Report the leader's assignment written (the coordinator's part): the SyncGroup answers it releases."""
    generation = group.take_assignment_store()
    assert generation == group.generation_id
    assert group.take_assignment_store() is None  # asked once
    group.assignment_stored(generation, error, now)
    return syncs(group)


def stable_group(n: int, now: int = T0) -> tuple[Group, list[str]]:
    """A group of ``n`` members that has completed a rebalance (generation 1)."""
    group = Group("g", config())
    ids = [new_member(group, now) for _ in range(n)]
    for member_id in ids:
        assert isinstance(group.join(request(member_id), now), Pending)
    results = joins(group)
    assert set(results) == set(ids)
    leader = results[ids[0]].leader
    assignments = {m: f"assign-{m}".encode() for m in ids}
    for member_id in ids:
        if member_id != leader:
            assert isinstance(group.sync(member_id, 1, None, {}, now), Pending)
    assert isinstance(group.sync(leader, 1, None, assignments, now), Pending)
    assert group.state is GroupState.COMPLETING_REBALANCE and syncs(group) == {}
    answered = store_assignment(group, now)
    assert {m: r.assignment for m, r in answered.items()} == assignments
    assert group.state is GroupState.STABLE
    return group, ids


def test_first_member_joins_syncs_and_becomes_stable() -> None:
    group = Group("g", config())
    assert group.state is GroupState.EMPTY
    member_id = new_member(group)
    assert member_id.startswith("client-")
    assert isinstance(group.join(request(member_id), T0), Pending)
    [(mid, result)] = joins(group).items()
    assert mid == member_id
    assert result.error is ErrorCode.NONE and result.generation_id == 1 and result.leader == member_id
    assert result.protocol_name == "range" and [m.member_id for m in result.members] == [member_id]
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert isinstance(group.sync(member_id, 1, None, {member_id: b"a"}, T0), Pending)
    assert group.state is GroupState.COMPLETING_REBALANCE  # until the assignment is stored
    assert store_assignment(group, T0) == {member_id: SyncResult(ErrorCode.NONE, "consumer", "range", b"a")}
    assert group.state is GroupState.STABLE
    assert group.take_store() is False  # written with the assignment, not again


def test_a_failed_assignment_store_answers_every_member_and_rebalances() -> None:
    group = Group("g", config())
    a, b = new_member(group), new_member(group)
    group.join(request(a), T0)
    group.join(request(b), T0)
    leader = joins(group)[a].leader
    follower = b if leader == a else a
    assert isinstance(group.sync(follower, 1, None, {}, T0), Pending)
    assert isinstance(group.sync(leader, 1, None, {a: b"x", b: b"y"}, T0), Pending)
    assert group.heartbeat(follower, 1, None, T0 + 1) is ErrorCode.NONE  # still CompletingRebalance
    answered = store_assignment(group, T0 + 2, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert answered == {m: SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE) for m in (a, b)}
    assert group.state is GroupState.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in group.members.values())
    # a report for a generation the group left behind changes nothing
    group.assignment_stored(1, ErrorCode.NONE, T0 + 3)
    assert group.state is GroupState.PREPARING_REBALANCE and group.take_replies() == []


def test_a_leader_syncing_again_while_its_assignment_is_stored_waits_for_the_same_store() -> None:
    group = Group("g", config())
    a = new_member(group)
    group.join(request(a), T0)
    joins(group)
    assert isinstance(group.sync(a, 1, None, {a: b"first"}, T0), Pending)
    assert isinstance(group.sync(a, 1, None, {a: b"second"}, T0), Pending)
    assert store_assignment(group, T0) == {a: SyncResult(ErrorCode.NONE, "consumer", "range", b"first")}


def test_a_commit_acknowledged_late_does_not_overwrite_a_later_one() -> None:
    group, ids = stable_group(1)
    tp = TopicPartition("t", 0)
    assert group.commit(ids[0], {tp: OffsetAndMetadata(20)}, T0, record_offset=11) == {tp: ErrorCode.NONE}
    assert group.commit(ids[0], {tp: OffsetAndMetadata(10)}, T0, record_offset=10) == {tp: ErrorCode.NONE}
    assert group.offsets[tp].offset == 20
    group.remove_offsets([tp], record_offset=12)
    group.commit(ids[0], {tp: OffsetAndMetadata(30)}, T0, record_offset=9)  # written before the deletion
    assert tp not in group.offsets
    group.commit(ids[0], {tp: OffsetAndMetadata(40)}, T0, record_offset=13)
    assert group.offsets[tp].offset == 40


def test_three_members_get_one_generation_and_only_the_leader_sees_members() -> None:
    group = Group("g", config())
    ids = [new_member(group) for _ in range(3)]
    for member_id in ids[:2]:
        assert isinstance(group.join(request(member_id), T0), Pending)
        assert joins(group) == {}  # waits for the third, whose member id is pending
    assert isinstance(group.join(request(ids[2]), T0), Pending)
    results = joins(group)
    assert {r.generation_id for r in results.values()} == {1}
    leader = results[ids[0]].leader
    assert leader == ids[0]
    assert len(results[leader].members) == 3
    assert all(not r.members for m, r in results.items() if m != leader)


def test_protocol_chosen_by_votes_among_common_protocols() -> None:
    group = Group("g", config())
    a, b, c = (new_member(group) for _ in range(3))
    group.join(request(a, protocols=[("cooperative-sticky", b""), ("range", b"")]), T0)
    group.join(request(b, protocols=[("range", b""), ("cooperative-sticky", b"")]), T0)
    group.join(request(c, protocols=[("cooperative-sticky", b""), ("range", b"")]), T0)
    assert {r.protocol_name for r in joins(group).values()} == {"cooperative-sticky"}


def test_inconsistent_protocol_is_refused_and_group_carries_on() -> None:
    group, ids = stable_group(2)
    result = group.join(request(protocols=[("other", b"")]), T0)
    assert isinstance(result, JoinResult) and result.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    result = group.join(request(protocol_type="connect"), T0)
    assert isinstance(result, JoinResult) and result.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert group.state is GroupState.STABLE
    assert group.heartbeat(ids[0], 1, None, T0) is ErrorCode.NONE


def test_session_timeout_outside_broker_limits() -> None:
    group = Group("g", config())
    result = group.join(request(session=1000), T0)
    assert isinstance(result, JoinResult) and result.error is ErrorCode.INVALID_SESSION_TIMEOUT


def test_unknown_member_and_stale_generation() -> None:
    group, ids = stable_group(2)
    assert group.heartbeat("nobody", 1, None, T0) is ErrorCode.UNKNOWN_MEMBER_ID
    assert group.heartbeat(ids[0], 0, None, T0) is ErrorCode.ILLEGAL_GENERATION
    assert group.sync(ids[0], 7, None, {}, T0) == SyncResult(ErrorCode.ILLEGAL_GENERATION)
    assert group.sync("nobody", 1, None, {}, T0) == SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
    unknown = group.join(request("nobody"), T0)
    assert isinstance(unknown, JoinResult) and unknown.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert group.validate_commit(ids[0], 0, None) is ErrorCode.ILLEGAL_GENERATION
    assert group.validate_commit("nobody", 1, None) is ErrorCode.UNKNOWN_MEMBER_ID
    assert group.validate_commit(ids[0], 1, None) is ErrorCode.NONE
    assert group.leave("nobody", None, T0) is ErrorCode.UNKNOWN_MEMBER_ID
    assert group.state is GroupState.STABLE and group.generation_id == 1


def test_silent_member_expires_after_session_timeout_and_the_others_rebalance() -> None:
    group, ids = stable_group(3)
    now = T0 + SESSION - 1
    for member_id in ids[:2]:
        assert group.heartbeat(member_id, 1, None, now) is ErrorCode.NONE
    assert group.next_deadline() == T0 + SESSION
    group.poll(T0 + SESSION - 1)
    assert group.state is GroupState.STABLE
    group.poll(T0 + SESSION)
    assert ids[2] not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE
    now = T0 + SESSION + 10
    assert group.heartbeat(ids[0], 1, None, now) is ErrorCode.REBALANCE_IN_PROGRESS
    for member_id in ids[:2]:
        assert isinstance(group.join(request(member_id), now), Pending)
    results = joins(group)
    assert set(results) == set(ids[:2]) and {r.generation_id for r in results.values()} == {2}


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout() -> None:
    group, ids = stable_group(2)
    leader = ids[0]
    assert isinstance(group.join(request(leader), T0 + 1), Pending)  # the leader rejoins: rebalance
    group.heartbeat(ids[1], 1, None, T0 + 5000)  # alive, but never rejoins
    assert group.state is GroupState.PREPARING_REBALANCE
    group.poll(T0 + 5000)
    assert joins(group) == {}
    deadline = group.next_deadline()
    assert deadline is not None and deadline <= T0 + 1 + REBALANCE
    group.poll(T0 + 1 + REBALANCE)
    results = joins(group)
    assert set(results) == {leader} and results[leader].generation_id == 2
    assert set(group.members) == {leader}


def test_leave_during_completing_rebalance_answers_waiting_syncs_with_rebalance_in_progress() -> None:
    group = Group("g", config())
    a, b = new_member(group), new_member(group)
    group.join(request(a), T0)
    group.join(request(b), T0)
    joins(group)
    assert isinstance(group.sync(b, 1, None, {}, T0), Pending)
    assert group.leave(a, None, T0 + 1) is ErrorCode.NONE
    replies = group.take_replies()
    assert [(r.kind, r.member_id, r.result.error) for r in replies] == [
        ("sync", b, ErrorCode.REBALANCE_IN_PROGRESS)
    ]
    assert group.state is GroupState.PREPARING_REBALANCE


def test_last_member_leaving_empties_the_group_and_bumps_the_generation() -> None:
    group, ids = stable_group(1)
    assert group.leave(ids[0], None, T0 + 1) is ErrorCode.NONE
    assert group.state is GroupState.EMPTY
    assert group.generation_id == 2 and group.members == {}
    assert group.take_store() is True


def test_commit_validation_in_each_state() -> None:
    group = Group("g", config())
    assert group.validate_commit("", -1, None) is ErrorCode.NONE  # standalone consumer, empty group
    a = new_member(group)
    group.join(request(a), T0)
    joins(group)
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert group.validate_commit(a, 1, None) is ErrorCode.REBALANCE_IN_PROGRESS
    assert group.validate_commit("", -1, None) is ErrorCode.REBALANCE_IN_PROGRESS
    group.sync(a, 1, None, {a: b""}, T0)
    assert (
        group.validate_commit(a, 1, None) is ErrorCode.REBALANCE_IN_PROGRESS
    )  # the assignment is not stored yet
    store_assignment(group, T0)
    errors = group.commit(a, {TopicPartition("t", 0): OffsetAndMetadata(5, metadata="x")}, T0)
    assert errors == {TopicPartition("t", 0): ErrorCode.NONE}
    assert group.offsets[TopicPartition("t", 0)].offset == 5
    big = OffsetAndMetadata(6, metadata="x" * 5000)
    assert group.commit(a, {TopicPartition("t", 0): big}, T0) == {
        TopicPartition("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE
    }
    assert group.offsets[TopicPartition("t", 0)].offset == 5  # nothing lost


def test_offsets_expire_only_once_the_group_is_empty_for_the_retention() -> None:
    group, ids = stable_group(1)
    tp = TopicPartition("t", 0)
    group.commit(ids[0], {tp: OffsetAndMetadata(3, commit_timestamp=T0)}, T0)
    retention = 60_000
    assert group.expire_offsets(T0 + 10 * retention, retention) == []  # members: never
    group.leave(ids[0], None, T0 + 100)
    assert group.expire_offsets(T0 + 100 + retention - 1, retention) == []
    assert group.expire_offsets(T0 + 100 + retention, retention) == [tp]
    assert group.offsets == {}


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    group = Group("g", config(delay=3000))
    a = new_member(group)
    group.join(request(a), T0)
    assert joins(group) == {}
    assert group.state is GroupState.PREPARING_REBALANCE
    b = new_member(group, T0 + 1000)
    group.join(request(b), T0 + 1000)  # extends the delay to T0 + 4000
    group.poll(T0 + 3000)
    assert joins(group) == {}
    group.poll(T0 + 4000)
    results = joins(group)
    assert set(results) == {a, b} and {r.generation_id for r in results.values()} == {1}


def test_pending_member_id_expires_and_a_new_member_waits_at_most_its_join_timeout() -> None:
    group, _ = stable_group(1)
    pending = new_member(group, T0)
    assert pending in group.pending_members
    group.poll(T0 + SESSION)
    assert pending not in group.pending_members
    late = group.join(request(pending), T0 + SESSION + 1)
    assert isinstance(late, JoinResult) and late.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert NEW_MEMBER_JOIN_TIMEOUT_MS > REBALANCE


def test_static_member_rejoining_with_a_new_member_id_keeps_its_assignment_without_rebalance() -> None:
    group = Group("g", config())
    first = group.join(request(instance="i-1"), T0)
    assert isinstance(first, Pending)
    [old_id] = joins(group)
    assert old_id.startswith("i-1-")
    group.sync(old_id, 1, "i-1", {old_id: b"mine"}, T0)
    store_assignment(group, T0)
    b = new_member(group)
    group.join(request(b), T0)  # a dynamic member joins too
    group.join(request(old_id, instance="i-1"), T0)
    results = joins(group)
    group.sync(old_id, 2, "i-1", {old_id: b"mine2", b: b"yours"}, T0)
    store_assignment(group, T0)
    assert group.state is GroupState.STABLE
    # the static member restarts: unknown member id, same instance id
    again = group.join(request(instance="i-1"), T0 + 10)
    assert isinstance(again, JoinResult) and again.error is ErrorCode.NONE
    assert again.member_id != old_id and again.generation_id == 2
    assert group.state is GroupState.STABLE
    synced = group.sync(again.member_id, 2, "i-1", {}, T0 + 10)
    assert isinstance(synced, SyncResult) and synced.assignment == b"mine2"
    # the old incarnation is fenced
    assert group.heartbeat(old_id, 2, "i-1", T0 + 11) is ErrorCode.FENCED_INSTANCE_ID
    assert results  # the second generation was formed


def test_static_member_is_kept_through_a_rebalance_it_misses() -> None:
    group = Group("g", config())
    group.join(request(instance="s"), T0)
    [(static_id, _)] = joins(group).items()
    group.sync(static_id, 1, "s", {static_id: b"x"}, T0)
    store_assignment(group, T0)
    d = new_member(group, T0 + 1)
    group.join(request(d), T0 + 1)
    assert group.heartbeat(static_id, 1, "s", T0 + REBALANCE) is ErrorCode.REBALANCE_IN_PROGRESS
    group.poll(T0 + 1 + REBALANCE)
    results = joins(group)
    assert set(results) == {d}
    assert static_id in group.members  # not removed: static members wait for their session timeout


def test_delete_only_an_empty_group() -> None:
    group, ids = stable_group(1)
    assert group.delete(T0) is ErrorCode.NON_EMPTY_GROUP
    group.leave(ids[0], None, T0)
    assert group.delete(T0) is ErrorCode.NONE
    assert group.state is GroupState.DEAD
    result = group.join(request(), T0)
    assert isinstance(result, JoinResult) and result.error is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_sync_timeout_removes_members_that_never_synced() -> None:
    group = Group("g", config())
    a, b = new_member(group), new_member(group)
    group.join(request(a), T0)
    group.join(request(b), T0)
    joins(group)
    assert isinstance(group.sync(b, 1, None, {}, T0), Pending)  # the leader (a) never syncs
    group.poll(T0 + REBALANCE)
    replies = group.take_replies()
    assert ("sync", b, ErrorCode.REBALANCE_IN_PROGRESS) in [
        (r.kind, r.member_id, r.result.error) for r in replies
    ]
    assert a not in group.members


@pytest.mark.parametrize("state_after", ["stable", "completing"])
def test_known_member_rejoin_with_same_metadata_gets_current_generation(state_after: str) -> None:
    group, ids = stable_group(2)
    follower = ids[1]
    if state_after == "completing":
        group.join(request(ids[0]), T0)
        group.join(request(follower), T0)
        joins(group)
        assert group.state is GroupState.COMPLETING_REBALANCE
    result = group.join(request(follower), T0 + 1)
    assert isinstance(result, JoinResult) and result.error is ErrorCode.NONE
    assert result.generation_id == group.generation_id and result.members == ()


def test_member_ids_come_from_the_injected_randomness() -> None:
    first = Group("g", config(), rng=random.Random(7))
    second = Group("g", config(), rng=random.Random(7))
    assert [new_member(first) for _ in range(3)] == [new_member(second) for _ in range(3)]
    other = Group("g", config(), rng=random.Random(8))
    assert new_member(other) != new_member(Group("g", config(), rng=random.Random(7)))


def test_a_repeated_draw_never_hands_out_a_member_id_the_group_holds() -> None:
    group = Group("g", config(), rng=random.Random(7))
    held = new_member(group)
    group.rng = random.Random(7)  # a restart with the same seed draws the same numbers again
    assert new_member(group) != held
    assert held in group.pending_members
