"""The controller writes a batch of partition states in one ZooKeeper transaction, as Kafka's controller writes its
leader-and-ISR changes in one batch: a leader's AlterPartition naming many partitions, and a broker's failure that
moves many leaderships. On a real ZooKeeper with an in-process ``Controller`` (the harness of
``test_controller_alter_partition``).

What it shows: every state znode the batch changed carries the same modifying transaction id (``mzxid``), so the
changes were one transaction, one round trip; written one by one, each would carry its own. Why it matters: a
follower that catches up on 50 partitions after a restart has its ISR changes answered in one round trip instead
of 50, so a ZooKeeper outage that begins a second later cannot leave most of them (and the group coordinator's
partition among them) below ``min.insync.replicas`` until it ends.
"""

from __future__ import annotations

import asyncio

import pytest
from tests.cluster.test_controller_alter_partition import controller_of, registered
from tests.cluster.waiting import wait_for

from samsa.cluster.controller import Controller
from samsa.cluster.zk_client import ZkClient
from samsa.cluster.znodes import TopicAssignment, partition_state_path
from samsa.protocol import ErrorCode
from samsa.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from samsa.storage.topic import TopicPartition

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

TOPIC = "many"
PARTITIONS = 40


def modifying_transactions(zk: ZkClient) -> dict[int, int]:
    """Each partition's state znode: the id of the ZooKeeper transaction that last changed it."""
    return {p: zk.kazoo.get(partition_state_path(TOPIC, p))[1].mzxid for p in range(PARTITIONS)}


async def elected(controller: Controller) -> None:
    def all_led() -> bool:
        entries = [controller.partitions.get(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)]
        return all(e is not None and e.state is not None for e in entries)

    await asyncio.to_thread(wait_for, "the controller to elect every partition's leader", all_led)


def test_an_alter_partition_of_many_partitions_is_written_in_one_transaction(zk_connect: str) -> None:
    with registered(zk_connect, [1, 2, 3]) as sessions:
        sessions[0].create_topic(TOPIC, TopicAssignment({p: (1, 2, 3) for p in range(PARTITIONS)}), {})

        async def scenario() -> None:
            async with controller_of(zk_connect, 1) as controller:
                await elected(controller)
                partitions = []
                for p in range(PARTITIONS):
                    state = controller.partitions[TopicPartition(TOPIC, p)]
                    assert state.state is not None and state.state.isr == (1, 2, 3)
                    partitions.append(
                        AlterPartitionRequestPartitionData(
                            partition_index=p,
                            leader_epoch=state.state.leader_epoch,
                            new_isr=[1, 2],
                            # partition 7's change names an epoch it never had: refused, the others written
                            partition_epoch=state.partition_epoch + (5 if p == 7 else 0),
                        )
                    )
                request = AlterPartitionRequest(
                    broker_id=1,
                    broker_epoch=-1,
                    topics=[AlterPartitionRequestTopicData(topic_name=TOPIC, partitions=partitions)],
                )
                response = await asyncio.wait_for(controller.alter_partition(request), 30)
                [topic] = response.topics
                answers = {a.partition_index: a for a in topic.partitions}
                assert answers[7].error_code == ErrorCode.INVALID_UPDATE_VERSION
                assert answers[7].isr == [1, 2, 3]
                for p, a in answers.items():
                    if p != 7:
                        assert (a.error_code, a.isr) == (ErrorCode.NONE, [1, 2]), p
                        entry = controller.partitions[TopicPartition(TOPIC, p)]
                        assert a.partition_epoch == entry.partition_epoch

            written = await asyncio.to_thread(modifying_transactions, sessions[0])
            assert len({z for p, z in written.items() if p != 7}) == 1, written
            assert written[7] != written[0]

        asyncio.run(scenario())


def test_a_broker_failure_moves_its_leaderships_in_one_transaction(zk_connect: str) -> None:
    with registered(zk_connect, [1, 2, 3]) as sessions:
        sessions[0].create_topic(TOPIC, TopicAssignment({p: (2, 3, 1) for p in range(PARTITIONS)}), {})

        async def scenario() -> None:
            async with controller_of(zk_connect, 1) as controller:
                await elected(controller)
                assert all(
                    e.state is not None and e.state.leader == 2 for e in controller.partitions.values()
                )
                await asyncio.to_thread(sessions[1].close)  # broker 2 leaves

                def moved() -> bool:
                    states = [
                        controller.partitions[TopicPartition(TOPIC, p)].state for p in range(PARTITIONS)
                    ]
                    return all(s is not None and s.leader == 3 and s.isr == (3, 1) for s in states)

                await asyncio.to_thread(wait_for, "broker 2's leaderships to move to broker 3", moved)

            written = await asyncio.to_thread(modifying_transactions, sessions[0])
            assert len(set(written.values())) == 1, written

        asyncio.run(scenario())
