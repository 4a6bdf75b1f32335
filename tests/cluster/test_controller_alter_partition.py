"""The controller's AlterPartition on a real ZooKeeper: an in-process ``Controller`` elected there, brokers 1-3
registered by sessions of their own (nothing listens at their addresses: what the controller sends them is
retried in the background and never needed here), and ISR changes sent as a leader sends them.

What it shows: a change is written (the partition epoch, the state znode's version, goes up by one); the same
change sent again with the partition epoch it was first sent with (a leader retrying after its answer was lost)
answers success with the current state and writes nothing; a different change with that stale epoch is refused
with INVALID_UPDATE_VERSION.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import pytest
from tests.cluster.waiting import wait_for

from samsa.cluster.controller import Controller
from samsa.cluster.zk_client import ZkClient
from samsa.cluster.znodes import BrokerRegistration, Endpoint, TopicAssignment
from samsa.protocol import ErrorCode
from samsa.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponsePartitionData,
)
from samsa.storage.topic import TopicPartition

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

TOPIC = "isr"
TP = TopicPartition(TOPIC, 0)
UNUSED_PORT = 9  # discard: refused on loopback


@contextmanager
def registered(connect: str, broker_ids: list[int]) -> Iterator[list[ZkClient]]:
    """One ZooKeeper session per broker, each holding its ``/brokers/ids/<id>``."""
    sessions = []
    try:
        for broker_id in broker_ids:
            zk = ZkClient(connect, session_timeout_ms=6000)
            zk.start()
            sessions.append(zk)
            zk.register_broker(
                BrokerRegistration(broker_id, (Endpoint("PLAINTEXT", "127.0.0.1", UNUSED_PORT),))
            )
        yield sessions
    finally:
        for zk in sessions:
            zk.close()


@asynccontextmanager
async def controller_of(connect: str, broker_id: int) -> AsyncIterator[Controller]:
    zk = ZkClient(connect, session_timeout_ms=6000)
    await asyncio.to_thread(zk.start)
    controller = Controller(zk, broker_id, "PLAINTEXT")
    await controller.start()
    try:
        yield controller
    finally:
        await controller.stop()
        await asyncio.to_thread(zk.close)


def alter(leader: int, leader_epoch: int, partition_epoch: int, isr: list[int]) -> AlterPartitionRequest:
    partition = AlterPartitionRequestPartitionData(
        partition_index=TP.partition, leader_epoch=leader_epoch, new_isr=isr, partition_epoch=partition_epoch
    )
    return AlterPartitionRequest(
        broker_id=leader,
        broker_epoch=-1,
        topics=[AlterPartitionRequestTopicData(topic_name=TOPIC, partitions=[partition])],
    )


async def answer(
    controller: Controller, request: AlterPartitionRequest
) -> AlterPartitionResponsePartitionData:
    response = await asyncio.wait_for(controller.alter_partition(request), 30)
    assert response.error_code == ErrorCode.NONE
    [topic] = response.topics
    [partition] = topic.partitions
    return partition


def test_an_isr_change_sent_again_answers_success_with_the_current_state(zk_connect: str) -> None:
    with registered(zk_connect, [1, 2, 3]) as sessions:
        sessions[0].create_topic(TOPIC, TopicAssignment({0: (1, 2, 3)}), {})

        async def scenario() -> None:
            async with controller_of(zk_connect, 1) as controller:
                await asyncio.to_thread(
                    wait_for,
                    "the controller to elect a leader",
                    lambda: (e := controller.partitions.get(TP)) is not None and e.state is not None,
                )
                entry = controller.partitions[TP]
                assert entry.state is not None and entry.state.leader == 1 and entry.state.isr == (1, 2, 3)
                epoch, version = entry.state.leader_epoch, entry.partition_epoch

                shrunk = await answer(controller, alter(1, epoch, version, [1, 2]))
                assert (shrunk.error_code, shrunk.isr, shrunk.partition_epoch) == (
                    ErrorCode.NONE,
                    [1, 2],
                    version + 1,
                )
                again = await answer(
                    controller, alter(1, epoch, version, [1, 2])
                )  # the retry of a lost answer
                assert again == shrunk
                stored = await asyncio.to_thread(sessions[0].partition_state, TOPIC, 0)
                assert (
                    stored is not None and stored[0].isr == (1, 2) and stored[1] == version + 1
                )  # written once

                other = await answer(controller, alter(1, epoch, version, [1]))  # another change, stale epoch
                assert other.error_code == ErrorCode.INVALID_UPDATE_VERSION
                assert (other.isr, other.partition_epoch) == ([1, 2], version + 1)
                fenced = await answer(controller, alter(1, epoch - 1, version + 1, [1, 2]))
                assert fenced.error_code == ErrorCode.FENCED_LEADER_EPOCH

        asyncio.run(scenario())
