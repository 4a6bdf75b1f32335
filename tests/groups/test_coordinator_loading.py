"""A broker that becomes a group's coordinator in a cluster loads the group's ``__consumer_offsets`` partition in the
background, as Kafka's coordinator does: the event loop serves on between slices of the replay, and the group's
status is COORDINATOR_LOAD_IN_PROGRESS until its offsets and members are back.

The coordinator runs on an in-memory ``OffsetsLog`` (its seam to the broker's log) holding real
``__consumer_offsets`` batches. What the group APIs answer from that status, after their ACL checks, is in
``test_coordinator_loading_broker.py``."""

from __future__ import annotations

import asyncio

import pytest

from samsa.clock import ManualClock
from samsa.coordinator import coordinator as coordinator_module
from samsa.coordinator import offsets_topic
from samsa.coordinator.coordinator import GroupCoordinator
from samsa.coordinator.group import OffsetAndMetadata
from samsa.coordinator.offsets_log import MemoryOffsetsLog
from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

PARTITIONS = 50
GROUP = "loading-group"
OTHER = "other-group"  # a group of another partition, led and loaded all along
TOPIC = TopicPartition("events", 0)


def partition_of(group_id: str) -> TopicPartition:
    return TopicPartition(CONSUMER_OFFSETS_TOPIC, offsets_topic.partition_for(group_id, PARTITIONS))


def commits(group_id: str, count: int) -> bytes:
    """One batch of ``count`` commits of ``TOPIC`` by ``group_id``, offsets 1..count: the last one stands."""
    items = [
        (
            offsets_topic.offset_commit_key(group_id, TOPIC),
            offsets_topic.offset_commit_value(OffsetAndMetadata(n)),
        )
        for n in range(1, count + 1)
    ]
    return bytes(offsets_topic.build_records(items, 0))


def coordinator_with(log: MemoryOffsetsLog) -> GroupCoordinator:
    made = GroupCoordinator(log, ManualClock())
    assert made.config.offsets_topic_partitions == PARTITIONS
    return made


def test_a_new_coordinator_answers_load_in_progress_until_the_group_is_back() -> None:
    """The group's status as Kafka's ``validateGroupStatus`` gives it, through a coordinator's life: not started,
    not the coordinator, loading, loaded, shut down."""
    assert partition_of(GROUP) != partition_of(OTHER)
    log = MemoryOffsetsLog()
    records = 5 * coordinator_module.LOAD_SLICE  # several slices: the loop turns between them
    log.batches[partition_of(GROUP)] = [commits(GROUP, records)]
    log.batches[partition_of(OTHER)] = [commits(OTHER, 3)]

    async def scenario() -> None:
        groups = coordinator_with(log)
        assert groups.group_status(GROUP) is ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert groups.list_status() is ErrorCode.COORDINATOR_NOT_AVAILABLE
        groups.startup()  # the broker's start: no partition led yet
        assert groups.group_status(GROUP) is ErrorCode.NOT_COORDINATOR
        log.led = {partition_of(OTHER)}
        groups.leadership_changed()
        await asyncio.sleep(0.05)
        assert not groups.loading() and groups.fetch_offsets(OTHER, [TOPIC])[TOPIC] == OffsetAndMetadata(3)
        assert groups.group_status(OTHER) is ErrorCode.NONE and groups.list_status() is ErrorCode.NONE

        log.led.add(partition_of(GROUP))  # LeaderAndIsr made this broker the group's coordinator
        groups.leadership_changed()
        assert groups.loading(GROUP) and groups.loading() and not groups.loading(OTHER)
        assert groups.group_status(GROUP) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert groups.group_status(OTHER) is ErrorCode.NONE
        assert groups.list_status() is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # while any partition loads
        # the coordinator's own group APIs answer it too, and write nothing meanwhile
        assert groups.delete_groups([GROUP]) == {GROUP: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
        assert groups.delete_offsets(GROUP, [TOPIC]) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, {})
        assert log.batches[partition_of(GROUP)] == [commits(GROUP, records)]

        turns = 0
        while groups.loading(GROUP):  # the loop serves on meanwhile
            turns += 1
            await asyncio.sleep(0)
        assert turns >= 5
        assert groups.fetch_offsets(GROUP, [TOPIC])[TOPIC] == OffsetAndMetadata(records)
        assert groups.group_status(GROUP) is ErrorCode.NONE and groups.list_status() is ErrorCode.NONE
        groups.shutdown()
        assert groups.group_status(GROUP) is ErrorCode.COORDINATOR_NOT_AVAILABLE

    asyncio.run(scenario())


def test_a_partition_lost_while_it_loads_is_not_installed() -> None:
    log = MemoryOffsetsLog()
    log.batches[partition_of(GROUP)] = [commits(GROUP, 3 * coordinator_module.LOAD_SLICE)]

    async def scenario() -> None:
        groups = coordinator_with(log)
        log.led = {partition_of(GROUP)}
        groups.leadership_changed()
        await asyncio.sleep(0)
        assert groups.loading(GROUP)
        log.led = set()  # leadership moved on before the replay ended
        groups.leadership_changed()
        assert not groups.loading(GROUP)
        await asyncio.sleep(0.05)
        assert GROUP not in groups.groups and groups.fetch_offsets(GROUP, [TOPIC])[TOPIC] is None
        groups.shutdown()

    asyncio.run(scenario())


@pytest.mark.parametrize("count", [1, 2 * coordinator_module.LOAD_SLICE + 7])
def test_a_background_load_ends_as_the_replay_at_start_up(count: int) -> None:
    """The slices replay to what the whole log replayed at once gives (``LoadedPartition.replay``)."""
    log = MemoryOffsetsLog()
    log.batches[partition_of(GROUP)] = [commits(GROUP, count), commits(GROUP, 2)]  # the later batch wins

    async def scenario() -> None:
        groups = coordinator_with(log)
        log.led = {partition_of(GROUP)}
        groups.leadership_changed()
        while groups.loading():
            await asyncio.sleep(0)
        assert groups.fetch_offsets(GROUP, None) == {TOPIC: OffsetAndMetadata(2)}
        groups.shutdown()

    asyncio.run(scenario())
