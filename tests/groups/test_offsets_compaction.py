"""__consumer_offsets is compacted: many commits of the same group and partitions shrink to the latest ones, which
are still what the coordinator answers, before and after a restart; a compacted topic refuses keyless records."""

from __future__ import annotations

import asyncio
from pathlib import Path

from samsa.broker.broker import KafkaServer
from samsa.broker.config import KafkaConfig
from samsa.clock import ManualClock
from samsa.coordinator import OffsetAndMetadata
from samsa.protocol.errors import ErrorCode
from samsa.records import Record, build_batch
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

GROUP = "ledger-readers"
TPS = [TopicPartition("orders", 0), TopicPartition("orders", 1)]
COMMITS = 300


def make_broker(log_dir: Path, clock: ManualClock) -> KafkaServer:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(log_dir),
        "offsets.topic.num.partitions": "1",
        "offsets.topic.segment.bytes": "4096",
        "group.initial.rebalance.delay.ms": "0",
        "log.cleaner.backoff.ms": "1000",
    }
    return KafkaServer(KafkaConfig.from_properties(props), clock)


async def run_cleaner(broker: KafkaServer, clock: ManualClock) -> None:
    """Drive the log manager's periodic tasks until a cleaning was swapped in (it runs on the worker thread)."""
    for _ in range(1000):
        if "cleaner" in broker.log_manager.schedule_due(clock.milliseconds()):
            return
        await asyncio.sleep(0.005)
    raise AssertionError("no cleaning happened")


def test_consumer_offsets_shrinks_and_offsets_survive_a_restart(tmp_path: Path) -> None:
    clock = ManualClock()
    offsets_tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, 0)

    async def first_life() -> None:
        broker = make_broker(tmp_path, clock)
        await broker.start()
        try:
            from samsa.broker.topic_admin import create_topic
            from samsa.new_topic import NewTopic

            assert create_topic(
                broker.config, broker.log_manager, broker.replica_manager, NewTopic("orders", 2, 1, {})
            ).ok
            coordinator = broker.group_coordinator
            for i in range(COMMITS):
                commit = {tp: OffsetAndMetadata(i * 10 + tp.partition) for tp in TPS}
                assert await coordinator.commit_offsets(GROUP, "", -1, None, commit) == dict.fromkeys(
                    TPS, ErrorCode.NONE
                )
            log = broker.log_manager.get_log(offsets_tp)
            assert log is not None and len(log.segments) > 10
            size = log.size
            await run_cleaner(broker, clock)
            assert log.size < size / 10
            assert broker.log_manager.cleaner_checkpoints()[offsets_tp] == log.active_segment.base_offset
            assert coordinator.fetch_offsets(GROUP, TPS) == {
                tp: OffsetAndMetadata((COMMITS - 1) * 10 + tp.partition) for tp in TPS
            }
        finally:
            await broker.stop()

    async def second_life() -> None:
        broker = make_broker(tmp_path, clock)
        await broker.start()
        try:
            found = broker.group_coordinator.fetch_offsets(GROUP, TPS)
            assert {tp: found[tp].offset for tp in TPS} == {  # type: ignore[union-attr]
                tp: (COMMITS - 1) * 10 + tp.partition for tp in TPS
            }
        finally:
            await broker.stop()

    asyncio.run(first_life())
    asyncio.run(second_life())


def test_a_compacted_topic_refuses_records_without_key(tmp_path: Path) -> None:
    clock = ManualClock()

    async def scenario() -> None:
        broker = make_broker(tmp_path, clock)
        await broker.start()
        try:
            from samsa.broker.topic_admin import create_topic
            from samsa.new_topic import NewTopic

            assert create_topic(
                broker.config,
                broker.log_manager,
                broker.replica_manager,
                NewTopic("table", 1, 1, {"cleanup.policy": "compact"}),
            ).ok
            tp = TopicPartition("table", 0)
            keyless = bytearray(build_batch([Record(0, 1, b"k", b"v"), Record(1, 1, None, b"v")]))
            result = broker.replica_manager.append(tp, memoryview(keyless), acks=-1)
            assert result.error is ErrorCode.INVALID_RECORD
            assert result.record_errors == (
                (1, "Compacted topic cannot accept message without key in topic partition table-0."),
            )
            keyed = bytearray(build_batch([Record(0, 1, b"k", b"v")]))
            assert broker.replica_manager.append(tp, memoryview(keyed), acks=-1).error is ErrorCode.NONE
        finally:
            await broker.stop()

    asyncio.run(scenario())
