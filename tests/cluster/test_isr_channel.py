"""The AlterPartition path of ISR changes, in memory: a leader's ``ReplicaManager`` on tmp_path logs and a manual
clock submits ISR changes to an ``IsrChannel`` whose controller is a function answering each AlterPartition, and
whose backoffs advance the clock instead of sleeping. No ZooKeeper, no sockets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.broker.replication_leader import F2, F3, LAG_MS, LEADER, REPLICAS, TP, Leader

from samsa.cluster.isr_channel import IsrChange, IsrChannel
from samsa.cluster.metadata_cache import MetadataCache
from samsa.protocol.errors import ErrorCode
from samsa.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from samsa.records import build_batch

CONTROLLER = (9, "controller", 9092)

# what the controller does with one partition's change: (error, committed ISR)
Decide = Callable[[list[int]], tuple[ErrorCode, list[int]]]


def accept(new_isr: list[int]) -> tuple[ErrorCode, list[int]]:
    return ErrorCode.NONE, new_isr


class Controller:
    """Answers AlterPartition (v1: ISR as ids, topic by name) with ``decide``; a whole-request error first when
    ``fail_first`` says so."""

    def __init__(self) -> None:
        self.decide: Decide = accept
        self.fail_first: list[ErrorCode] = []
        self.received: list[list[int]] = []
        self.closed = False

    async def open(self) -> None:
        self.closed = False

    def pick_version(self, api_key: int) -> int:
        return 1

    async def close(self) -> None:
        self.closed = True

    async def request(self, message: AlterPartitionRequest, api_key: int, version: int | None = None) -> Any:
        if self.fail_first:
            return AlterPartitionResponse(error_code=self.fail_first.pop(0))
        topics = []
        for topic in message.topics:
            answers = []
            for p in topic.partitions:
                self.received.append(sorted(p.new_isr))
                error, isr = self.decide(sorted(p.new_isr))
                answers.append(
                    AlterPartitionResponsePartitionData(
                        partition_index=p.partition_index,
                        error_code=error,
                        leader_id=LEADER,
                        leader_epoch=p.leader_epoch,
                        isr=isr,
                        partition_epoch=p.partition_epoch + 1,
                    )
                )
            topics.append(AlterPartitionResponseTopicData(topic_name=topic.topic_name, partitions=answers))
        return AlterPartitionResponse(topics=topics)


class ChannelLeader(Leader):
    """Broker 1 leading ``TP`` (replicas 1, 2, 3), its ISR changes going through an ``IsrChannel``."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.controller = Controller()
        self.controller_known: tuple[int, str, int] | None = CONTROLLER
        self.slept: list[float] = []
        self.hold_sleeps = False
        self.channel = IsrChannel(
            LEADER,
            lambda: 7,
            lambda: self.controller_known,
            lambda topic: None,
            self.manager.isr_change_answered,
            connect=lambda host, port, client_id: self.controller,
            sleep=self.sleep,
        )
        self.manager.isr_changes = lambda partition, new_isr: self.channel.submit(
            IsrChange(partition.tp, partition.leader_epoch, partition.partition_epoch, new_isr)
        )

    async def sleep(self, seconds: float) -> None:
        """A backoff: the clock moves, nothing waits (``hold_sleeps``: it lasts until something ends it)."""
        self.slept.append(seconds)
        if self.hold_sleeps:
            await asyncio.Event().wait()
        self.clock.advance(int(seconds * 1000))
        self.controller_known = CONTROLLER

    async def lagging_f3(self) -> None:
        """F2 caught up, F3 behind for longer than the lag time: the leader asks for ISR {1, 2}."""
        self.log.append_as_leader(bytearray(build_batch([b"v"] * 3)), 1)
        await self.fetch(F2, 3)
        await self.fetch(F3, 0)
        self.clock.advance(LAG_MS + 1)
        self.manager.maybe_shrink_isr()

    @property
    def isr(self) -> set[int]:
        partition = self.manager.partition(TP)
        assert partition is not None
        return partition.isr

    @property
    def pending(self) -> frozenset[int] | None:
        partition = self.manager.partition(TP)
        assert partition is not None
        return partition.pending_isr


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[ChannelLeader]:
    made = ChannelLeader(tmp_path)
    yield made
    made.logs.shutdown()


async def settle(leader: ChannelLeader) -> None:
    """Let the channel send what is pending and apply the answers (no time passes but its backoffs')."""
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_shrink_accepted_by_the_controller_commits_the_isr_and_moves_the_high_watermark(
    leader: ChannelLeader,
) -> None:
    async def scenario() -> None:
        await leader.lagging_f3()
        assert leader.log.high_watermark == 0  # F3 still counts while the change is pending
        await settle(leader)
        assert leader.controller.received == [[LEADER, F2]]
        assert leader.isr == {LEADER, F2} and leader.pending is None
        assert leader.manager.partition(TP).partition_epoch == 1  # type: ignore[union-attr]
        assert leader.log.high_watermark == 3
        assert leader.slept == []
        await leader.channel.close()

    asyncio.run(scenario())


def test_a_refused_change_rolls_back_and_a_stale_one_waits_for_the_controllers_state(
    leader: ChannelLeader,
) -> None:
    async def scenario() -> None:
        leader.controller.decide = lambda isr: (ErrorCode.INELIGIBLE_REPLICA, [])
        await leader.lagging_f3()
        await settle(leader)
        assert leader.isr == set(REPLICAS) and leader.pending is None  # rolled back: may be asked again

        leader.controller.decide = lambda isr: (ErrorCode.FENCED_LEADER_EPOCH, [])
        leader.manager.maybe_shrink_isr()
        await settle(leader)
        assert leader.pending == frozenset({LEADER, F2})  # until the next LeaderAndIsr
        leader.manager.maybe_shrink_isr()
        await settle(leader)
        assert leader.controller.received == [[LEADER, F2], [LEADER, F2]]  # not sent again meanwhile
        await leader.channel.close()

    asyncio.run(scenario())


def test_a_failed_request_is_sent_again_after_a_doubling_backoff(leader: ChannelLeader) -> None:
    async def scenario() -> None:
        leader.controller.fail_first = [ErrorCode.NOT_CONTROLLER, ErrorCode.NOT_CONTROLLER]
        leader.controller_known = None  # no controller known at first
        await leader.lagging_f3()
        await settle(leader)
        assert leader.slept == [0.5, 0.05, 0.1]  # no controller; then 50 ms doubling
        assert leader.isr == {LEADER, F2}
        await leader.channel.close()

    asyncio.run(scenario())


def test_a_new_controller_ends_a_backoff_at_once(leader: ChannelLeader) -> None:
    async def scenario() -> None:
        leader.hold_sleeps = True
        leader.controller.fail_first = [ErrorCode.NOT_CONTROLLER]
        await leader.lagging_f3()
        await settle(leader)
        assert leader.slept == [0.05]  # backing off, the change still pending
        assert (leader.isr, leader.pending) == ({LEADER, F2, F3}, frozenset({LEADER, F2}))
        leader.channel.controller_changed()
        await settle(leader)
        assert leader.slept == [0.05] and leader.isr == {LEADER, F2}  # sent to it at once
        await leader.channel.close()

    asyncio.run(scenario())


def test_the_metadata_cache_tells_of_a_new_controller_once() -> None:
    cache = MetadataCache()
    told: list[int | None] = []
    cache.on_new_controller = lambda: told.append(cache.controller_id)
    cache.set_brokers(1, 5, [])
    cache.set_brokers(1, 5, [])  # the same controller again: nothing new
    cache.set_brokers(2, 6, [])
    assert told == [1, 2]
