"""Partitions this broker hosts, and the produce, fetch and list-offsets paths over their logs.

A ``Partition`` is a log plus its replication state: leader, leader epoch, replicas and the in-sync set. The
high watermark is kept apart from the log end offset: it advances to the smallest log end offset over the ISR, so
with followers it trails the leader's log, and with a single in-sync replica (the embedded default) it follows the
leader's log end offset as soon as an append lands. Consumers read only below it.

The replica manager never raises for one partition's trouble: each partition's answer carries a Kafka error code,
so one bad partition does not fail the others in the same request.

Event-loop thread only: storage calls are synchronous and short (one write, or slices of files).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from samsa.clock import Clock
from samsa.protocol.errors import ErrorCode
from samsa.records import CorruptRecordError, InvalidRecordError
from samsa.storage import (
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    RecordValidationError,
    StorageError,
)
from samsa.storage.errors import (
    InvalidProducerEpochError,
    InvalidSequenceError,
    OutOfOrderSequenceError,
)
from samsa.storage.log_manager import LogManager
from samsa.storage.topic import TopicPartition

from .purgatory import Purgatory

if TYPE_CHECKING:  # start-up time: samsa.storage.log is loaded with the first log
    from samsa.storage import FetchIsolation, FileSlice, Log

log = logging.getLogger(__name__)

NO_LEADER_EPOCH = -1


@dataclass(slots=True)
class Partition:
    """One hosted partition: its log and replication state. Event-loop thread only."""

    tp: TopicPartition
    log: Log
    leader_id: int
    leader_epoch: int = 0
    replicas: tuple[int, ...] = ()
    isr: set[int] = field(default_factory=set)

    def maybe_increment_high_watermark(self, follower_leos: Mapping[int, int] | None = None) -> bool:
        """Move the HW to the smallest LEO over the ISR (only the leader's own LEO when it is alone)."""
        if follower_leos is None:  # no follower positions known: only the leader's own log end counts
            return self.log.maybe_increment_high_watermark(self.log.log_end_offset)
        leos = [self.log.log_end_offset]
        for replica in self.isr:
            if replica != self.leader_id and follower_leos is not None and replica in follower_leos:
                leos.append(follower_leos[replica])
        return self.log.maybe_increment_high_watermark(min(leos))


@dataclass(frozen=True, slots=True)
class ProduceResult:
    error: ErrorCode
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    message: str | None = None
    record_errors: tuple[tuple[int, str], ...] = ()  # (index of the record in its batch, message)


@dataclass(frozen=True, slots=True)
class FetchRequestPartition:
    tp: TopicPartition
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = NO_LEADER_EPOCH


@dataclass(frozen=True, slots=True)
class FetchResult:
    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: FileSlice | None = None


@dataclass(frozen=True, slots=True)
class ListOffsetResult:
    error: ErrorCode
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = NO_LEADER_EPOCH


class ReplicaManager:
    """The hosted partitions of this broker (module doc). Event-loop thread only."""

    def __init__(self, log_manager: LogManager, node_id: int, clock: Clock) -> None:
        self.log_manager = log_manager
        self.node_id = node_id
        self.clock = clock
        self.partitions: dict[TopicPartition, Partition] = {}
        self.fetch_purgatory = Purgatory()

    # --- hosting -----------------------------------------------------------------------------------------------

    def startup(self) -> None:
        """Lead every partition found on disk (the single-broker default: this node is the only replica)."""
        for tp, partition_log in sorted(self.log_manager.all_logs().items()):
            self.become_leader(tp, partition_log)

    def become_leader(
        self, tp: TopicPartition, partition_log: Log, leader_epoch: int | None = None
    ) -> Partition:
        latest = partition_log.leader_epoch_cache.latest_epoch()
        epoch = leader_epoch if leader_epoch is not None else (latest if latest is not None else 0)
        partition = Partition(tp, partition_log, self.node_id, epoch, (self.node_id,), {self.node_id})
        self.partitions[tp] = partition
        partition.maybe_increment_high_watermark()
        return partition

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)
        self.fetch_purgatory.notify(tp)

    def partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def topics(self) -> set[str]:
        """The topics with a partition hosted here."""
        return {tp.topic for tp in self.partitions}

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        """The hosted partitions of ``topic``, in partition order (none: the topic is unknown here)."""
        return sorted(tp for tp in self.partitions if tp.topic == topic)

    def describe_log_dirs(self) -> dict[Path, dict[TopicPartition, int]]:
        """Each log dir with the size in bytes of every hosted partition in it (Kafka's describeLogDirs)."""
        sizes: dict[Path, dict[TopicPartition, int]] = {log_dir: {} for log_dir in self.log_manager.log_dirs}
        for tp, partition in sorted(self.partitions.items()):
            sizes.setdefault(self.log_manager.log_dir_of(tp), {})[tp] = partition.log.size
        return sizes

    def log_dir_failed(self, log_dir: Path) -> bool:
        """Whether a log in ``log_dir`` went offline (a failed append that could not be undone)."""
        return bool(self.log_manager.offline_logs(log_dir))

    # --- produce -----------------------------------------------------------------------------------------------

    def append(self, tp: TopicPartition, records: memoryview, acks: int) -> ProduceResult:
        """Append as leader and advance the high watermark; per-partition errors as Kafka reports them."""
        partition = self.partitions.get(tp)
        if partition is None:
            return ProduceResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        plog = partition.log
        if acks == -1 and len(partition.isr) < plog.config.min_insync_replicas:
            return ProduceResult(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                message=f"the ISR of {tp} has {len(partition.isr)} replicas, fewer than min.insync.replicas "
                f"{plog.config.min_insync_replicas}",
            )
        try:
            info = plog.append_as_leader(records, partition.leader_epoch)
        except RecordTooLargeError as exc:
            return ProduceResult(ErrorCode.MESSAGE_TOO_LARGE, message=str(exc))
        except RecordBatchTooLargeError as exc:
            return ProduceResult(ErrorCode.RECORD_LIST_TOO_LARGE, message=str(exc))
        except CorruptRecordError as exc:
            return ProduceResult(ErrorCode.CORRUPT_MESSAGE, message=str(exc))
        except InvalidRecordError as exc:
            return ProduceResult(ErrorCode.INVALID_RECORD, message=str(exc))
        except RecordValidationError as exc:
            return ProduceResult(
                ErrorCode.INVALID_RECORD, message=str(exc), record_errors=tuple(exc.record_errors)
            )
        except OutOfOrderSequenceError as exc:
            return ProduceResult(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, message=str(exc))
        except InvalidProducerEpochError as exc:
            return ProduceResult(ErrorCode.INVALID_PRODUCER_EPOCH, message=str(exc))
        except InvalidSequenceError as exc:
            return ProduceResult(ErrorCode.INVALID_RECORD, message=str(exc))
        except StorageError as exc:
            log.error("append to %s failed: %s", tp, exc)
            return ProduceResult(ErrorCode.KAFKA_STORAGE_ERROR, message=str(exc))
        if info.duplicate:  # a retry of a batch already in the log: answered with its original offsets
            return ProduceResult(
                ErrorCode.NONE, info.first_offset, info.log_append_time, info.log_start_offset
            )
        partition.maybe_increment_high_watermark()
        self.fetch_purgatory.notify(tp)
        return ProduceResult(ErrorCode.NONE, info.first_offset, info.log_append_time, info.log_start_offset)

    # --- fetch -------------------------------------------------------------------------------------------------

    def read(
        self, request: FetchRequestPartition, isolation: FetchIsolation, min_one_message: bool, budget: int
    ) -> FetchResult:
        partition = self.partitions.get(request.tp)
        if partition is None:
            return FetchResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        plog = partition.log
        if request.current_leader_epoch not in (NO_LEADER_EPOCH, partition.leader_epoch):
            error = (
                ErrorCode.FENCED_LEADER_EPOCH
                if request.current_leader_epoch < partition.leader_epoch
                else ErrorCode.UNKNOWN_LEADER_EPOCH
            )
            return FetchResult(error, plog.high_watermark, plog.high_watermark, plog.log_start_offset)
        try:
            info = plog.read(request.fetch_offset, min(request.max_bytes, budget), isolation, min_one_message)
        except OffsetOutOfRangeError:
            return FetchResult(
                ErrorCode.OFFSET_OUT_OF_RANGE, plog.high_watermark, plog.high_watermark, plog.log_start_offset
            )
        except StorageError as exc:  # an offline log, or a read that failed on the disk
            log.warning("read of %s failed: %s", request.tp, exc)
            return FetchResult(ErrorCode.KAFKA_STORAGE_ERROR)
        records = info.records if info.records.size > 0 else None
        return FetchResult(
            ErrorCode.NONE, plog.high_watermark, plog.high_watermark, plog.log_start_offset, records
        )

    async def fetch(
        self,
        requests: list[FetchRequestPartition],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation: FetchIsolation,
    ) -> list[FetchResult]:
        """Read every partition; if fewer than ``min_bytes`` are ready, wait for appends up to ``max_wait_ms``."""
        deadline = self.clock.monotonic_ms() + max(max_wait_ms, 0)
        while True:
            results = self._read_all(requests, max_bytes, isolation)
            ready = sum(r.records.size for r in results if r.records is not None)
            errors = any(r.error is not ErrorCode.NONE for r in results)
            remaining_ms = deadline - self.clock.monotonic_ms()
            if ready >= min_bytes or errors or remaining_ms <= 0 or not requests:
                return results
            woken = await self.fetch_purgatory.wait([r.tp for r in requests], remaining_ms / 1000)
            if not woken:
                return self._read_all(requests, max_bytes, isolation)

    def _read_all(
        self, requests: Iterable[FetchRequestPartition], max_bytes: int, isolation: FetchIsolation
    ) -> list[FetchResult]:
        budget = max_bytes
        results = []
        first = True
        for request in requests:
            result = self.read(request, isolation, first, max(budget, 0))
            if result.records is not None:
                budget -= result.records.size
                first = False
            results.append(result)
        return results

    # --- list offsets ------------------------------------------------------------------------------------------

    def list_offset(self, tp: TopicPartition, timestamp: int, isolation: FetchIsolation) -> ListOffsetResult:
        partition = self.partitions.get(tp)
        if partition is None:
            return ListOffsetResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        plog = partition.log
        if plog.offline_error is not None:
            return ListOffsetResult(ErrorCode.KAFKA_STORAGE_ERROR)
        if timestamp == -1:  # LATEST: what a consumer may read up to
            return ListOffsetResult(ErrorCode.NONE, -1, plog.high_watermark, partition.leader_epoch)
        try:
            found = plog.fetch_offset_by_timestamp(timestamp)
        except StorageError as exc:
            log.warning("offset lookup in %s failed: %s", tp, exc)
            return ListOffsetResult(ErrorCode.KAFKA_STORAGE_ERROR)
        if found is None or (found.offset >= plog.high_watermark and timestamp >= 0):
            return ListOffsetResult(ErrorCode.NONE, -1, -1, NO_LEADER_EPOCH)
        epoch = found.leader_epoch if found.leader_epoch is not None else NO_LEADER_EPOCH
        return ListOffsetResult(ErrorCode.NONE, found.timestamp, found.offset, epoch)

    # --- delete records ----------------------------------------------------------------------------------------

    def delete_records(self, tp: TopicPartition, offset: int) -> tuple[ErrorCode, int]:
        """Advance the log start offset (DeleteRecords); -1 means up to the high watermark."""
        partition = self.partitions.get(tp)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        plog = partition.log
        target = plog.high_watermark if offset == -1 else offset
        if target < 0 or target > plog.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, plog.log_start_offset
        try:
            plog.maybe_increment_log_start_offset(target)
        except StorageError as exc:
            log.warning("delete records of %s failed: %s", tp, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR, -1
        return ErrorCode.NONE, plog.log_start_offset
