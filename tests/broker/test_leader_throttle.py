"""The leader side of the replication throttle, on an in-process broker leading a partition with two followers (as
a controller would make it): what ``leader.replication.throttled.rate`` counts and whom it holds back."""

from __future__ import annotations

import asyncio
from pathlib import Path

from samsa.broker.broker import KafkaServer
from samsa.broker.config import KafkaConfig
from samsa.broker.replica_manager import FetchRequestPartition, ReplicaState
from samsa.broker.topic_admin import create_topic
from samsa.clock import ManualClock
from samsa.new_topic import NewTopic
from samsa.records import Record, build_batch
from samsa.storage import FetchIsolation
from samsa.storage.topic import TopicPartition

TP = TopicPartition("moving", 0)
IN_SYNC, CATCHING_UP = 101, 102


async def fetched_bytes(broker: KafkaServer, replica_id: int) -> int:
    """What ``replica_id`` gets fetching the partition from offset 0."""
    manager = broker.replica_manager
    partition = manager.partition(TP)
    assert partition is not None
    request = FetchRequestPartition(TP, 0, 1 << 20, partition.leader_epoch, replica_id=replica_id)
    [result] = await manager.fetch(
        [request],
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation=FetchIsolation.LOG_END,
        replica_id=replica_id,
    )
    return 0 if result.records is None else result.records.size


def test_bytes_to_in_sync_followers_count_and_only_followers_catching_up_wait(tmp_path: Path) -> None:
    async def scenario() -> None:
        props = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path)}
        broker = KafkaServer(KafkaConfig.from_properties(props), ManualClock())
        await broker.start()
        try:
            throttled = NewTopic(TP.topic, 1, 1, {"leader.replication.throttled.replicas": "*"})
            assert create_topic(broker.config, broker.log_manager, broker.replica_manager, throttled).ok
            manager = broker.replica_manager
            partition = manager.partition(TP)
            assert partition is not None
            node = manager.node_id
            replicas = (node, IN_SYNC, CATCHING_UP)
            state = ReplicaState(
                node, partition.leader_epoch + 1, (node, IN_SYNC), replicas, partition.partition_epoch + 1
            )
            manager.make_leader(TP, partition.log, state)
            records = [Record(i, 1_700_000_000_000, None, b"v" * 100) for i in range(20)]
            partition.log.append_as_leader(bytearray(build_batch(records)), state.leader_epoch)

            manager.leader_quota.rate = 1_000  # bytes/s, below one fetch of the batch
            assert await fetched_bytes(broker, IN_SYNC) > 1_000  # in sync: never held back, but counted
            assert manager.leader_quota.over(broker.clock.monotonic_ms())
            assert await fetched_bytes(broker, CATCHING_UP) == 0  # held back by the in-sync follower's bytes
            assert await fetched_bytes(broker, IN_SYNC) > 0

            manager.leader_quota.rate = None  # the throttle lifted
            assert await fetched_bytes(broker, CATCHING_UP) > 1_000
        finally:
            await broker.stop()

    asyncio.run(scenario())
