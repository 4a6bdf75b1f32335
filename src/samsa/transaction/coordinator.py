"""``TransactionCoordinator``: the transactional ids of the ``__transaction_state`` partitions this broker leads.

It applies ``state``'s rules, writes each transition to ``__transaction_state`` (acks=all) before answering, and
after a PrepareCommit/PrepareAbort has the ``MarkerSender`` write the markers to every partition of the
transaction (retried across leader changes by the sender) before writing CompleteCommit/CompleteAbort.

What it needs of the broker comes in as two protocols (``TransactionStateLog``, ``MarkerSender``) and a producer id
source, so the rules run in unit tests with fakes. Event-loop thread only. While a write for an id is in flight
the id is *pending*: another request for it gets CONCURRENT_TRANSACTIONS (Kafka's ``pendingState``), so two
transitions of one id never interleave. Leadership: ``load`` when this broker becomes leader of a partition (with
the partition's leader epoch, the coordinator epoch markers carry), ``unload`` when it stops; requests for ids
of a partition not loaded get NOT_COORDINATOR, of a partition loading COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from samsa.clock import Clock
from samsa.protocol.errors import ErrorCode
from samsa.transaction import log_format, state
from samsa.transaction.state import TopicPartitionKey, TransactionMetadata, TransactionState

log = logging.getLogger(__name__)


class TransactionStateLog(Protocol):
    """The ``__transaction_state`` partitions, as the coordinator writes them."""

    async def write(self, partition: int, key: bytes, value: bytes | None) -> ErrorCode:
        """Append one record as leader and wait for the ISR (acks=all): NONE, or the error Kafka would give."""
        ...


class MarkerSender(Protocol):
    """Writes transaction markers (in-process where this broker leads the partition, else WriteTxnMarkers)."""

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: list[TopicPartitionKey],
    ) -> None:
        """Return once every partition has the marker (retrying across leader changes); partitions deleted
        meanwhile count as done."""
        ...


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    """The ``transaction.*`` broker configs the coordinator reads (Kafka's defaults)."""

    num_partitions: int = 50
    max_timeout_ms: int = 900_000
    abort_timed_out_interval_ms: int = 10_000
    id_expiration_ms: int = 604_800_000


@dataclass(slots=True)
class _Partition:
    coordinator_epoch: int
    loading: bool = True
    ids: dict[str, TransactionMetadata] = field(default_factory=dict)


class TransactionCoordinator:
    """Kafka's transaction coordinator for the partitions this broker leads; event-loop thread only."""

    def __init__(
        self,
        log_: TransactionStateLog,
        markers: MarkerSender,
        producer_ids: Callable[[], Awaitable[int]],
        clock: Clock,
        config: TransactionConfig | None = None,
    ) -> None:
        self._log = log_
        self._markers = markers
        self._producer_ids = producer_ids
        self._clock = clock
        self.config = config or TransactionConfig()
        self._partitions: dict[int, _Partition] = {}
        self._pending: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    # -- leadership -------------------------------------------------------------------------------------------

    def begin_load(self, partition: int, coordinator_epoch: int) -> None:
        """This broker became leader of ``partition``: its ids answer COORDINATOR_LOAD_IN_PROGRESS until loaded."""
        self._partitions[partition] = _Partition(coordinator_epoch)

    def load(self, partition: int, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Replay the partition's records (key, value or None for a tombstone), oldest first; then finish the
        transactions left in PrepareCommit/PrepareAbort by the previous coordinator."""
        slot = self._partitions[partition]
        for key, value in records:
            tid = log_format.decode_key(key)
            if value is None:
                slot.ids.pop(tid, None)
            else:
                slot.ids[tid] = log_format.decode_value(tid, value)
        slot.loading = False
        for meta in list(slot.ids.values()):
            if meta.state in state.PREPARING:
                self._pending.add(meta.transactional_id)
                self._spawn(self._finish(meta))

    def loaded_partitions(self) -> list[int]:
        return sorted(self._partitions)

    def coordinator_epoch(self, partition: int) -> int | None:
        """The epoch the partition was loaded with (None: not loaded here)."""
        slot = self._partitions.get(partition)
        return slot.coordinator_epoch if slot is not None else None

    def unload(self, partition: int) -> None:
        """This broker stopped leading ``partition``: forget its ids (the new leader reloads them)."""
        self._partitions.pop(partition, None)

    # -- lookups ----------------------------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return log_format.partition_for(transactional_id, self.config.num_partitions)

    def _slot(self, transactional_id: str) -> tuple[ErrorCode, _Partition | None]:
        slot = self._partitions.get(self.partition_for(transactional_id))
        if slot is None:
            return ErrorCode.NOT_COORDINATOR, None
        if slot.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        return ErrorCode.NONE, slot

    def _ready(self, transactional_id: str) -> tuple[ErrorCode, _Partition | None]:
        error, slot = self._slot(transactional_id)
        if not error and transactional_id in self._pending:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        return error, slot

    def metadata(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        """DescribeTransactions: the id's metadata, TRANSACTIONAL_ID_NOT_FOUND when unknown here."""
        error, slot = self._slot(transactional_id)
        if slot is None:
            return error, None
        meta = slot.ids.get(transactional_id)
        return (ErrorCode.NONE, meta) if meta else (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None)

    def list_transactions(
        self, states: Iterable[str] = (), producer_ids: Iterable[int] = ()
    ) -> list[TransactionMetadata]:
        """ListTransactions: the loaded ids, filtered by state names and producer ids (empty: no filter)."""
        wanted_states = {TransactionState.from_kafka_name(s) for s in states}
        wanted_pids = set(producer_ids)
        return [
            meta
            for slot in self._partitions.values()
            if not slot.loading
            for meta in slot.ids.values()
            if (not wanted_states or meta.state in wanted_states)
            and (not wanted_pids or meta.producer_id in wanted_pids)
        ]

    def unknown_state_filters(self, states: Iterable[str]) -> list[str]:
        known = {s.kafka_name for s in TransactionState}
        return [s for s in states if s not in known]

    # -- requests ---------------------------------------------------------------------------------------------

    async def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None = None,
        fenced_error: bool = True,
    ) -> tuple[ErrorCode, int, int]:
        """InitProducerId with a transactional id: (error, producer id, epoch)."""
        error, slot = self._ready(transactional_id)
        if slot is None:
            return error, -1, -1
        meta = slot.ids.get(transactional_id)
        new_id = await self._new_id_if_needed(meta)
        now = self._clock.milliseconds()
        out = state.init_producer_id(
            meta,
            transactional_id,
            timeout_ms,
            self.config.max_timeout_ms,
            now,
            lambda: new_id,
            expected,
            fenced_error,
        )
        if out.metadata is None:
            return out.error, -1, -1
        error = await self._write(slot, out.metadata)
        if error:
            return error, -1, -1
        if out.abort_first:
            self._pending.add(transactional_id)
            self._spawn(self._finish(out.metadata))
            return out.error, -1, -1
        return out.error, out.metadata.producer_id, out.metadata.producer_epoch

    async def _new_id_if_needed(self, meta: TransactionMetadata | None) -> int:
        if (
            meta is None
            or meta.state is TransactionState.DEAD
            or meta.producer_epoch >= state.MAX_PRODUCER_EPOCH
        ):
            return await self._producer_ids()
        return -1

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartitionKey],
        fenced_error: bool = True,
    ) -> ErrorCode:
        """AddPartitionsToTxn / AddOffsetsToTxn: one error for every partition of the request."""
        error, slot = self._ready(transactional_id)
        if slot is None:
            return error
        meta = slot.ids.get(transactional_id)
        out = state.add_partitions(
            meta, producer_id, producer_epoch, partitions, self._clock.milliseconds(), fenced_error
        )
        if out.metadata is None:
            return out.error
        return await self._write(slot, out.metadata)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartitionKey],
    ) -> dict[TopicPartitionKey, ErrorCode]:
        """The verify-only form of AddPartitionsToTxn (KIP-890): nothing written."""
        error, slot = self._slot(transactional_id)
        if slot is None:
            return dict.fromkeys(partitions, error)
        meta = slot.ids.get(transactional_id)
        return state.verify_partitions(meta, producer_id, producer_epoch, partitions)

    async def end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        fenced_error: bool = True,
    ) -> ErrorCode:
        """EndTxn: PrepareX written, answered, then markers and CompleteX in the background."""
        error, slot = self._ready(transactional_id)
        if slot is None:
            return error
        meta = slot.ids.get(transactional_id)
        out = state.end_transaction(
            meta, producer_id, producer_epoch, commit, self._clock.milliseconds(), fenced_error
        )
        if out.metadata is None:
            return out.error
        error = await self._write(slot, out.metadata)
        if error:
            return error
        self._pending.add(transactional_id)
        self._spawn(self._finish(out.metadata))
        return ErrorCode.NONE

    # -- background -------------------------------------------------------------------------------------------

    async def abort_timed_out(self) -> int:
        """Abort (fencing the producer) every Ongoing transaction past its timeout; how many were aborted."""
        now = self._clock.milliseconds()
        count = 0
        for slot in list(self._partitions.values()):
            for meta in list(slot.ids.values()):
                if slot.loading or meta.transactional_id in self._pending or not state.timed_out(meta, now):
                    continue
                aborting = state.fence_and_abort(meta, now)
                if await self._write(slot, aborting):
                    continue
                log.info(
                    "transaction %s timed out after %d ms: aborting", meta.transactional_id, meta.timeout_ms
                )
                self._pending.add(meta.transactional_id)
                self._spawn(self._finish(aborting))
                count += 1
        return count

    async def expire_transactional_ids(self) -> int:
        """Tombstone the ids unused for ``transactional.id.expiration.ms``; how many."""
        now = self._clock.milliseconds()
        count = 0
        for partition, slot in list(self._partitions.items()):
            for meta in list(slot.ids.values()):
                tid = meta.transactional_id
                if (
                    slot.loading
                    or tid in self._pending
                    or not state.expired(meta, now, self.config.id_expiration_ms)
                ):
                    continue
                self._pending.add(tid)
                try:
                    error = await self._log.write(partition, log_format.encode_key(tid), None)
                finally:
                    self._pending.discard(tid)
                if not error and slot.ids.get(tid) is meta:
                    del slot.ids[tid]
                    count += 1
        return count

    async def run_periodic(self) -> None:
        """The timeout-abort and expiration loop, every ``transaction.abort.timed.out...interval.ms``."""
        while True:
            await asyncio.sleep(self.config.abort_timed_out_interval_ms / 1000)
            try:
                await self.abort_timed_out()
                await self.expire_transactional_ids()
            except Exception:  # a failed round is retried at the next
                log.exception("transaction coordinator's periodic round failed")

    async def drain(self) -> None:
        """Wait for the marker tasks in flight (tests, clean shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    # -- internals --------------------------------------------------------------------------------------------

    async def _write(self, slot: _Partition, meta: TransactionMetadata) -> ErrorCode:
        tid = meta.transactional_id
        partition = self.partition_for(tid)
        self._pending.add(tid)
        try:
            error = await self._log.write(
                partition, log_format.encode_key(tid), log_format.encode_value(meta)
            )
        finally:
            self._pending.discard(tid)
        if error:
            return _coordinator_error(error)
        if self._partitions.get(partition) is not slot:  # unloaded while writing: the new leader owns it
            return ErrorCode.NOT_COORDINATOR
        slot.ids[tid] = meta
        return ErrorCode.NONE

    async def _finish(self, prepared: TransactionMetadata) -> None:
        """Markers for a PrepareCommit/PrepareAbort, then CompleteX; the id stays pending until then."""
        tid = prepared.transactional_id
        partition = self.partition_for(tid)
        try:
            slot = self._partitions.get(partition)
            if slot is None:
                return
            commit = prepared.state is TransactionState.PREPARE_COMMIT
            await self._markers.write_markers(
                prepared.producer_id,
                prepared.producer_epoch,
                commit,
                slot.coordinator_epoch,
                sorted(prepared.partitions),
            )
            done = state.complete(prepared, self._clock.milliseconds())
            while self._partitions.get(partition) is slot:
                error = await self._log.write(
                    partition, log_format.encode_key(tid), log_format.encode_value(done)
                )
                if not error:
                    slot.ids[tid] = done
                    return
                await asyncio.sleep(0.1)
        finally:
            self._pending.discard(tid)

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _coordinator_error(error: ErrorCode) -> ErrorCode:
    """A failed ``__transaction_state`` write as the client should see it (Kafka's mapping)."""
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        return ErrorCode.NOT_COORDINATOR
    if error in (
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.UNKNOWN_SERVER_ERROR
