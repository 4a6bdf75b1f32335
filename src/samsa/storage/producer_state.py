"""Producer state of one partition: what idempotence needs (Kafka's ``ProducerStateManager``).

For every producer id that wrote to the partition the log keeps the producer epoch and the metadata of its last
``NUM_BATCHES_TO_RETAIN`` (5) batches: first and last sequence, last offset, offset delta and max timestamp. An
idempotent producer keeps at most 5 requests in flight, so a retried batch is always among the 5 and is answered
with the offsets it got the first time, and nothing is written twice.

Rules for a client batch carrying a producer id (``check_sequence``, which ``validate_append`` applies to each batch
of an append and the leader's one-batch append to its batch alone), as Kafka applies them:

    epoch < current epoch                         InvalidProducerEpochError  (INVALID_PRODUCER_EPOCH, 47)
    epoch > current epoch (a bump)                first sequence must be 0, else OutOfOrderSequenceError (45)
    same epoch                                    first sequence must be last sequence + 1 (after Int.MAX: 0),
                                                  else OutOfOrderSequenceError
    producer unknown (no epoch kept)              any sequence is accepted (its state may have been removed by
                                                  retention or expiry; KIP-360)
    same epoch and the same (first, last)         a duplicate: ``find_duplicate`` / ``duplicate_of`` return the kept
    sequence as one of the 5 kept batches         metadata

Batches appended by replication or replayed from the log update the state without these checks.

The state is rebuilt after a restart from the latest snapshot file plus the batches after it (``load``). A
snapshot ``<offset>.snapshot`` (20-digit offset, the "map end offset": the next offset the state has not seen) is
written at every segment roll and at a clean close. Its format is Kafka's (``ProducerSnapshot`` version 1), all
big-endian:

    offset  size  field
    0       2     int16   version                1
    2       4     uint32  crc                    CRC-32C of every byte from offset 6 to the end of the file
    6       4     int32   entry count
    10      46*n  entries, each:
                    int64 producerId, int16 epoch, int32 lastSequence, int64 lastOffset,
                    int32 offsetDelta (lastSequence - firstSequence of the last batch), int64 timestamp,
                    int32 coordinatorEpoch, int64 currentTxnFirstOffset (-1 = none)

Transactions: a transactional batch of a producer with no open transaction opens one at its base offset; a
control batch (COMMIT or ABORT marker) ends it, as a ``CompletedTxn`` whose last offset is the marker's (a marker
with nothing open ends an empty transaction at its own offset, as Kafka's). The *first unstable offset* is the
smallest first offset of an open transaction, or of a completed one whose marker the high watermark has not yet
passed (``on_high_watermark_updated``); the log's last stable offset is it, bounded by the high watermark. Each
completed transaction carries the LSO its abort leaves (the first offset of the next open transaction of another
producer, else the marker's offset + 1): what the segment's ``.txnindex`` records for an abort.

A snapshot keeps only each producer's last batch, so after a restart a retry of that batch is still recognised;
the batches written after the snapshot are replayed from the log, which restores up to 5 again. A snapshot whose
size, version or CRC is wrong is deleted and the next older one is used. Producers whose last timestamp is older
than ``producer.id.expiration.ms`` (24 h) are dropped when a snapshot is read and by ``remove_expired_producers``.

Concurrency contract: not thread-safe; the owning ``Log`` serialises every call.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import InvalidProducerEpochError as InvalidProducerEpochError
from .errors import InvalidSequenceError as InvalidSequenceError
from .errors import OutOfOrderSequenceError as OutOfOrderSequenceError
from .errors import ProducerStateError as ProducerStateError
from .errors import StorageError

if TYPE_CHECKING:
    from samsa.records.batch_view import BatchView

# samsa.records.batch_view and .segment are imported where used, with the first log (start-up time)

_log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
PRODUCER_ID_EXPIRATION_MS = 86_400_000
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1

_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_START = 6


class CorruptSnapshotError(StorageError):
    """A producer snapshot file that cannot be read: ``path`` and why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"producer snapshot {path} is corrupt: {reason}")
        self.path = path
        self.reason = reason


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement`` in Kafka's sequence arithmetic (wrapping below 0 to Int.MAX)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == INT32_MAX)


def _with_producer_id(batches: Iterable[BatchView]) -> Iterator[tuple[BatchView, int]]:
    """The v2 batches that carry a producer id, with it; the others have no producer state."""
    for batch in batches:
        if batch.magic >= 2:
            pid = batch.producer_id
            if pid >= 0:
                yield batch, pid


def snapshot_file(directory: Path, offset: int) -> Path:
    from .segment import segment_file  # named as the segments are, by the one function that names them

    return segment_file(directory, offset, SNAPSHOT_SUFFIX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch of a producer: what a retry of it is answered with."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    """A producer's epoch and its last batches (oldest first, at most ``NUM_BATCHES_TO_RETAIN``)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def maybe_update_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, metadata: BatchMetadata) -> None:
        self.maybe_update_epoch(epoch)
        self.batches.append(metadata)
        self.last_timestamp = metadata.timestamp

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for metadata in self.batches:
            if metadata.last_seq == last_seq and metadata.first_seq == first_seq:
                return metadata
        return None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended: the producer, its first offset here, the marker's offset, whether it was
    aborted, and the partition's LSO once it completed (module doc)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class PendingBatch:
    """A validated batch of an append, applied to the state once its offsets are assigned."""

    batch: BatchView
    producer_id: int
    epoch: int
    last_seq: int
    offset_delta: int


class ProducerStateManager:
    """Producer ids of one partition, their epochs and last batches, and the snapshot files (module doc).

    Not thread-safe; the owning ``Log`` serialises every call.
    """

    def __init__(self, directory: Path, producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> None:
        self.directory = directory
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0
        self._snapshots = self._list_snapshots()
        self._last_snap_offset = 0
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._unreplicated: dict[
            int, int
        ] = {}  # first offset -> marker offset, until the HW passes the marker

    # --- transactions --------------------------------------------------------------------------------------

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction not yet stable (open, or its marker above the HW)."""
        if not self._ongoing and not self._unreplicated:
            return None
        return min(*self._ongoing.values(), *self._unreplicated, 2**63 - 1)

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of each open transaction (a copy)."""
        return dict(self._ongoing)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Completed transactions whose marker is now below the HW are stable."""
        if self._unreplicated:
            self._unreplicated = {f: last for f, last in self._unreplicated.items() if last >= high_watermark}

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        if self._unreplicated:
            self._unreplicated = {
                f: last for f, last in self._unreplicated.items() if last >= log_start_offset
            }

    def _begin_txn(self, entry: ProducerStateEntry, first_offset: int) -> None:
        entry.current_txn_first_offset = first_offset
        self._ongoing[entry.producer_id] = first_offset

    def _end_txn(self, entry: ProducerStateEntry, marker: BatchView) -> CompletedTxn | None:
        """A marker ends the producer's transaction (an empty one at the marker when none is open); None for a
        control batch that is not a transaction marker."""
        from samsa.records.control import ControlRecordType, batch_control_type

        control_type = batch_control_type(marker)
        if control_type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            return None
        offset = marker.base_offset
        first = entry.current_txn_first_offset if entry.current_txn_first_offset >= 0 else offset
        entry.current_txn_first_offset = -1
        self._ongoing.pop(entry.producer_id, None)
        lso = min(self._ongoing.values(), default=offset + 1)
        self._unreplicated[first] = offset
        return CompletedTxn(entry.producer_id, first, offset, control_type is ControlRecordType.ABORT, lso)

    def _reset_transactions(self) -> None:
        self._unreplicated.clear()
        self._ongoing = {
            pid: e.current_txn_first_offset
            for pid, e in self.producers.items()
            if e.current_txn_first_offset >= 0
        }

    # --- queries -------------------------------------------------------------------------------------------

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    @property
    def is_empty(self) -> bool:
        return not self.producers

    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    def latest_snapshot_offset(self) -> int | None:
        return self._snapshots[-1] if self._snapshots else None

    # --- client appends ------------------------------------------------------------------------------------

    def find_duplicate(self, batches: Sequence[BatchView]) -> BatchMetadata | None:
        """The kept metadata of the first batch in ``batches`` that was already appended, else None."""
        for batch, pid in _with_producer_id(batches):
            found = self.duplicate_of(pid, batch.producer_epoch, batch.base_sequence, batch.last_sequence)
            if found is not None:
                return found
        return None

    def duplicate_of(
        self, producer_id: int, epoch: int, first_seq: int, last_seq: int
    ) -> BatchMetadata | None:
        """The kept metadata of a batch of ``producer_id`` already appended with these epoch and sequences."""
        entry = self.producers.get(producer_id)
        return None if entry is None else entry.find_duplicate(epoch, first_seq, last_seq)

    def validate_append(self, batches: Sequence[BatchView]) -> list[PendingBatch]:
        """Check every batch with a producer id against the state (module doc rules); raise ProducerStateError
        for the first refused batch. Returns what ``complete_append`` applies once the batches have offsets."""
        pending: list[PendingBatch] = []
        updated: dict[int, tuple[int, int]] = {}  # pid -> (epoch, last seq) of its last batch in this append
        for batch, pid in _with_producer_id(batches):
            epoch = batch.producer_epoch
            if (
                batch.is_control
            ):  # a transaction marker (WriteTxnMarkers): no sequence; a stale epoch is fenced
                known = self.producers.get(pid)
                if known is not None and epoch < known.producer_epoch:
                    raise InvalidProducerEpochError(pid, epoch, known.producer_epoch)
                pending.append(PendingBatch(batch, pid, epoch, NO_SEQUENCE, 0))
                continue
            self.check_sequence(pid, epoch, batch.base_sequence, updated.get(pid))
            batch_last_seq = batch.last_sequence
            updated[pid] = (epoch, batch_last_seq)
            pending.append(PendingBatch(batch, pid, epoch, batch_last_seq, batch.last_offset_delta))
        return pending

    def check_sequence(
        self, producer_id: int, epoch: int, first_seq: int, earlier: tuple[int, int] | None = None
    ) -> None:
        """Raise what the rules (module doc) refuse a client batch of ``producer_id`` starting at ``first_seq``
        for: a sequence below 0, a fenced epoch, a gap. ``earlier``: the (epoch, last sequence) of the same
        producer's batch before it in the same append, which it follows instead of the state."""
        if first_seq < 0:
            raise InvalidSequenceError(producer_id, first_seq)
        current = self.producers.get(producer_id)
        current_epoch = current.producer_epoch if current is not None else NO_PRODUCER_EPOCH
        upd_epoch = current_epoch if earlier is None else earlier[0]
        if epoch < upd_epoch:
            raise InvalidProducerEpochError(producer_id, epoch, upd_epoch)
        if epoch != upd_epoch:
            if first_seq != 0 and upd_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(producer_id, epoch, first_seq, None)
            return
        if earlier is not None:
            last_seq = earlier[1]
        elif current is not None and epoch == current.producer_epoch:
            last_seq = current.last_seq
        else:
            last_seq = NO_SEQUENCE
        if current_epoch != NO_PRODUCER_EPOCH and not in_sequence(last_seq, first_seq):
            expected = 0 if last_seq == INT32_MAX else last_seq + 1
            raise OutOfOrderSequenceError(producer_id, epoch, first_seq, expected)

    def complete_append(self, pending: Iterable[PendingBatch], next_offset: int) -> list[CompletedTxn]:
        """Record validated batches (their offsets now assigned in place) and move the map end offset; returns
        the transactions their markers ended."""
        completed: list[CompletedTxn] = []
        for item in pending:
            batch = item.batch
            if batch.is_control:  # a marker ends the producer's open transaction
                entry = self._entry(item.producer_id)
                entry.maybe_update_epoch(item.epoch)
                txn = self._end_txn(entry, batch)
                if txn is not None:
                    completed.append(txn)
                continue
            self.record(
                item.producer_id,
                item.epoch,
                item.last_seq,
                batch.last_offset,
                item.offset_delta,
                batch.max_timestamp,
                batch.base_offset if batch.is_transactional else -1,
            )
        self.map_end_offset = next_offset
        return completed

    def record(
        self,
        producer_id: int,
        epoch: int,
        last_seq: int,
        last_offset: int,
        offset_delta: int,
        max_timestamp: int,
        transactional_at: int = -1,
    ) -> None:
        """Record a client batch of ``producer_id`` that passed ``check_sequence`` and has its offsets; a
        transactional one (``transactional_at``: its base offset) opens the producer's transaction when none is
        open. The caller moves ``map_end_offset`` (``complete_append`` does)."""
        entry = self._entry(producer_id)
        if transactional_at >= 0 and entry.current_txn_first_offset < 0:
            self._begin_txn(entry, transactional_at)
        entry.add_batch(epoch, BatchMetadata(last_seq, last_offset, offset_delta, max_timestamp))

    def _entry(self, producer_id: int) -> ProducerStateEntry:
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id)
        return entry

    # --- replication and replay ----------------------------------------------------------------------------

    def load_batches(
        self, batches: Iterable[BatchView], next_offset: int | None = None
    ) -> list[CompletedTxn]:
        """Apply batches already in the log (follower appends, replay at load) without validation; returns the
        transactions their markers ended."""
        completed: list[CompletedTxn] = []
        for batch, pid in _with_producer_id(batches):
            epoch = batch.producer_epoch
            if batch.is_control:
                entry = self._entry(pid)
                entry.maybe_update_epoch(epoch)
                txn = self._end_txn(entry, batch)
                if txn is not None:
                    completed.append(txn)
                continue
            self.record(
                pid,
                epoch,
                batch.last_sequence,
                batch.last_offset,
                batch.last_offset_delta,
                batch.max_timestamp,
                batch.base_offset if batch.is_transactional else -1,
            )
        if next_offset is not None:
            self.map_end_offset = next_offset
        return completed

    # --- expiry --------------------------------------------------------------------------------------------

    def _is_expired(self, now: int, entry: ProducerStateEntry) -> bool:
        return (
            entry.current_txn_first_offset < 0 and now - self.producer_id_expiration_ms > entry.last_timestamp
        )

    def remove_expired_producers(self, now: int) -> int:
        """Forget producers silent for longer than ``producer.id.expiration.ms``; returns how many."""
        expired = [pid for pid, entry in self.producers.items() if self._is_expired(now, entry)]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # --- snapshots -----------------------------------------------------------------------------------------

    def _list_snapshots(self) -> list[int]:
        offsets = []
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        from .segment import offset_from_file_name

        for name in names:
            offset = offset_from_file_name(name)
            if offset is not None and name.endswith(SNAPSHOT_SUFFIX) and name.count(".") == 1:
                offsets.append(offset)
        return sorted(offsets)

    def take_snapshot(self, sync: bool = False) -> None:
        """Write ``<map end offset>.snapshot`` if the state moved past the last snapshot taken or loaded."""
        offset = self.map_end_offset
        if offset <= self._last_snap_offset:
            return
        write_snapshot(snapshot_file(self.directory, offset), self.producers.values(), sync)
        index = bisect.bisect_left(self._snapshots, offset)
        if index == len(self._snapshots) or self._snapshots[index] != offset:
            self._snapshots.insert(index, offset)
        self._last_snap_offset = offset

    def delete_snapshot(self, offset: int) -> None:
        index = bisect.bisect_left(self._snapshots, offset)
        if index < len(self._snapshots) and self._snapshots[index] == offset:
            del self._snapshots[index]
        snapshot_file(self.directory, offset).unlink(missing_ok=True)

    def remove_stray_snapshots(self, segment_base_offsets: Sequence[int]) -> None:
        """Keep the snapshots at segment base offsets, and the latest other one if it lies beyond the last
        segment's base (a clean-close or load snapshot); delete the rest (Kafka's ``removeStraySnapshots``)."""
        bases = set(segment_base_offsets)
        strays = [offset for offset in self._snapshots if offset not in bases]
        keep_latest = bool(strays) and (not bases or strays[-1] >= max(bases))
        for offset in strays[:-1] if keep_latest else strays:
            self.delete_snapshot(offset)

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now: int) -> None:
        """Drop snapshots outside [log start, log end]; if the state is not at ``log_end_offset``, reload it from
        the latest readable snapshot (or start empty at the log start). The caller replays what follows."""
        for offset in list(self._snapshots):
            if offset > log_end_offset or offset < log_start_offset:
                self.delete_snapshot(offset)
        if log_end_offset == self.map_end_offset:
            self.map_end_offset = max(self.map_end_offset, log_start_offset)
            self._last_snap_offset = self._snapshots[-1] if self._snapshots else log_start_offset
            return
        self.producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        while self._snapshots:
            offset = self._snapshots[-1]
            path = snapshot_file(self.directory, offset)
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, OSError) as exc:
                _log.warning("deleting the producer snapshot %s, which cannot be read (%s)", path, exc)
                self.delete_snapshot(offset)
                continue
            for entry in entries:
                if not self._is_expired(now, entry):
                    self.producers[entry.producer_id] = entry
            self._reset_transactions()
            self.map_end_offset = self._last_snap_offset = offset
            return
        self.map_end_offset = self._last_snap_offset = log_start_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Forget every producer and snapshot: the log starts again, empty, at ``offset``."""
        self.producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        for snapshot in list(self._snapshots):
            self.delete_snapshot(snapshot)
        self.map_end_offset = self._last_snap_offset = offset


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    from samsa.records.batch_view import crc32c

    body = bytearray()
    count = 0
    for entry in entries:
        last = entry.batches[-1] if entry.batches else None
        body += _ENTRY.pack(
            entry.producer_id,
            entry.producer_epoch,
            last.last_seq if last else NO_SEQUENCE,
            last.last_offset if last else -1,
            last.offset_delta if last else 0,
            last.timestamp if last else entry.last_timestamp,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
        )
        count += 1
    after_crc = struct.pack(">i", count) + bytes(body)
    return _HEADER.pack(SNAPSHOT_VERSION, crc32c(after_crc), count) + bytes(body)


def decode_snapshot(data: bytes, path: Path) -> list[ProducerStateEntry]:
    from samsa.records.batch_view import crc32c

    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(path, f"{len(data)} bytes, shorter than the {_HEADER.size}-byte header")
    version, crc, count = _HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(path, f"version {version}, expected {SNAPSHOT_VERSION}")
    computed = crc32c(memoryview(data)[_CRC_START:])
    if crc != computed:
        raise CorruptSnapshotError(path, f"stored crc {crc} does not match computed crc {computed}")
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(path, f"{len(data)} bytes do not hold {count} entries")
    entries = []
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, timestamp, coordinator_epoch, txn_first = (
            _ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size)
        )
        entry = ProducerStateEntry(
            pid,
            epoch,
            coordinator_epoch=coordinator_epoch,
            current_txn_first_offset=txn_first,
            last_timestamp=timestamp,
        )
        if last_offset >= 0:
            entry.batches.append(BatchMetadata(last_seq, last_offset, delta, timestamp))
        entries.append(entry)
    return entries


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry], sync: bool = False) -> None:
    data = encode_snapshot(entries)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if sync:
            os.fsync(fd)
    except BaseException:
        path.unlink(missing_ok=True)  # no torn snapshot: the state is rebuilt from the log instead
        raise
    finally:
        os.close(fd)


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    return decode_snapshot(path.read_bytes(), path)
