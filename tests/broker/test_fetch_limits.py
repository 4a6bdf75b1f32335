"""A fetch's byte limits as Kafka applies them (``ReplicaManager.readFromLocalLog``): the first partition with data
gets its first batch whole, however large; after it, a partition whose first batch does not fit in what is left of
the response's ``max_bytes`` gets no bytes at all, never a cut batch alone. Kafka's Java consumer fails on a
partition answered with bytes but no whole batch ("Received a non-empty fetch response from the server, but no
complete records were found"): its perf-test consumer did, reading 64 partitions from Samsa (2026-11-29)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from samsa.broker.replica_manager import FetchRequestPartition, FetchResult, ReplicaManager
from samsa.clock import ManualClock
from samsa.protocol.errors import ErrorCode
from samsa.records import build_batch
from samsa.storage import FetchIsolation
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager
from samsa.storage.topic import TopicPartition

TPS = [TopicPartition("t", p) for p in range(3)]
BATCH = build_batch([b"x" * 100] * 10)


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[ReplicaManager]:
    clock = ManualClock()
    logs = LogManager([tmp_path], LogConfig(), clock)
    logs.startup()
    logs.create_topic("t", len(TPS))
    replicas = ReplicaManager(logs, 1, clock)
    replicas.startup()
    for tp in TPS:
        assert replicas.append(tp, memoryview(bytearray(BATCH)), 1).error is ErrorCode.NONE
    yield replicas
    logs.shutdown()


def fetch(manager: ReplicaManager, max_bytes: int, partition_max_bytes: int = 1 << 20) -> list[FetchResult]:
    requests = [FetchRequestPartition(tp, 0, partition_max_bytes) for tp in TPS]
    return asyncio.run(
        manager.fetch(
            requests, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes, isolation=FetchIsolation.HIGH_WATERMARK
        )
    )


def sizes(results: list[FetchResult]) -> list[int]:
    assert all(r.error is ErrorCode.NONE for r in results)
    return [r.records.size if r.records is not None else 0 for r in results]


def test_a_partition_whose_first_batch_does_not_fit_what_is_left_gets_nothing(
    manager: ReplicaManager,
) -> None:
    size = len(BATCH)
    assert sizes(fetch(manager, size + size // 2)) == [size, 0, 0]
    assert sizes(fetch(manager, 2 * size)) == [size, size, 0]
    assert sizes(fetch(manager, 3 * size)) == [size, size, size]


def test_the_first_partition_with_data_gets_its_first_batch_whole(manager: ReplicaManager) -> None:
    size = len(BATCH)
    assert sizes(fetch(manager, 10)) == [size, 0, 0]
    assert sizes(fetch(manager, 1 << 20, partition_max_bytes=10)) == [size, 0, 0]
