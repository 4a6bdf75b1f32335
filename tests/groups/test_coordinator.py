"""GroupCoordinator inside a real (in-process) broker: offsets and groups written to __consumer_offsets and read
back after a restart, expiry with an injected clock, and per-partition errors for bad commits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from samsa.broker.broker import KafkaServer
from samsa.broker.config import KafkaConfig
from samsa.clock import ManualClock
from samsa.coordinator import GroupState, JoinRequest, OffsetAndMetadata
from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

TP = TopicPartition("orders", 0)


def make_broker(log_dir: Path, clock: ManualClock, **overrides: str) -> KafkaServer:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(log_dir),
        "offsets.topic.num.partitions": "5",
        "group.initial.rebalance.delay.ms": "0",
        **overrides,
    }
    return KafkaServer(KafkaConfig.from_properties(props), clock)


async def broker_with_orders(log_dir: Path, clock: ManualClock) -> KafkaServer:
    """A started in-process broker with the one-partition topic ``orders``."""
    from samsa.broker.topic_admin import create_topic
    from samsa.new_topic import NewTopic

    broker = make_broker(log_dir, clock)
    await broker.start()
    assert create_topic(
        broker.config, broker.log_manager, broker.replica_manager, NewTopic("orders", 1, 1, {})
    ).ok
    return broker


def join_request(member_id: str = "") -> JoinRequest:
    return JoinRequest(member_id, None, "cid", "/127.0.0.1", 10_000, 10_000, "consumer", [("range", b"meta")])


async def stable_member(broker: KafkaServer, group_id: str) -> str:
    coordinator = broker.group_coordinator
    first = await coordinator.join_group(group_id, join_request())
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED
    joined = await coordinator.join_group(group_id, join_request(first.member_id))
    assert joined.error is ErrorCode.NONE and joined.leader == first.member_id
    synced = await coordinator.sync_group(
        group_id, first.member_id, joined.generation_id, None, {first.member_id: b"a"}
    )
    assert synced.error is ErrorCode.NONE and synced.assignment == b"a"
    return first.member_id


def test_commits_and_groups_survive_a_restart(tmp_path: Path) -> None:
    clock = ManualClock()

    async def first_life() -> str:
        broker = make_broker(tmp_path, clock)
        await broker.start()
        try:
            from samsa.broker.topic_admin import create_topic
            from samsa.new_topic import NewTopic

            assert create_topic(
                broker.config, broker.log_manager, broker.replica_manager, NewTopic("orders", 2, 1, {})
            ).ok
            member = await stable_member(broker, "g1")
            errors = await broker.group_coordinator.commit_offsets(
                "g1", member, 1, None, {TP: OffsetAndMetadata(42, 3, "meta", clock.milliseconds())}
            )
            assert errors == {TP: ErrorCode.NONE}
            standalone = await broker.group_coordinator.commit_offsets(
                "solo", "", -1, None, {TopicPartition("orders", 1): OffsetAndMetadata(7)}
            )
            assert standalone == {TopicPartition("orders", 1): ErrorCode.NONE}
            partition = broker.group_coordinator.partition_for("g1")
            assert broker.log_manager.get_log(partition) is not None
            assert broker.log_manager.get_log(partition).log_end_offset >= 2  # type: ignore[union-attr]
            return member
        finally:
            await broker.stop()

    async def second_life(member: str) -> None:
        broker = make_broker(tmp_path, clock)
        await broker.start()
        try:
            coordinator = broker.group_coordinator
            assert coordinator.fetch_offsets("g1", [TP]) == {
                TP: OffsetAndMetadata(42, 3, "meta", clock.milliseconds())
            }
            assert coordinator.fetch_offsets("solo", None)[TopicPartition("orders", 1)].offset == 7  # type: ignore[union-attr]
            group = coordinator.describe_group("g1")
            assert group is not None and group.state is GroupState.STABLE and group.generation_id == 1
            # the member carries on with its generation: no rebalance needed after the restart
            assert coordinator.heartbeat("g1", member, 1, None) is ErrorCode.NONE
            assert group.members[member].assignment == b"a"
            assert len(broker.log_manager.partitions_of(CONSUMER_OFFSETS_TOPIC)) == 5
        finally:
            await broker.stop()

    member = asyncio.run(first_life())
    asyncio.run(second_life(member))


def test_bad_commits_get_kafka_errors_and_lose_nothing(tmp_path: Path) -> None:
    clock = ManualClock()

    async def scenario() -> None:
        broker = await broker_with_orders(tmp_path, clock)
        try:
            coordinator = broker.group_coordinator
            member = await stable_member(broker, "g")
            assert await coordinator.commit_offsets("g", member, 1, None, {TP: OffsetAndMetadata(5)}) == {
                TP: ErrorCode.NONE
            }
            missing = TopicPartition("orders", 9)
            assert await coordinator.commit_offsets(
                "g", member, 1, None, {missing: OffsetAndMetadata(1), TP: OffsetAndMetadata(6)}
            ) == {
                missing: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                TP: ErrorCode.NONE,
            }
            assert await coordinator.commit_offsets("g", member, 0, None, {TP: OffsetAndMetadata(1)}) == {
                TP: ErrorCode.ILLEGAL_GENERATION
            }
            assert await coordinator.commit_offsets("g", "stranger", 1, None, {TP: OffsetAndMetadata(1)}) == {
                TP: ErrorCode.UNKNOWN_MEMBER_ID
            }
            assert await coordinator.commit_offsets(
                "g", member, 1, None, {TP: OffsetAndMetadata(1, metadata="x" * 5000)}
            ) == {TP: ErrorCode.OFFSET_METADATA_TOO_LARGE}
            assert coordinator.fetch_offsets("g", [TP, missing]) == {TP: OffsetAndMetadata(6), missing: None}
            assert coordinator.delete_groups(["g", "nope"]) == {
                "g": ErrorCode.NON_EMPTY_GROUP,
                "nope": ErrorCode.GROUP_ID_NOT_FOUND,
            }
        finally:
            await broker.stop()

    asyncio.run(scenario())


def test_session_expiry_and_offset_retention_with_an_injected_clock(tmp_path: Path) -> None:
    clock = ManualClock()

    async def scenario() -> None:
        broker = make_broker(tmp_path, clock, **{"offsets.retention.minutes": "1"})
        await broker.start()
        try:
            from samsa.broker.topic_admin import create_topic
            from samsa.new_topic import NewTopic

            assert create_topic(
                broker.config, broker.log_manager, broker.replica_manager, NewTopic("orders", 1, 1, {})
            ).ok
            coordinator = broker.group_coordinator
            member = await stable_member(broker, "g")
            await coordinator.commit_offsets(
                "g", member, 1, None, {TP: OffsetAndMetadata(5, commit_timestamp=clock.milliseconds())}
            )
            clock.advance(10_000)  # the session timeout passes with no heartbeat
            coordinator.poll(clock.milliseconds())
            group = coordinator.describe_group("g")
            assert group is not None and group.state is GroupState.EMPTY and not group.members
            assert coordinator.fetch_offsets("g", [TP])[TP] is not None
            clock.advance(59_000)
            assert coordinator.expire_offsets(clock.milliseconds()) == 0
            clock.advance(1_000)
            assert coordinator.expire_offsets(clock.milliseconds()) == 1
            assert coordinator.describe_group("g") is None
        finally:
            await broker.stop()
        # the expiry was written: after a restart the offsets stay gone
        broker = make_broker(tmp_path, clock)
        await broker.start()
        try:
            assert broker.group_coordinator.fetch_offsets("g", [TP]) == {TP: None}
        finally:
            await broker.stop()

    asyncio.run(scenario())


def test_member_ids_come_from_the_broker_clock(tmp_path: Path) -> None:
    async def first_member_id(log_dir: Path, seed: int) -> str:
        broker = make_broker(log_dir, ManualClock(seed=seed))
        await broker.start()
        try:
            return await stable_member(broker, "g")
        finally:
            await broker.stop()

    same = [asyncio.run(first_member_id(tmp_path / name, 3)) for name in ("a", "b")]
    other = asyncio.run(first_member_id(tmp_path / "c", 4))
    assert same[0] == same[1] != other


def test_a_commit_shows_only_once_the_isr_has_it(tmp_path: Path) -> None:
    """The group's __consumer_offsets partition is given a follower (id 99) that fetches only when the test says:
    a commit the ISR never takes is answered with Kafka's error and OffsetFetch goes on returning the commit
    before it; one waiting for the ISR is not shown until the follower fetches."""
    clock = ManualClock()

    async def scenario() -> None:
        broker = make_broker(
            tmp_path, clock, **{"min.insync.replicas": "2", "offsets.commit.timeout.ms": "300"}
        )
        await broker.start()
        try:
            from samsa.broker.topic_admin import create_topic
            from samsa.new_topic import NewTopic

            assert create_topic(
                broker.config, broker.log_manager, broker.replica_manager, NewTopic("orders", 1, 1, {})
            ).ok
            coordinator = broker.group_coordinator
            member = await stable_member(broker, "g")
            assert await coordinator.commit_offsets("g", member, 1, None, {TP: OffsetAndMetadata(5)}) == {
                TP: ErrorCode.NONE
            }  # alone: replicated as soon as appended
            offsets_tp = coordinator.partition_for("g")

            follow(broker, offsets_tp, isr_with_follower=False)  # the ISR is below min.insync.replicas 2
            assert await coordinator.commit_offsets("g", member, 1, None, {TP: OffsetAndMetadata(6)}) == {
                TP: ErrorCode.COORDINATOR_NOT_AVAILABLE
            }
            follow(broker, offsets_tp, isr_with_follower=True)  # the follower is in the ISR but never fetches
            assert await coordinator.commit_offsets("g", member, 1, None, {TP: OffsetAndMetadata(7)}) == {
                TP: ErrorCode.REQUEST_TIMED_OUT
            }
            assert coordinator.fetch_offsets("g", [TP]) == {TP: OffsetAndMetadata(5)}

            pending = asyncio.ensure_future(
                coordinator.commit_offsets("g", member, 1, None, {TP: OffsetAndMetadata(8)})
            )
            await asyncio.sleep(0.05)
            assert not pending.done() and coordinator.fetch_offsets("g", [TP]) == {TP: OffsetAndMetadata(5)}
            await follower_fetches(broker, offsets_tp)
            assert await asyncio.wait_for(pending, 5) == {TP: ErrorCode.NONE}
            assert coordinator.fetch_offsets("g", [TP]) == {TP: OffsetAndMetadata(8)}
        finally:
            await broker.stop()

    asyncio.run(scenario())


def test_a_group_becomes_stable_only_once_the_isr_has_its_assignment(tmp_path: Path) -> None:
    clock = ManualClock()

    async def scenario() -> None:
        broker = make_broker(tmp_path, clock, **{"offsets.commit.timeout.ms": "300"})
        await broker.start()
        try:
            coordinator = broker.group_coordinator
            member = await stable_member(broker, "g")
            offsets_tp = coordinator.partition_for("g")
            follow(broker, offsets_tp, isr_with_follower=True)
            rejoined = await coordinator.join_group(
                "g", join_request(member)
            )  # the leader rejoins: generation 2
            assert rejoined.error is ErrorCode.NONE and rejoined.generation_id == 2
            synced = await coordinator.sync_group("g", member, 2, None, {member: b"b"})
            assert synced.error is ErrorCode.REBALANCE_IN_PROGRESS  # the store timed out
            group = coordinator.describe_group("g")
            assert group is not None and group.state is GroupState.PREPARING_REBALANCE
            assert group.members[member].assignment == b""

            again = await coordinator.join_group("g", join_request(member))
            assert again.generation_id == 3
            syncing = asyncio.ensure_future(coordinator.sync_group("g", member, 3, None, {member: b"c"}))
            await asyncio.sleep(0.05)
            assert not syncing.done() and group.state is GroupState.COMPLETING_REBALANCE
            await follower_fetches(broker, offsets_tp)
            assert (await asyncio.wait_for(syncing, 5)).assignment == b"c"
            assert group.state is GroupState.STABLE
        finally:
            await broker.stop()

    asyncio.run(scenario())


FOLLOWER = 99


def follow(broker: KafkaServer, tp: TopicPartition, *, isr_with_follower: bool) -> None:
    """Lead ``tp`` in a new leader epoch with a second replica, ``FOLLOWER``, as a controller would say it."""
    from samsa.broker.replica_manager import ReplicaState

    manager = broker.replica_manager
    partition = manager.partition(tp)
    assert partition is not None
    node = manager.node_id
    isr = (node, FOLLOWER) if isr_with_follower else (node,)
    state = ReplicaState(
        node, partition.leader_epoch + 1, isr, (node, FOLLOWER), partition.partition_epoch + 1
    )
    manager.make_leader(tp, partition.log, state)


async def follower_fetches(broker: KafkaServer, tp: TopicPartition) -> None:
    """``FOLLOWER`` fetches from the leader's log end, as its replica fetcher would once it has every record."""
    from samsa.broker.replica_manager import FetchRequestPartition
    from samsa.storage import FetchIsolation

    manager = broker.replica_manager
    partition = manager.partition(tp)
    assert partition is not None
    request = FetchRequestPartition(
        tp, partition.log.log_end_offset, 1 << 20, partition.leader_epoch, replica_id=FOLLOWER
    )
    await manager.fetch(
        [request],
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation=FetchIsolation.LOG_END,
        replica_id=FOLLOWER,
    )


def test_failed_appends_of_a_full_disk_are_logged_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every commit and join of a group on a full disk fails its append: one ERROR line a minute per partition
    (a probe counted 7,839 lines in 40 s from one consumer), with the count held back."""
    clock = ManualClock()

    async def scenario() -> None:
        broker = await broker_with_orders(tmp_path, clock)
        try:
            coordinator = broker.group_coordinator
            assert coordinator.ensure_offsets_topic() is ErrorCode.NONE
            coordinator.offsets_log.append = lambda tp, records: (ErrorCode.KAFKA_STORAGE_ERROR, -1)  # type: ignore[method-assign]
            caplog.clear()
            for offset in range(50):
                errors = await coordinator.commit_offsets("g", "", -1, None, {TP: OffsetAndMetadata(offset)})
                assert errors == {TP: ErrorCode.NOT_COORDINATOR}  # as Kafka maps a storage error for a commit
            clock.advance(60_000)
            await coordinator.commit_offsets("g", "", -1, None, {TP: OffsetAndMetadata(99)})
        finally:
            await broker.stop()

    asyncio.run(scenario())
    lines = [r.getMessage() for r in caplog.records if "append to" in r.getMessage()]
    assert len(lines) == 2, lines
    assert "49 more such failures" in lines[1]
