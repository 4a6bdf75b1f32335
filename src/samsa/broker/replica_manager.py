"""Partitions this broker hosts, as leader or follower, and the produce, fetch and list-offsets paths over them.

A ``Partition`` is a log plus its replication state: leader, leader epoch, replicas, the in-sync set (ISR) and the
partition epoch (the version of its state znode). As Kafka's ``Partition``:

- **High watermark.** On the leader it is the smallest log end offset over the leader and every follower of the
  maximal ISR (the committed ISR plus a pending expansion), where a follower's log end offset is the offset of its
  last fetch; it never goes down, and it does not move while the ISR is smaller than
  ``min(min.insync.replicas, replicas)`` (Kafka 3.7+). Alone (the single-broker default, or replication factor 1)
  it follows the log end offset as soon as an append lands. Consumers read only below it; followers read to the end.
- **ISR.** Each follower fetch whose offset is on the leader's log (within it, and not past the end of the
  follower's last fetched epoch here: a follower that must truncate first holds nothing to count) updates that
  follower's state (log end offset, when it was last caught up). A
  follower that caught up to the high watermark and to the start of the leader's epoch is added; one that has not
  been caught up for ``replica.lag.time.max.ms`` is removed. Changes go to the controller (AlterPartition, through
  ``isr_changes``); one change per partition is in flight, and the committed ISR changes only when it answers.
- **acks=all.** ``append`` answers NOT_ENOUGH_REPLICAS (nothing appended) when the committed ISR is smaller than
  the effective ``min.insync.replicas``; otherwise the produce waits (``wait_for_acks``) until the high watermark
  passes its records, the request's timeout passes, or this broker stops leading the partition. Nothing on that
  path polls: an append wakes the followers' parked fetches (the replica fetch purgatory), and the follower fetch
  that moves the high watermark wakes the waiting produces (the produce purgatory), in the same loop turn. A
  high watermark move wakes consumers' fetches, not followers' (as Kafka's delayed fetch, which counts a
  follower's bytes up to the log end): a follower parked at the log end has nothing new to read.
- **Followers** fetch from the leader through ``fetchers`` (a ``samsa.cluster.replica_fetcher`` manager) and
  append with the leader's offsets; their high watermark is the one the leader last answered, bounded by their own
  log end (a round behind the leader's, as in Kafka: the next append's answer, or the end of the parked fetch's
  ``replica.fetch.wait.max.ms``, brings it).

The replica manager never raises for one partition's trouble: each partition's answer carries a Kafka error code,
so one bad partition does not fail the others in the same request.

Event-loop thread only: storage calls are synchronous and short (one write, or slices of files).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from samsa.clock import Clock
from samsa.cluster.follower import FetchPosition, new_fetch_position
from samsa.cluster.replication_quota import (
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    ReplicationQuota,
    throttled,
)
from samsa.log_throttle import LogThrottle
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
from samsa.storage.space_reserve import is_disk_full
from samsa.storage.topic import TopicPartition

from .purgatory import Purgatory

if TYPE_CHECKING:  # start-up time: samsa.storage.log is loaded with the first log
    from samsa.records.batch_view import V2Header
    from samsa.storage import FetchIsolation, FileSlice, Log
    from samsa.storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)

NO_LEADER_EPOCH = -1


def _txn_committed() -> FetchIsolation:
    from samsa.storage import FetchIsolation  # loaded with the first log, before any read

    return FetchIsolation.TXN_COMMITTED


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower from its fetches (Kafka's replica state on the leader)."""

    log_end_offset: int = -1  # the offset of its last fetch; -1: none since this broker became leader
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0

    def fetched(self, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
        """A fetch from ``fetch_offset`` at ``now_ms``, the leader's log end being ``leader_leo`` before it."""
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.last_fetch_leader_leo = max(self.last_fetch_leader_leo, leader_leo)
        self.last_fetch_ms = now_ms
        self.log_end_offset = fetch_offset

    def caught_up(self, leader_leo: int, now_ms: int, lag_max_ms: int) -> bool:
        return self.log_end_offset == leader_leo or now_ms - self.last_caught_up_ms <= lag_max_ms


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """A partition's state as the controller sends it (LeaderAndIsr)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int


@dataclass(slots=True)
class Partition:
    """One hosted partition: its log and replication state (module doc). Event-loop thread only."""

    tp: TopicPartition
    log: Log
    leader_id: int
    leader_epoch: int = 0
    replicas: tuple[int, ...] = ()
    isr: set[int] = field(default_factory=set)
    partition_epoch: int = 0
    followers: dict[int, FollowerState] = field(default_factory=dict)
    leader_epoch_start_offset: int = 0
    pending_isr: frozenset[int] | None = None  # sent to the controller, not answered yet

    def maximal_isr(self) -> set[int]:
        """The committed ISR plus a pending change (a pending shrink still counts the leaving replicas)."""
        return self.isr | self.pending_isr if self.pending_isr is not None else self.isr

    def effective_min_isr(self) -> int:
        return min(self.log.config.min_insync_replicas, max(len(self.replicas), 1))

    def maybe_increment_high_watermark(self) -> bool:
        """Move the HW to the smallest log end offset over the maximal ISR; True when it moved."""
        plog = self.log
        if not self.followers:  # alone: only the leader's own log end counts
            return plog.maybe_increment_high_watermark(plog.log_end_offset)
        if len(self.isr) < self.effective_min_isr():
            return False  # frozen under min.insync.replicas (Kafka 3.7+)
        high_watermark = plog.log_end_offset
        for replica in self.maximal_isr():
            if replica == self.leader_id:
                continue
            state = self.followers.get(replica)
            if state is None or state.log_end_offset < 0:
                return False  # a member whose position is not known yet holds it back
            high_watermark = min(high_watermark, state.log_end_offset)
        return plog.maybe_increment_high_watermark(high_watermark)


class FollowerFetchers(Protocol):
    """The replica fetchers (``samsa.cluster.replica_fetcher.ReplicaFetcherManager``) as the replica manager
    drives them."""

    def add(self, tp: TopicPartition, leader_id: int, host: str, port: int) -> None: ...

    def remove(self, tp: TopicPartition) -> None: ...

    def lags(self) -> list[tuple[int, TopicPartition, int]]: ...


_NONE = ErrorCode.NONE
IsrChangeSender = Callable[[Partition, frozenset[int]], None]


class ProduceResult(NamedTuple):
    """One partition's outcome of a produce (a tuple: one is made per partition of every produce request)."""

    error: ErrorCode
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    message: str | None = None
    record_errors: tuple[tuple[int, str], ...] = ()  # (index of the record in its batch, message)
    last_offset: int = -1


_new_result: Callable[[tuple[ErrorCode, int, int, int, str | None, tuple[()], int]], ProduceResult] = (
    functools.partial(tuple.__new__, ProduceResult)
)
"""A ProduceResult from all seven fields at once, without a named tuple's Python-level ``__new__`` (one per
partition of every produce request)."""


@dataclass(frozen=True, slots=True)
class FetchRequestPartition:
    tp: TopicPartition
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = NO_LEADER_EPOCH
    replica_id: int = -1
    last_fetched_epoch: int = -1


class FetchResult(NamedTuple):
    """One partition's answer to a fetch (a tuple: one is made per partition of a follower's session on every
    fetch, most of them caught up and empty)."""

    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: FileSlice | None = None
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) for a follower that must truncate
    aborted_transactions: list[AbortedTxn] | None = None  # read_committed: the aborts the records overlap


_new_fetch_result: Callable[
    [tuple[ErrorCode, int, int, int, FileSlice | None, tuple[int, int] | None, list[AbortedTxn] | None]],
    FetchResult,
] = functools.partial(tuple.__new__, FetchResult)
"""A FetchResult from all seven fields at once, without a named tuple's Python-level ``__new__``."""


@dataclass(frozen=True, slots=True)
class ListOffsetResult:
    error: ErrorCode
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = NO_LEADER_EPOCH


@dataclass(frozen=True, slots=True)
class TxnMarkerEntry:
    """One transaction marker to write: a producer's COMMIT (``commit``) or ABORT in each of ``partitions``."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[TopicPartition, ...]


class ReplicaManager:
    """The hosted partitions of this broker (module doc). Event-loop thread only."""

    def __init__(
        self, log_manager: LogManager, node_id: int, clock: Clock, *, replica_lag_time_max_ms: int = 30_000
    ) -> None:
        self.log_manager = log_manager
        self.node_id = node_id
        self.clock = clock
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.partitions: dict[TopicPartition, Partition] = {}
        self.isr_shrinks = 0  # ISR changes the controller committed for partitions led here (Kafka's metrics)
        self.isr_expands = 0
        # Consumers' fetches wait here: woken by appends and by high watermark moves (they read below the HW).
        self.fetch_purgatory = Purgatory(clock)
        # Followers' fetches wait here: woken by appends, not by the HW (as Kafka's delayed fetch, which counts a
        # follower's bytes up to the log end); a follower learns a new HW with its next answer.
        self.replica_fetch_purgatory = Purgatory(clock)
        self.produce_purgatory = Purgatory(clock)
        # Cluster mode sets these (``ZkBroker``); the single-broker default has no followers and no controller.
        self.fetchers: FollowerFetchers | None = None
        self.isr_changes: IsrChangeSender | None = None
        self.is_alive: Callable[[int], bool] = lambda broker_id: True
        self.knows_partition: Callable[[TopicPartition], bool] = lambda tp: False
        # told of a leader append refused for want of space (cluster mode: the controller moves leaderships)
        self.disk_full: Callable[[TopicPartition], None] = lambda tp: None
        self.leader_quota = ReplicationQuota()  # leader.replication.throttled.rate (cluster mode)

    # --- hosting -----------------------------------------------------------------------------------------------

    def startup(self) -> None:
        """Lead every partition found on disk (the single-broker default: this node is the only replica)."""
        for tp, partition_log in sorted(self.log_manager.all_logs().items()):
            self.become_leader(tp, partition_log)

    def become_leader(
        self, tp: TopicPartition, partition_log: Log, leader_epoch: int | None = None
    ) -> Partition:
        """Lead ``tp`` alone (the single-broker default)."""
        latest = partition_log.leader_epoch_cache.latest_epoch()
        epoch = leader_epoch if leader_epoch is not None else (latest if latest is not None else 0)
        partition = Partition(tp, partition_log, self.node_id, epoch, (self.node_id,), {self.node_id})
        self.partitions[tp] = partition
        partition.maybe_increment_high_watermark()
        return partition

    def make_leader(self, tp: TopicPartition, partition_log: Log, state: ReplicaState) -> None:
        """Lead ``tp`` as the controller says (LeaderAndIsr): no truncation; a new epoch starts at the log end.

        The new epoch's leader-epoch checkpoint is written first, drawing on the log dir's space reserve on a
        full disk; when even that fails, the partition is left as it was and the error raised (the broker tries
        the transition again, ``ZkBroker``): a leader half made, its epoch taken but its followers not reset,
        would never take them back into its ISR."""
        partition = self.partitions.get(tp)
        was_leader = partition is not None and partition.leader_id == self.node_id
        new_epoch = partition is None or state.leader_epoch > partition.leader_epoch or not was_leader
        leo = partition_log.log_end_offset
        if new_epoch:
            cache = partition_log.leader_epoch_cache
            self.log_manager.with_space_reserve(
                tp, f"the leader epoch of {tp}", lambda: cache.assign(state.leader_epoch, leo)
            )
        if self.fetchers is not None:
            self.fetchers.remove(tp)
        if partition is None:
            partition = Partition(tp, partition_log, self.node_id, state.leader_epoch)
            self.partitions[tp] = partition
        partition.leader_id = self.node_id
        partition.leader_epoch = state.leader_epoch
        partition.replicas = state.replicas
        partition.isr = set(state.isr)
        partition.partition_epoch = state.partition_epoch
        partition.pending_isr = None
        now = self.clock.monotonic_ms()
        if new_epoch:
            partition.leader_epoch_start_offset = leo
            partition.followers = {
                r: FollowerState(last_caught_up_ms=now if r in state.isr else 0)
                for r in state.replicas
                if r != self.node_id
            }
        else:
            for r in state.replicas:
                if r != self.node_id:
                    partition.followers.setdefault(r, FollowerState())
            for r in list(partition.followers):
                if r not in state.replicas:
                    del partition.followers[r]
        self._high_watermark_check(partition)
        self._wake_fetches(tp)

    def make_follower(
        self,
        tp: TopicPartition,
        partition_log: Log,
        state: ReplicaState,
        leader_address: tuple[str, int] | None,
    ) -> None:
        """Follow ``state.leader`` (LeaderAndIsr): fetch from it from this log's end; produces waiting here
        are answered NOT_LEADER_OR_FOLLOWER."""
        partition = self.partitions.get(tp)
        if partition is None:
            partition = Partition(tp, partition_log, state.leader, state.leader_epoch)
            self.partitions[tp] = partition
        partition.leader_id = state.leader
        partition.leader_epoch = state.leader_epoch
        partition.replicas = state.replicas
        partition.isr = set()  # a follower does not track the ISR
        partition.partition_epoch = state.partition_epoch
        partition.pending_isr = None
        partition.followers = {}
        self.produce_purgatory.notify(tp)
        self._wake_fetches(tp)
        if self.fetchers is None:
            return
        self.fetchers.remove(tp)
        if leader_address is not None and state.leader >= 0:
            self.fetchers.add(tp, state.leader, *leader_address)

    def stop_replica(self, tp: TopicPartition, delete: bool) -> None:
        """Stop hosting ``tp`` (StopReplica): its fetcher stops, waiting requests are answered; ``delete``
        removes its log too."""
        if self.fetchers is not None:
            self.fetchers.remove(tp)
        self.remove(tp)
        if delete and self.log_manager.get_log(tp) is not None:
            self.log_manager.delete_log(tp)

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)
        self._wake_fetches(tp)
        self.produce_purgatory.notify(tp)

    def partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def leader_partition(self, tp: TopicPartition) -> Partition | ErrorCode:
        """The partition when this broker leads it, else the error a client is told."""
        partition = self.partitions.get(tp)
        if partition is None:
            return (
                ErrorCode.NOT_LEADER_OR_FOLLOWER
                if self.knows_partition(tp)
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
        if partition.leader_id != self.node_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition

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

    # --- high watermark and ISR --------------------------------------------------------------------------------

    def _high_watermark_check(self, partition: Partition) -> None:
        if partition.maybe_increment_high_watermark():
            self.produce_purgatory.notify(partition.tp)
            self.fetch_purgatory.notify(partition.tp)  # consumers only: followers read to the log end

    def _wake_fetches(self, tp: TopicPartition) -> None:
        """New bytes or a new state of ``tp``: every parked fetch of it reads again, consumers' and followers'."""
        self.fetch_purgatory.notify(tp)
        self.replica_fetch_purgatory.notify(tp)

    def _follower_fetched(
        self, partition: Partition, replica_id: int, fetch_offset: int, now_ms: int
    ) -> None:
        """A follower fetch from ``fetch_offset``: its state, an ISR expansion if it caught up, the HW when its
        log end moved (as Kafka's leader: the HW's other inputs, the leader's log end and the ISR, check it
        where they change)."""
        state = partition.followers.get(replica_id)
        if state is None:
            return
        moved = fetch_offset != state.log_end_offset
        state.fetched(fetch_offset, partition.log.log_end_offset, now_ms)
        if (
            partition.pending_isr is None
            and replica_id not in partition.isr
            and fetch_offset >= partition.log.high_watermark
            and fetch_offset >= partition.leader_epoch_start_offset
            and self.is_alive(replica_id)
        ):
            self._change_isr(partition, frozenset(partition.isr | {replica_id}))
        if moved:
            self._high_watermark_check(partition)

    def maybe_shrink_isr(self) -> None:
        """Take followers that have not been caught up for ``replica.lag.time.max.ms`` out of the ISR."""
        now = self.clock.monotonic_ms()
        for partition in self.partitions.values():
            if (
                partition.leader_id != self.node_id
                or partition.pending_isr is not None
                or not partition.followers
            ):
                continue
            leo = partition.log.log_end_offset
            lagging = {
                r
                for r in partition.isr
                if r != self.node_id
                and not (
                    (state := partition.followers.get(r)) is not None
                    and state.caught_up(leo, now, self.replica_lag_time_max_ms)
                )
            }
            if lagging:
                log.info(
                    "%s: ISR shrinks from %s, followers %s lag",
                    partition.tp,
                    sorted(partition.isr),
                    sorted(lagging),
                )
                self._change_isr(partition, frozenset(partition.isr - lagging))

    def _change_isr(self, partition: Partition, new_isr: frozenset[int]) -> None:
        if self.isr_changes is None:
            return
        partition.pending_isr = new_isr
        self.isr_changes(partition, new_isr)

    def isr_change_answered(
        self, tp: TopicPartition, leader_epoch: int, isr: Iterable[int] | None, partition_epoch: int
    ) -> None:
        """The controller's answer to an ISR change: ``isr`` committed (None: refused, wait for LeaderAndIsr)."""
        partition = self.partitions.get(tp)
        if partition is None or partition.leader_id != self.node_id or partition.leader_epoch != leader_epoch:
            return
        partition.pending_isr = None
        if isr is None:
            return
        committed = set(isr)
        if committed < partition.isr:
            self.isr_shrinks += 1
        elif committed > partition.isr:
            self.isr_expands += 1
        if committed != partition.isr:
            log.info("%s: ISR updated to %s (partition epoch %d)", tp, sorted(committed), partition_epoch)
        partition.isr = committed
        partition.partition_epoch = partition_epoch
        self._high_watermark_check(partition)

    # --- produce -----------------------------------------------------------------------------------------------

    def produce(
        self,
        appends: Sequence[tuple[TopicPartition, memoryview, V2Header | None]],
        acks: int,
        timeout_ms: int,
    ) -> tuple[list[ProduceResult], Awaitable[dict[TopicPartition, ErrorCode]] | None]:
        """A produce request's appends, in order, as leader (``append``); with acks=all, also what to await for
        the partitions whose records are above the high watermark: their final error codes (``wait_for_acks``),
        None when nothing waits."""
        if len(appends) == 1:  # one partition: most requests
            tp, records, header = appends[0]
            results = [self.append(tp, records, acks, header)]
        else:
            results = [self.append(tp, records, acks, header) for tp, records, header in appends]
        if acks != -1:
            return results, None
        pending = [
            (tp, result.last_offset)
            for (tp, _, _), result in zip(appends, results, strict=True)
            if not result.error and self.acks_pending(tp, result)
        ]
        return results, (self.wait_for_acks(pending, timeout_ms) if pending else None)

    def append(
        self,
        tp: TopicPartition,
        records: memoryview,
        acks: int,
        header: V2Header | None = None,
        *,
        is_marker: bool = False,
    ) -> ProduceResult:
        """Append as leader and advance the high watermark; per-partition errors as Kafka reports them.
        ``header``: the batch's header as the caller read it (``Log.append_as_leader``). Only a transaction
        marker (``is_marker``, from ``write_txn_markers``) may be a control batch: a client's is INVALID_RECORD."""
        if not is_marker and len(records) > 22 and records[16] == 2 and records[22] & 0x20:
            return ProduceResult(ErrorCode.INVALID_RECORD, message="a client may not produce control batches")
        partition = self.partitions.get(tp)
        if partition is None or partition.leader_id != self.node_id:
            found = self.leader_partition(tp)
            assert isinstance(found, ErrorCode)
            return ProduceResult(found)
        plog = partition.log
        if acks == -1 and len(partition.isr) < partition.effective_min_isr():
            return ProduceResult(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                message=f"the ISR of {tp} has {len(partition.isr)} replicas, fewer than min.insync.replicas "
                f"{plog.config.min_insync_replicas}",
            )
        try:
            info = plog.append_as_leader(records, partition.leader_epoch, header)
        except _APPEND_EXCEPTIONS as exc:
            if is_disk_full(exc):
                self.disk_full(tp)
            return _append_error(tp, exc)
        if not info.duplicate:  # a retry of a batch already in the log is answered with its original offsets
            if partition.maybe_increment_high_watermark():  # _high_watermark_check, fetches woken once
                self.produce_purgatory.notify(tp)
            self._wake_fetches(tp)
        return _new_result(
            (
                _NONE,
                info.first_offset,
                info.log_append_time,
                info.log_start_offset,
                None,
                (),
                info.last_offset,
            )
        )

    def acks_pending(self, tp: TopicPartition, result: ProduceResult) -> bool:
        """Whether an acks=all append that succeeded still waits for the ISR (its records above the HW)."""
        partition = self.partitions.get(tp)
        return partition is not None and partition.log.high_watermark <= result.last_offset

    async def wait_for_acks(
        self, pending: list[tuple[TopicPartition, int]], timeout_ms: int
    ) -> dict[TopicPartition, ErrorCode]:
        """Wait until the HW of each ``(tp, last offset)`` passes it (acks=all, Kafka's delayed produce)."""
        deadline = self.clock.monotonic_ms() + max(timeout_ms, 0)
        answers: dict[TopicPartition, ErrorCode] = {}
        waiting = dict(pending)
        timed_out = False
        while True:
            for tp, last_offset in list(waiting.items()):
                partition = self.partitions.get(tp)
                if partition is None or partition.leader_id != self.node_id:
                    answers[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                elif partition.log.high_watermark > last_offset:
                    short = len(partition.maximal_isr()) < partition.effective_min_isr()
                    answers[tp] = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND if short else ErrorCode.NONE
                else:
                    continue
                del waiting[tp]
            if not waiting:
                return answers
            if timed_out:
                answers.update(dict.fromkeys(waiting, ErrorCode.REQUEST_TIMED_OUT))
                return answers
            timed_out = not await self.produce_purgatory.wait(list(waiting), deadline)

    # --- transaction markers (WriteTxnMarkers) ----------------------------------------------------------------

    async def write_txn_markers(
        self, markers: Sequence[TxnMarkerEntry], timeout_ms: int = 30_000
    ) -> dict[tuple[int, TopicPartition], ErrorCode]:
        """Append one COMMIT/ABORT control batch per (marker, partition) as leader, with acks=all semantics (as
        Kafka writes markers); the answer per (producer id, partition): NONE once replicated, or the error Kafka
        gives (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, ...). Callable in-process
        by the transaction coordinator when this broker leads the partition."""
        from samsa.records.batch import build_end_txn_marker_batch  # lazy: a broker's start imports no codec
        from samsa.records.control import ControlRecordType, EndTransactionMarker

        answers: dict[tuple[int, TopicPartition], ErrorCode] = {}
        pending: list[tuple[TopicPartition, int]] = []
        waiting_keys: list[tuple[int, TopicPartition]] = []
        for entry in markers:
            marker = EndTransactionMarker(
                ControlRecordType.COMMIT if entry.commit else ControlRecordType.ABORT, entry.coordinator_epoch
            )
            for tp in entry.partitions:
                batch = build_end_txn_marker_batch(
                    marker,
                    producer_id=entry.producer_id,
                    producer_epoch=entry.producer_epoch,
                    timestamp=int(time.time() * 1000),
                )
                key = (entry.producer_id, tp)
                if self._stale_coordinator(tp, entry):
                    answers[key] = ErrorCode.TRANSACTION_COORDINATOR_FENCED
                    continue
                result = self.append(tp, memoryview(batch), -1, is_marker=True)
                if not result.error:
                    self._record_coordinator_epoch(tp, entry)
                if result.error or not self.acks_pending(tp, result):
                    answers[key] = result.error
                else:
                    pending.append((tp, result.last_offset))
                    waiting_keys.append(key)
        if pending:
            acked = await self.wait_for_acks(pending, timeout_ms)
            for key in waiting_keys:
                answers[key] = acked.get(key[1], ErrorCode.NONE)
        return answers

    def _stale_coordinator(self, tp: TopicPartition, entry: TxnMarkerEntry) -> bool:
        """Whether a marker comes from a coordinator epoch older than the producer's last marker here."""
        partition = self.partitions.get(tp)
        known = partition.log.producer_state.producers.get(entry.producer_id) if partition else None
        return known is not None and entry.coordinator_epoch < known.coordinator_epoch

    def _record_coordinator_epoch(self, tp: TopicPartition, entry: TxnMarkerEntry) -> None:
        partition = self.partitions.get(tp)
        known = partition.log.producer_state.producers.get(entry.producer_id) if partition else None
        if known is not None:
            known.coordinator_epoch = entry.coordinator_epoch

    # --- fetch -------------------------------------------------------------------------------------------------

    def read(
        self,
        request: FetchRequestPartition,
        isolation: FetchIsolation,
        min_one_message: bool,
        budget: int,
        *,
        hard_max_bytes: bool = False,
    ) -> FetchResult:
        """One partition of a fetch: up to ``min(request.max_bytes, budget)`` bytes from the fetch offset, the
        first batch whole when ``min_one_message``. A first batch that does not fit is left out altogether (no
        bytes for the partition, as Kafka answers Fetch v3+: a client cannot make progress on a cut batch alone),
        except under ``hard_max_bytes`` (Fetch v0-2), where the cut batch goes out as Kafka sends it."""
        partition = self.partitions.get(request.tp)
        if partition is None or partition.leader_id != self.node_id:
            found = self.leader_partition(request.tp)
            assert isinstance(found, ErrorCode)
            return FetchResult(found)
        plog = partition.log
        if request.current_leader_epoch not in (NO_LEADER_EPOCH, partition.leader_epoch):
            error = (
                ErrorCode.FENCED_LEADER_EPOCH
                if request.current_leader_epoch < partition.leader_epoch
                else ErrorCode.UNKNOWN_LEADER_EPOCH
            )
            return FetchResult(error, plog.high_watermark, plog.high_watermark, plog.log_start_offset)
        epoch = request.last_fetched_epoch
        if (
            request.fetch_offset == plog.log_end_offset
            and plog.offline_error is None
            and (epoch < 0 or request.replica_id < 0 or epoch == plog.leader_epoch_cache.latest)
        ):
            # nothing past the log end, and no divergence (a follower in the leader's epoch): the caught-up
            # follower's usual fetch, one partition of many, with no read
            return _new_fetch_result(
                (_NONE, plog.high_watermark, plog.last_stable_offset, plog.log_start_offset, None, None, None)
            )
        if request.replica_id >= 0 and epoch >= 0:
            diverging = self._diverging(plog, request)
            if diverging is not None:
                return diverging
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
        if info.first_entry_incomplete and not hard_max_bytes:
            records = None
        lso = plog.last_stable_offset
        aborted = None
        if records is not None and isolation is _txn_committed():
            upper = plog.fetch_upper_bound(request.fetch_offset, lso)
            try:
                aborted = plog.collect_aborted_transactions(request.fetch_offset, upper)
            except StorageError as exc:
                log.warning("reading the aborted transactions of %s failed: %s", request.tp, exc)
                return FetchResult(ErrorCode.KAFKA_STORAGE_ERROR)
        return FetchResult(
            ErrorCode.NONE,
            plog.high_watermark,
            lso,
            plog.log_start_offset,
            records,
            aborted_transactions=aborted,
        )

    def _diverging(self, plog: Log, request: FetchRequestPartition) -> FetchResult | None:
        """The leader's check of a follower's last fetched epoch (Fetch v12+, KIP-595): the end of that epoch
        here when the follower's log went past it, so the follower truncates."""
        if (
            request.last_fetched_epoch == plog.leader_epoch_cache.latest
            and plog.log_start_offset <= request.fetch_offset <= plog.log_end_offset
        ):
            return None  # the usual case, in the leader's own epoch: it ends at the log end, past the fetch
        found = plog.leader_epoch_cache.end_offset_for(request.last_fetched_epoch, plog.log_end_offset)
        if found is None or request.fetch_offset < plog.log_start_offset:
            return FetchResult(
                ErrorCode.OFFSET_OUT_OF_RANGE, plog.high_watermark, plog.high_watermark, plog.log_start_offset
            )
        epoch, end_offset = found
        if epoch < request.last_fetched_epoch or end_offset < request.fetch_offset:
            return FetchResult(
                ErrorCode.NONE,
                plog.high_watermark,
                plog.high_watermark,
                plog.log_start_offset,
                diverging_epoch=(epoch, end_offset),
            )
        return None

    async def fetch(
        self,
        requests: list[FetchRequestPartition],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation: FetchIsolation,
        replica_id: int = -1,
        hard_max_bytes: bool = False,
    ) -> list[FetchResult]:
        """Read every partition; if fewer than ``min_bytes`` are ready, wait for appends up to ``max_wait_ms``.
        A follower's fetch (``replica_id`` >= 0) first records where the follower is, and when that is the log
        end of every partition it waits at once, with nothing read (a caught-up follower's usual fetch).
        ``hard_max_bytes``: the limits of Fetch v0-2, which may cut a first batch (``read``)."""
        at_end = self._follower_fetched_all(requests, replica_id) if replica_id >= 0 else False
        purgatory = self.replica_fetch_purgatory if replica_id >= 0 else self.fetch_purgatory
        deadline = self.clock.monotonic_ms() + max(max_wait_ms, 0)
        while True:
            remaining_ms = deadline - self.clock.monotonic_ms()
            if not at_end or min_bytes <= 0 or remaining_ms <= 0:
                results = self._throttle(
                    requests, self._read_all(requests, max_bytes, isolation, hard_max_bytes), replica_id
                )
                ready = sum(r.records.size for r in results if r.records is not None)
                errors = any(r.error is not ErrorCode.NONE or r.diverging_epoch is not None for r in results)
                if ready >= min_bytes or errors or remaining_ms <= 0 or not requests:
                    return results
            at_end = False
            woken = await purgatory.wait([r.tp for r in requests], deadline)
            if not woken:
                return self._throttle(
                    requests, self._read_all(requests, max_bytes, isolation, hard_max_bytes), replica_id
                )

    def _follower_fetched_all(self, requests: list[FetchRequestPartition], replica_id: int) -> bool:
        """Record a follower's fetch of ``requests`` (``_follower_fetched``); whether every one of them is at its
        partition's log end here, with nothing in the way of a read (then a read would find nothing, and no
        error)."""
        at_end = bool(requests)
        now = self.clock.monotonic_ms()
        for request in requests:
            partition = self.partitions.get(request.tp)
            if (
                partition is not None
                and partition.leader_id == self.node_id
                and request.current_leader_epoch in (NO_LEADER_EPOCH, partition.leader_epoch)
                and self._on_leaders_log(partition.log, request)
            ):
                self._follower_fetched(partition, replica_id, request.fetch_offset, now)
                plog = partition.log
                if request.fetch_offset != plog.log_end_offset or plog.offline_error is not None:
                    at_end = False
            else:
                at_end = False
        return at_end

    def _on_leaders_log(self, plog: Log, request: FetchRequestPartition) -> bool:
        """Whether a follower's fetch offset is a position on this leader's log: within it and not past the end
        of the follower's last fetched epoch here. Only then is it the follower's log end offset (as Kafka's
        leader updates a follower's state only for a fetch it answers with records): a follower that must
        truncate or reset first holds nothing the leader may count, or acks=all would be answered for records
        it lacks."""
        offset = request.fetch_offset
        if offset > plog.log_end_offset or offset < plog.log_start_offset:
            return False
        return request.last_fetched_epoch < 0 or self._diverging(plog, request) is None

    def _throttle(
        self, requests: list[FetchRequestPartition], results: list[FetchResult], replica_id: int
    ) -> list[FetchResult]:
        """A follower outside the ISR gets no data of throttled partitions while the leader's replication
        rate is over ``leader.replication.throttled.rate`` (:mod:`samsa.cluster.replication_quota`). As in Kafka,
        the rate counts every byte sent for a throttled partition, to in-sync followers too; only the ones
        catching up are held back."""
        quota = self.leader_quota
        if replica_id < 0 or quota.rate is None:
            return results
        now = self.clock.monotonic_ms()
        out = []
        for request, result in zip(requests, results, strict=True):
            partition = self.partitions.get(request.tp)
            records = result.records
            if (
                records is not None
                and partition is not None
                and self._throttled(partition, LEADER_THROTTLED_REPLICAS)
            ):
                if replica_id not in partition.isr and quota.over(now):
                    result = result._replace(records=None)
                else:
                    quota.record(records.size, now)
            out.append(result)
        return out

    def _read_all(
        self,
        requests: Iterable[FetchRequestPartition],
        max_bytes: int,
        isolation: FetchIsolation,
        hard_max_bytes: bool = False,
    ) -> list[FetchResult]:
        budget = max_bytes
        results = []
        first = True
        for request in requests:
            result = self.read(request, isolation, first, max(budget, 0), hard_max_bytes=hard_max_bytes)
            if result.records is not None:
                budget -= result.records.size
                first = False
            results.append(result)
        return results

    # --- the follower side (the replica fetcher's view) --------------------------------------------------------

    def fetch_position(self, tp: TopicPartition) -> FetchPosition | None:
        """Where this follower fetches ``tp`` next (None: it no longer follows ``tp``)."""
        partition = self.partitions.get(tp)
        if partition is None or partition.leader_id == self.node_id:
            return None
        plog = partition.log
        latest = plog.leader_epoch_cache.latest
        return new_fetch_position(
            (
                plog.log_end_offset,
                latest if latest is not None else -1,
                partition.leader_epoch,
                plog.log_start_offset,
            )
        )

    def follower_throttled(self, tp: TopicPartition) -> bool:
        """Whether ``follower.replication.throttled.replicas`` of ``tp``'s topic names it on this broker."""
        partition = self.partitions.get(tp)
        return partition is not None and self._throttled(partition, FOLLOWER_THROTTLED_REPLICAS)

    def _throttled(self, partition: Partition, key: str) -> bool:
        """Whether the topic config ``key`` (a ``*.replication.throttled.replicas`` list) names the partition on
        this broker."""
        replicas = dict(partition.log.config.others).get(key)
        return throttled(replicas, partition.tp.partition, self.node_id)

    def append_fetched(
        self, tp: TopicPartition, records: memoryview, high_watermark: int, log_start_offset: int
    ) -> int:
        """Append what the leader sent, with its offsets; take the leader's high watermark (bounded by our log
        end) and log start offset; the log end offset after it (-1: not a follower of ``tp``). Raises
        StorageError or a record error for the fetcher to report."""
        partition = self.partitions.get(tp)
        if partition is None or partition.leader_id == self.node_id:
            return -1
        plog = partition.log
        if len(records):
            plog.append_as_follower(records)
            plog.update_high_watermark(high_watermark)
        elif (
            plog.maybe_update_high_watermark(high_watermark) is None
            and log_start_offset <= plog.log_start_offset
        ):
            return plog.log_end_offset  # a caught-up partition's usual answer: nothing to set, nobody to wake
        if log_start_offset > plog.log_start_offset:
            plog.maybe_increment_log_start_offset(min(log_start_offset, plog.high_watermark))
        self._wake_fetches(tp)
        return plog.log_end_offset

    def truncate_diverging(self, tp: TopicPartition, leader_epoch: int, end_offset: int) -> None:
        """The leader says our log diverged after ``end_offset`` of ``leader_epoch``: truncate as KIP-101/279."""
        partition = self.partitions.get(tp)
        if partition is None or partition.leader_id == self.node_id:
            return
        plog = partition.log
        leo = plog.log_end_offset
        if end_offset < 0:
            target = plog.high_watermark
        elif leader_epoch < 0:
            target = min(end_offset, leo)
        else:
            local = plog.leader_epoch_cache.end_offset_for(leader_epoch, leo)
            if local is None:
                target = min(end_offset, leo)
            elif local[0] != leader_epoch:
                target = min(local[1], leo)  # the next fetch asks again with our new latest epoch (KIP-279)
            else:
                target = min(local[1], end_offset, leo)
        if target < plog.high_watermark:  # only after an unclean election: committed records are dropped
            log.warning(
                "%s: records %d to %d were committed here but the leader lacks them (diverged after epoch %d): lost "
                "(an unclean leader election)",
                tp,
                target,
                plog.high_watermark - 1,
                leader_epoch,
            )
        elif target < leo:
            log.info(
                "%s: truncating from %d to %d (diverged from the leader's epoch %d)",
                tp,
                leo,
                target,
                leader_epoch,
            )
        plog.truncate_to(target)

    def reset_out_of_range(self, tp: TopicPartition, leader_log_start: int, leader_log_end: int) -> None:
        """Our fetch offset is outside the leader's log: behind its start (start over there), or past its end
        (truncate to it)."""
        partition = self.partitions.get(tp)
        if partition is None or partition.leader_id == self.node_id:
            return
        plog = partition.log
        if plog.log_end_offset < leader_log_start:
            log.info("%s: behind the leader's log start %d: starting over there", tp, leader_log_start)
            plog.truncate_fully_and_start_at(leader_log_start)
        elif plog.log_end_offset > leader_log_end >= 0:
            plog.truncate_to(leader_log_end)

    # --- list offsets ------------------------------------------------------------------------------------------

    def list_offset(self, tp: TopicPartition, timestamp: int, isolation: FetchIsolation) -> ListOffsetResult:
        found_partition = self.leader_partition(tp)
        if isinstance(found_partition, ErrorCode):
            return ListOffsetResult(found_partition)
        partition = found_partition
        plog = partition.log
        if plog.offline_error is not None:
            return ListOffsetResult(ErrorCode.KAFKA_STORAGE_ERROR)
        # what a consumer may read up to: the LSO for read_committed, else the HW
        fetchable = plog.last_stable_offset if isolation is _txn_committed() else plog.high_watermark
        if timestamp == -1:  # LATEST
            return ListOffsetResult(ErrorCode.NONE, -1, fetchable, partition.leader_epoch)
        try:
            found = plog.fetch_offset_by_timestamp(timestamp)
        except StorageError as exc:
            log.warning("offset lookup in %s failed: %s", tp, exc)
            return ListOffsetResult(ErrorCode.KAFKA_STORAGE_ERROR)
        if found is None or (found.offset >= fetchable and timestamp >= 0):
            return ListOffsetResult(ErrorCode.NONE, -1, -1, NO_LEADER_EPOCH)
        epoch = found.leader_epoch if found.leader_epoch is not None else NO_LEADER_EPOCH
        return ListOffsetResult(ErrorCode.NONE, found.timestamp, found.offset, epoch)

    def offset_for_leader_epoch(
        self, tp: TopicPartition, current_leader_epoch: int, leader_epoch: int
    ) -> tuple[ErrorCode, int, int]:
        """OffsetForLeaderEpoch: (error, the largest epoch <= ``leader_epoch``, where it ends) on the leader."""
        found_partition = self.leader_partition(tp)
        if isinstance(found_partition, ErrorCode):
            return found_partition, -1, -1
        partition = found_partition
        if current_leader_epoch not in (NO_LEADER_EPOCH, partition.leader_epoch):
            fenced = current_leader_epoch < partition.leader_epoch
            return (ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH), -1, -1
        found = partition.log.leader_epoch_cache.end_offset_for(leader_epoch, partition.log.log_end_offset)
        return (ErrorCode.NONE, *found) if found is not None else (ErrorCode.NONE, -1, -1)

    # --- delete records ----------------------------------------------------------------------------------------

    def delete_records(self, tp: TopicPartition, offset: int) -> tuple[ErrorCode, int]:
        """Advance the log start offset (DeleteRecords); -1 means up to the high watermark."""
        found_partition = self.leader_partition(tp)
        if isinstance(found_partition, ErrorCode):
            return found_partition, -1
        plog = found_partition.log
        target = plog.high_watermark if offset == -1 else offset
        if target < 0 or target > plog.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, plog.log_start_offset
        try:
            self.log_manager.with_space_reserve(
                tp, f"DeleteRecords on {tp}", lambda: plog.maybe_increment_log_start_offset(target)
            )
        except (StorageError, OSError) as exc:
            log.warning("delete records of %s failed: %s", tp, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR, -1
        try:  # the segments wholly below the new start go now, not at the next retention check
            plog.delete_segments_below_log_start()
        except (StorageError, OSError) as exc:
            log.warning(
                "deleting the segments of %s below its new log start failed: %s (retention retries)", tp, exc
            )
        return ErrorCode.NONE, plog.log_start_offset


# What a failed leader append answers, first match wins (Kafka's error for each validation and storage failure).
_APPEND_ERRORS: tuple[tuple[type[Exception], ErrorCode], ...] = (
    (RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
    (RecordBatchTooLargeError, ErrorCode.RECORD_LIST_TOO_LARGE),
    (CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
    (InvalidRecordError, ErrorCode.INVALID_RECORD),
    (RecordValidationError, ErrorCode.INVALID_RECORD),
    (OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    (InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH),
    (InvalidSequenceError, ErrorCode.INVALID_RECORD),
    (StorageError, ErrorCode.KAFKA_STORAGE_ERROR),
)
_APPEND_EXCEPTIONS = tuple(kind for kind, _ in _APPEND_ERRORS)


_append_failures = LogThrottle(60.0)
"""Failed appends, per partition: one line a minute in real (monotonic) seconds."""


def _append_error(tp: TopicPartition, exc: Exception) -> ProduceResult:
    code = next(code for kind, code in _APPEND_ERRORS if isinstance(exc, kind))
    if code is ErrorCode.KAFKA_STORAGE_ERROR:
        _log_append_failure(tp, exc)
    record_errors = tuple(exc.record_errors) if isinstance(exc, RecordValidationError) else ()
    return ProduceResult(code, message=str(exc), record_errors=record_errors)


def _log_append_failure(tp: TopicPartition, exc: Exception) -> None:
    """One ERROR line per partition a minute, however many appends a full disk refuses (each producer retries
    every few milliseconds); the line counts those it stands for."""
    # real time: it decides when to log, nothing the broker does
    since = _append_failures.due(time.monotonic(), tp)
    if since is None:
        return
    more = LogThrottle.held_back(since)
    log.error("append to %s failed: %s%s; said once a minute per partition", tp, exc, more)
