"""``TransactionCoordinator`` over an in-memory ``__transaction_state`` and a recording marker sender."""

from __future__ import annotations

import asyncio
import itertools

from samsa.clock import ManualClock
from samsa.protocol.errors import ErrorCode
from samsa.transaction import log_format
from samsa.transaction.coordinator import TransactionConfig, TransactionCoordinator
from samsa.transaction.state import TopicPartitionKey, TransactionState


class FakeLog:
    def __init__(self) -> None:
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.fail: ErrorCode = ErrorCode.NONE

    async def write(self, partition: int, key: bytes, value: bytes | None) -> ErrorCode:
        if self.fail:
            return self.fail
        self.records.setdefault(partition, []).append((key, value))
        return ErrorCode.NONE


class FakeMarkers:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, bool, int, list[TopicPartitionKey]]] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: list[TopicPartitionKey],
    ) -> None:
        await self.gate.wait()
        self.sent.append((producer_id, producer_epoch, commit, coordinator_epoch, partitions))


def _coordinator(log: FakeLog, markers: FakeMarkers, clock: ManualClock) -> TransactionCoordinator:
    ids = itertools.count(5000)

    async def next_id() -> int:
        return next(ids)

    coordinator = TransactionCoordinator(log, markers, next_id, clock, TransactionConfig(num_partitions=3))
    for partition in range(3):
        coordinator.begin_load(partition, coordinator_epoch=7)
        coordinator.load(partition, [])
    return coordinator


def test_commit_writes_prepare_then_markers_then_complete() -> None:
    async def run() -> None:
        log, markers, clock = FakeLog(), FakeMarkers(), ManualClock()
        c = _coordinator(log, markers, clock)
        assert await c.init_producer_id("t", 60_000) == (ErrorCode.NONE, 5000, 0)
        assert await c.add_partitions("t", 5000, 0, [("out", 1), ("out", 0)]) is ErrorCode.NONE
        markers.gate.clear()
        assert await c.end_transaction("t", 5000, 0, True) is ErrorCode.NONE
        # completing: the id is busy
        assert await c.add_partitions("t", 5000, 0, [("out", 0)]) is ErrorCode.CONCURRENT_TRANSACTIONS
        markers.gate.set()
        await c.drain()
        assert markers.sent == [(5000, 0, True, 7, [("out", 0), ("out", 1)])]
        states = [
            log_format.decode_value("t", v).state
            for _, v in log.records[c.partition_for("t")]
            if v is not None
        ]
        assert states == [
            TransactionState.EMPTY,
            TransactionState.ONGOING,
            TransactionState.PREPARE_COMMIT,
            TransactionState.COMPLETE_COMMIT,
        ]
        assert await c.end_transaction("t", 5000, 0, True) is ErrorCode.NONE  # a retry

    asyncio.run(run())


def test_zombie_is_fenced_and_its_transaction_aborted() -> None:
    async def run() -> None:
        log, markers, clock = FakeLog(), FakeMarkers(), ManualClock()
        c = _coordinator(log, markers, clock)
        await c.init_producer_id("t", 60_000)
        await c.add_partitions("t", 5000, 0, [("out", 0)])
        error, _, _ = await c.init_producer_id("t", 60_000)  # a second producer with the same id
        assert error is ErrorCode.CONCURRENT_TRANSACTIONS
        await c.drain()
        assert markers.sent == [(5000, 1, False, 7, [("out", 0)])]
        assert await c.init_producer_id("t", 60_000) == (ErrorCode.NONE, 5000, 2)
        assert await c.add_partitions("t", 5000, 0, [("out", 0)]) is ErrorCode.PRODUCER_FENCED
        assert (
            await c.end_transaction("t", 5000, 0, True, fenced_error=False)
            is ErrorCode.INVALID_PRODUCER_EPOCH
        )

    asyncio.run(run())


def test_reload_finishes_a_prepared_commit() -> None:
    async def run() -> None:
        log, markers, clock = FakeLog(), FakeMarkers(), ManualClock()
        c = _coordinator(log, markers, clock)
        await c.init_producer_id("t", 60_000)
        await c.add_partitions("t", 5000, 0, [("out", 0)])
        markers.gate.clear()
        await c.end_transaction("t", 5000, 0, True)
        partition = c.partition_for("t")
        c.unload(partition)  # the coordinator moved before the markers
        markers.gate.set()
        await c.drain()
        assert markers.sent == []
        new = _coordinator(log, FakeMarkers(), clock)
        new.begin_load(partition, 8)
        assert (await new.init_producer_id("t", 60_000))[0] is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        new.load(partition, log.records[partition])
        await new.drain()
        assert new._markers.sent == [(5000, 0, True, 8, [("out", 0)])]  # type: ignore[attr-defined]
        _, meta = new.metadata("t")
        assert meta is not None and meta.state is TransactionState.COMPLETE_COMMIT
        c.unload(partition)
        assert (await c.init_producer_id("t", 60_000))[0] is ErrorCode.NOT_COORDINATOR

    asyncio.run(run())


def test_timeout_aborts_and_fences_then_ids_expire() -> None:
    async def run() -> None:
        log, markers, clock = FakeLog(), FakeMarkers(), ManualClock()
        c = _coordinator(log, markers, clock)
        await c.init_producer_id("t", 1_000)
        await c.add_partitions("t", 5000, 0, [("out", 0)])
        clock.advance(1_000)
        assert await c.abort_timed_out() == 0
        clock.advance(1)
        assert await c.abort_timed_out() == 1
        await c.drain()
        assert markers.sent == [(5000, 1, False, 7, [("out", 0)])]
        assert await c.end_transaction("t", 5000, 0, True) is ErrorCode.PRODUCER_FENCED
        assert [m.state for m in c.list_transactions(["CompleteAbort"])] == [TransactionState.COMPLETE_ABORT]
        clock.advance(c.config.id_expiration_ms)
        assert await c.expire_transactional_ids() == 1
        assert c.metadata("t")[0] is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        assert log.records[c.partition_for("t")][-1] == (log_format.encode_key("t"), None)

    asyncio.run(run())


def test_failed_state_write_changes_nothing() -> None:
    async def run() -> None:
        log, markers, clock = FakeLog(), FakeMarkers(), ManualClock()
        c = _coordinator(log, markers, clock)
        await c.init_producer_id("t", 60_000)
        log.fail = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await c.add_partitions("t", 5000, 0, [("out", 0)]) is ErrorCode.COORDINATOR_NOT_AVAILABLE
        _, meta = c.metadata("t")
        assert meta is not None and meta.state is TransactionState.EMPTY
        assert c.verify_partitions("t", 5000, 0, [("out", 0)]) == {("out", 0): ErrorCode.INVALID_TXN_STATE}

    asyncio.run(run())
