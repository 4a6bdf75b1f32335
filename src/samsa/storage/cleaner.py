"""One cleaning of a compacted log (Kafka's ``Cleaner``): ``plan`` takes what it needs from the log, ``clean``
builds the offset map of the dirty range, groups the old segments and filters each group into a new ``.cleaned``
segment, ``commit`` swaps them in. The rules and the threads each step runs on are in ``log_cleaner``'s module doc;
``log_cleaner.LogCleaner`` schedules the cleanings.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from samsa.clock import Clock
from samsa.records import Record, build_batch, build_legacy_message_set, decode_batch, decode_legacy
from samsa.records.batch_view import BatchView
from samsa.records.control import ControlRecordType, batch_control_type
from samsa.records.record import TimestampType

from .config import LogConfig
from .errors import CleaningAbortedError
from .file_records import FileRecords
from .log import Log
from .segment import CLEANED_SUFFIX, INT_MAX, LogSegment, remove_segment_files
from .topic import TopicPartition
from .txn_index import AbortedTxn, TransactionIndex

# --- one cleaning --------------------------------------------------------------------------------------------


class CleanableRange(Protocol):
    """What a cleaning reads of the log it cleans and of its range (``log_cleaner.LogToClean`` is one): described here,
    so that this module does not import the scheduler that imports it."""

    @property
    def tp(self) -> TopicPartition: ...

    @property
    def log(self) -> Log: ...

    @property
    def first_dirty_offset(self) -> int: ...

    @property
    def first_uncleanable_offset(self) -> int: ...


@dataclass(frozen=True, slots=True)
class SourceSegment:
    """An old segment as ``plan`` saw it: the object (for ``commit``'s checks), a read-only ``FileRecords`` of
    its own over the same file, and the sizes and mtime the grouping and the new segment need."""

    segment: LogSegment
    records: FileRecords
    base_offset: int
    size: int
    offset_index_bytes: int
    time_index_bytes: int
    last_modified: int


@dataclass(frozen=True, slots=True)
class CleaningPlan:
    """Everything ``clean`` needs, taken from the log on its owner's thread."""

    tp: TopicPartition
    log: Log
    directory: Path
    config: LogConfig
    clock: Clock
    now: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    sources: tuple[SourceSegment, ...]  # log start .. first uncleanable, oldest first
    producer_last_offsets: Mapping[int, int]  # producer id -> offset of its last data record
    legacy_delete_horizon_ms: int
    max_map_entries: int
    aborted: tuple[AbortedTxn, ...] = ()  # the aborted transactions below the first uncleanable offset

    def close(self) -> None:
        for source in self.sources:
            source.records.close_handlers()


@dataclass(slots=True)
class CleanerStats:
    """What one cleaning read and wrote."""

    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    invalid_records: int = 0


@dataclass(slots=True)
class CleaningResult:
    """New ``.cleaned`` segments, each with the old segments it replaces, and the checkpoint to record."""

    plan: CleaningPlan
    end_offset: int
    groups: list[tuple[list[SourceSegment], LogSegment]] = field(default_factory=list)
    stats: CleanerStats = field(default_factory=CleanerStats)

    def abandon(self) -> None:
        """Delete the new ``.cleaned`` files and release the plan's file descriptors."""
        for _, segment in self.groups:
            segment.delete()
        self.groups.clear()
        self.plan.close()


def plan(
    to_clean: CleanableRange, clock: Clock, max_map_entries: int, now: int | None = None
) -> CleaningPlan:
    """Take what a cleaning of ``to_clean`` needs from its log (owner's thread)."""
    log = to_clean.log
    now = clock.milliseconds() if now is None else now
    sources: list[SourceSegment] = []
    try:
        for segment in log.segments.values(log.log_start_offset, to_clean.first_uncleanable_offset):
            fd = os.open(segment.log.path, os.O_RDONLY)
            sources.append(
                SourceSegment(
                    segment,
                    FileRecords(segment.log.path, fd, segment.size),
                    segment.base_offset,
                    segment.size,
                    segment.offset_index.entries * 8,
                    segment.time_index.entries * 12,
                    segment.last_modified,
                )
            )
    except BaseException:
        for source in sources:
            source.records.close_handlers()
        raise
    clean_part = [s for s in sources if s.base_offset < to_clean.first_dirty_offset]
    legacy_horizon = clean_part[-1].last_modified - log.config.delete_retention_ms if clean_part else 0
    producers = {
        pid: entry.last_data_offset
        for pid, entry in log.producer_state.producers.items()
        if entry.last_data_offset >= 0
    }
    aborted = log.collect_aborted_transactions(log.log_start_offset, to_clean.first_uncleanable_offset)
    return CleaningPlan(
        to_clean.tp,
        log,
        log.directory,
        log.config,
        clock,
        now,
        to_clean.first_dirty_offset,
        to_clean.first_uncleanable_offset,
        tuple(sources),
        producers,
        legacy_horizon,
        max_map_entries,
        tuple(sorted(aborted, key=lambda t: t.first_offset)),
    )


def clean(cleaning: CleaningPlan, abort: threading.Event | None = None) -> CleaningResult:
    """Build the offset map and write the new ``.cleaned`` segments (any thread; module doc).

    Raises CleaningAbortedError when ``abort`` is set; the new files are removed then, as on any error.
    """
    offsets, end_offset = build_offset_map(cleaning, abort)
    result = CleaningResult(cleaning, end_offset)
    try:
        sources = [s for s in cleaning.sources if s.base_offset < end_offset]
        for group in group_segments_by_size(sources, cleaning.config, cleaning.first_uncleanable_offset):
            result.groups.append(
                (group, clean_group(cleaning, group, offsets, end_offset, result.stats, abort))
            )
    except BaseException:
        result.abandon()
        raise
    return result


def commit(result: CleaningResult) -> None:
    """Swap the new segments in (owner's thread). Raises CleaningAbortedError, after removing the new files, when
    the log changed since ``plan``: an old segment is no longer in it, has another size, or became active."""
    cleaning = result.plan
    log = cleaning.log
    for group, _ in result.groups:
        for source in group:
            current = log.segments.get(source.base_offset)
            if current is not source.segment or current.size != source.size or current is log.active_segment:
                result.abandon()
                raise CleaningAbortedError(
                    cleaning.directory, f"the segment at {source.base_offset} changed during the cleaning"
                )
    new_segments = [segment for _, segment in result.groups]
    old_segments = [source.segment for group, _ in result.groups for source in group]
    result.groups.clear()
    try:
        log.replace_segments(new_segments, old_segments)
    finally:
        cleaning.close()


def clean_log(
    to_clean: CleanableRange, clock: Clock, max_map_entries: int, now: int | None = None
) -> CleaningResult:
    """Plan, clean and commit on the calling thread; returns the result (its ``end_offset`` is the checkpoint)."""
    result = clean(plan(to_clean, clock, max_map_entries, now))
    commit(result)
    return result


# --- the offset map ---------------------------------------------------------------------------------------------


def build_offset_map(cleaning: CleaningPlan, abort: threading.Event | None) -> tuple[dict[bytes, int], int]:
    """(key -> latest offset over the dirty range, end offset = last offset mapped + 1) (``buildOffsetMap``)."""
    start = cleaning.first_dirty_offset
    offsets: dict[bytes, int] = {}
    latest = start - 1
    limit = cleaning.max_map_entries
    txns = TransactionsInCleaning([t for t in cleaning.aborted if t.last_offset >= start], None)
    for source in cleaning.sources:
        following = _next_base(cleaning.sources, source)
        if following is not None and following <= start:
            continue
        for batch in _batches(source, abort):
            if batch.last_offset < start:
                continue
            aborted = txns.on_batch_read(batch) and not batch.is_control
            if not batch.is_control and not aborted:  # an aborted record never shadows a committed one
                mapped = {r.key: r.offset for r in _records(batch) if r.key is not None and r.offset >= start}
                if latest >= start and len(offsets) + len(mapped.keys() - offsets.keys()) > limit:
                    return offsets, latest + 1  # full: the range ends before this batch
                offsets.update(mapped)
            latest = batch.last_offset
    return offsets, max(latest + 1, start)


def _next_base(sources: tuple[SourceSegment, ...], source: SourceSegment) -> int | None:
    index = sources.index(source)
    return sources[index + 1].base_offset if index + 1 < len(sources) else None


# --- grouping ----------------------------------------------------------------------------------------------------


def group_segments_by_size(
    sources: list[SourceSegment], config: LogConfig, first_uncleanable_offset: int
) -> list[list[SourceSegment]]:
    """Consecutive segments merged while the sizes and offsets fit one segment (``groupSegmentsBySize``)."""
    groups: list[list[SourceSegment]] = []
    rest = list(sources)
    while rest:
        group = [rest.pop(0)]
        log_size = group[0].size
        index_size = group[0].offset_index_bytes
        time_index_size = group[0].time_index_bytes
        while rest:
            head = rest[0]
            last_offset = rest[1].base_offset - 1 if len(rest) > 1 else first_uncleanable_offset - 1
            if not (
                log_size + head.size <= config.segment_bytes
                and index_size + head.offset_index_bytes <= config.segment_index_bytes
                and time_index_size + head.time_index_bytes <= config.segment_index_bytes
                and (head.size == 0 or last_offset - group[0].base_offset <= INT_MAX)
            ):
                break
            group.append(rest.pop(0))
            log_size += head.size
            index_size += head.offset_index_bytes
            time_index_size += head.time_index_bytes
        groups.append(group)
    return groups


# --- filtering ----------------------------------------------------------------------------------------------------


def clean_group(
    cleaning: CleaningPlan,
    group: list[SourceSegment],
    offsets: dict[bytes, int],
    end_offset: int,
    stats: CleanerStats,
    abort: threading.Event | None,
) -> LogSegment:
    """Filter ``group`` into one new ``.cleaned`` segment at the group's base offset, flushed, with the last
    segment's modification time."""
    base = group[0].base_offset
    remove_segment_files(cleaning.directory, base, CLEANED_SUFFIX)
    cleaned = LogSegment.open(
        cleaning.directory, base, cleaning.config, cleaning.clock, file_suffix=CLEANED_SUFFIX
    )
    following = _next_base(cleaning.sources, group[-1])
    group_end = following if following is not None else group[-1].base_offset + INT_MAX + 1
    try:
        writer = _SegmentWriter(cleaned, max(cleaning.config.index_interval_bytes, 1))
        txns = TransactionsInCleaning(
            [t for t in cleaning.aborted if t.last_offset >= base and t.first_offset < group_end],
            cleaned.txn_index,
        )
        for source in group:
            retain_legacy_deletes = source.last_modified > cleaning.legacy_delete_horizon_ms
            keep = _RecordFilter(cleaning, offsets, end_offset - 1, retain_legacy_deletes, stats)
            for batch in _batches(source, abort):
                stats.bytes_read += batch.size_in_bytes
                kept = keep.filter_batch(batch, txns.on_batch_read(batch))
                if kept is not None:
                    writer.add(kept)
        writer.flush()
        stats.bytes_written += cleaned.size
        cleaned.on_become_inactive_segment()
        cleaned.flush()
        cleaned.last_modified = group[-1].last_modified
    except BaseException:
        cleaned.delete()
        raise
    return cleaned


class _RecordFilter:
    """Which records and batches of one old segment survive (Kafka's ``RecordFilter`` in ``cleanInto``)."""

    def __init__(
        self,
        cleaning: CleaningPlan,
        offsets: dict[bytes, int],
        latest_mapped: int,
        retain_legacy_deletes: bool,
        stats: CleanerStats,
    ) -> None:
        self.cleaning = cleaning
        self.offsets = offsets
        self.latest_mapped = latest_mapped
        self.retain_legacy_deletes = retain_legacy_deletes
        self.stats = stats

    def _keep(self, record: Record, tombstones_stay: bool) -> bool:
        if record.offset > self.latest_mapped:
            return True
        if record.key is None:
            self.stats.invalid_records += 1
            return False
        if record.offset < self.offsets.get(record.key, -1):
            return False
        return record.value is not None or tombstones_stay

    def filter_batch(self, batch: BatchView, discardable: bool = False) -> bytes | None:
        """The batch as it goes into the new segment: the same bytes, rebuilt, empty, or None (dropped).
        ``discardable``: an aborted transaction's data, or a marker whose transaction has no data left
        (``TransactionsInCleaning``)."""
        if batch.is_control:
            batch.ensure_valid()
            if not discardable:
                return bytes(batch.raw())
            horizon = batch.delete_horizon_ms
            if horizon is None:  # the marker stays for delete.retention.ms, so readers that began see it
                deadline = self.cleaning.now + self.cleaning.config.delete_retention_ms
                return self._rebuild(batch, _records(batch), deadline)
            return None if self.cleaning.now >= horizon else bytes(batch.raw())
        if discardable:
            self.stats.records_read += batch.records_count
            if self.cleaning.producer_last_offsets.get(batch.producer_id) == batch.last_offset:
                return self._rebuild(batch, [], -1, max_timestamp=batch.max_timestamp)
            return None
        records = _records(batch)
        self.stats.records_read += len(records)
        if batch.magic < 2:
            kept = [r for r in records if self._keep(r, self.retain_legacy_deletes)]
            self.stats.records_kept += len(kept)
            return self._legacy(batch, records, kept)
        horizon = batch.delete_horizon_ms
        tombstones_stay = horizon is None or self.cleaning.now < horizon
        kept = [r for r in records if self._keep(r, tombstones_stay)]
        self.stats.records_kept += len(kept)
        set_horizon = horizon is None and any(r.value is None for r in kept)
        if kept and len(kept) == len(records) and not set_horizon:
            return bytes(batch.raw())
        if kept:
            new_horizon = (
                self.cleaning.now + self.cleaning.config.delete_retention_ms if set_horizon else horizon
            )
            return self._rebuild(batch, kept, -1 if new_horizon is None else new_horizon)
        if (
            batch.producer_id >= 0
            and self.cleaning.producer_last_offsets.get(batch.producer_id) == batch.last_offset
        ):
            return self._rebuild(batch, [], -1, max_timestamp=batch.max_timestamp)
        return None

    def _rebuild(
        self, batch: BatchView, kept: list[Record], horizon: int, max_timestamp: int | None = None
    ) -> bytes:
        log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        return build_batch(
            kept,
            base_offset=batch.base_offset,
            compression=batch.compression if kept else 0,
            timestamp_type=batch.timestamp_type,
            log_append_time=batch.max_timestamp if log_append else None,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
            partition_leader_epoch=batch.partition_leader_epoch,
            last_offset=batch.last_offset,
            max_timestamp=max_timestamp,
            delete_horizon_ms=horizon,
        )

    def _legacy(self, batch: BatchView, records: list[Record], kept: list[Record]) -> bytes | None:
        if not kept:
            return None
        if len(kept) == len(records):
            return bytes(batch.raw())
        log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        return build_legacy_message_set(
            batch.magic,
            kept,
            batch.compression,
            timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
            log_append_time=batch.max_timestamp if log_append else None,
        )


class TransactionsInCleaning:
    """Which batches of a cleaned range belong to aborted transactions, and which markers may go (Kafka's
    ``CleanedTransactionMetadata``), batch by batch in offset order:

    - the data batches of an aborted transaction (``aborted``, from the ``.txnindex`` files) may be discarded;
    - an ABORT marker stays, and its transaction stays in the new segment's ``index``, while this pass saw data
      of that transaction (a reader of the old data still needs both); once none is left it may go;
    - a COMMIT marker may go once no data of its transaction is seen before it.

    A marker that may go is kept ``delete.retention.ms`` longer (its delete horizon, ``_RecordFilter``)."""

    def __init__(self, aborted: Sequence[AbortedTxn], index: TransactionIndex | None) -> None:
        self.pending = deque(sorted(aborted, key=lambda t: t.first_offset))
        self.ongoing_aborted: dict[int, tuple[AbortedTxn, bool]] = {}  # pid -> (txn, data seen in this pass)
        self.ongoing_committed: set[int] = set()
        self.index = index

    def on_batch_read(self, batch: BatchView) -> bool:
        """Whether ``batch`` may be discarded (rules above)."""
        while self.pending and self.pending[0].first_offset <= batch.last_offset:
            txn = self.pending.popleft()
            self.ongoing_aborted[txn.producer_id] = (txn, False)
        if batch.magic < 2 or batch.producer_id < 0:
            return False
        pid = batch.producer_id
        if batch.is_control:
            kind = batch_control_type(batch)
            if kind is ControlRecordType.ABORT:
                ongoing = self.ongoing_aborted.pop(pid, None)
                if ongoing is not None and ongoing[1]:
                    if self.index is not None:
                        self.index.append(ongoing[0])
                    return False
                return True
            if kind is ControlRecordType.COMMIT:
                if pid in self.ongoing_committed:
                    self.ongoing_committed.discard(pid)
                    return False
                return True
            return False
        if pid in self.ongoing_aborted:
            self.ongoing_aborted[pid] = (self.ongoing_aborted[pid][0], True)
            return True
        if batch.is_transactional:
            self.ongoing_committed.add(pid)
        return False


class _SegmentWriter:
    """Appends kept batches to the new segment in chunks of about ``index.interval.bytes``, so its offset index
    is as dense as one the log wrote itself."""

    def __init__(self, segment: LogSegment, chunk_bytes: int) -> None:
        self.segment = segment
        self.chunk_bytes = chunk_bytes
        self._chunks: list[bytes] = []
        self._size = 0
        self._last_offset = -1
        self._max_timestamp = -1
        self._offset_of_max = -1

    def add(self, data: bytes) -> None:
        view = BatchView(memoryview(data), 0)
        last = view.last_offset if view.magic >= 2 or len(data) == view.size_in_bytes else _last_legacy(data)
        if self._offset_of_max < 0 or view.max_timestamp > self._max_timestamp:
            self._max_timestamp, self._offset_of_max = view.max_timestamp, last
        self._last_offset = last
        self._chunks.append(data)
        self._size += len(data)
        if self._size >= self.chunk_bytes:
            self.flush()

    def flush(self) -> None:
        if not self._chunks:
            return
        self.segment.append(
            self._last_offset, self._max_timestamp, self._offset_of_max, b"".join(self._chunks)
        )
        self._chunks.clear()
        self._size = 0
        self._max_timestamp = self._offset_of_max = -1


def _last_legacy(data: bytes) -> int:
    """The offset of the last message of a rebuilt legacy message set (several messages when uncompressed)."""
    last = -1
    position = 0
    while position < len(data):
        view = BatchView(memoryview(data), position)
        last = view.last_offset
        position = view.end
    return last


# --- reading --------------------------------------------------------------------------------------------------


def _batches(source: SourceSegment, abort: threading.Event | None) -> Iterator[BatchView]:
    for _, batch in source.records.batches(0, source.size):
        if abort is not None and abort.is_set():
            raise CleaningAbortedError(source.records.path.parent, "the cleaner is stopping")
        yield batch


def _records(batch: BatchView) -> list[Record]:
    """The batch's records, its CRC checked first: a corrupt batch fails the cleaning rather than being
    rewritten with a fresh CRC."""
    if batch.magic >= 2:
        return list(decode_batch(batch).records)
    return decode_legacy(batch)
