"""A leader for the replication unit tests: broker 1 leading ``TP`` of replicas (1, 2, 3) in a ``ReplicaManager`` on
real logs under a test's directory and a manual clock, its followers' fetches made as the Fetch handler makes them,
its ISR changes collected in a list (``tests/cluster/test_isr_channel.py`` sends them through an ``IsrChannel``).
"""

from __future__ import annotations

from pathlib import Path

from samsa.broker.replica_manager import (
    FetchRequestPartition,
    FetchResult,
    Partition,
    ReplicaManager,
    ReplicaState,
)
from samsa.clock import ManualClock
from samsa.protocol.errors import ErrorCode
from samsa.records import build_batch
from samsa.storage import FetchIsolation
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager
from samsa.storage.topic import TopicPartition

TP = TopicPartition("t", 0)
LEADER, F2, F3 = 1, 2, 3
REPLICAS = (LEADER, F2, F3)
LAG_MS = 10_000  # replica.lag.time.max.ms


class Leader:
    """A replica manager leading ``TP`` on a manual clock, with the ISR changes it asked the controller for."""

    def __init__(self, directory: Path, *, isr: tuple[int, ...] = REPLICAS, min_isr: int = 1) -> None:
        self.clock = ManualClock()
        self.logs = LogManager([directory], LogConfig(), self.clock)
        self.logs.startup()
        [self.log] = self.logs.create_topic(TP.topic, 1, {"min.insync.replicas": min_isr})
        self.manager = ReplicaManager(self.logs, LEADER, self.clock, replica_lag_time_max_ms=LAG_MS)
        self.isr_changes: list[frozenset[int]] = []
        self.manager.isr_changes = lambda partition, new_isr: self.isr_changes.append(new_isr)
        self.epoch = 1
        self.manager.make_leader(TP, self.log, ReplicaState(LEADER, self.epoch, isr, REPLICAS, 0))

    @property
    def partition(self) -> Partition:
        found = self.manager.partition(TP)
        assert found is not None
        return found

    def append(self, count: int = 1, acks: int = -1) -> int:
        """``count`` records in one batch; the last offset (asserting the append succeeded)."""
        result = self.manager.append(TP, memoryview(bytearray(build_batch([b"v"] * count))), acks)
        assert result.error is ErrorCode.NONE, result
        return result.last_offset

    async def fetch(self, replica: int, offset: int, *, last_fetched_epoch: int = -1) -> FetchResult:
        """One follower fetch that does not wait (``max_wait_ms=0``)."""
        request = FetchRequestPartition(TP, offset, 1 << 20, self.epoch, replica, last_fetched_epoch)
        [result] = await self.manager.fetch(
            [request],
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation=FetchIsolation.LOG_END,
            replica_id=replica,
        )
        return result

    async def catch_up(self, *replicas: int) -> None:
        for replica in replicas:
            await self.fetch(replica, self.log.log_end_offset)

    def answer(self, isr: tuple[int, ...]) -> None:
        """The controller commits ``isr`` (AlterPartition accepted)."""
        self.manager.isr_change_answered(TP, self.epoch, isr, self.partition.partition_epoch + 1)
