"""``LogSegment``: one ``.log`` file with its ``.index`` and ``.timeindex``, named by the segment's base offset.

Files (20-digit zero-padded base offset, e.g. ``00000000000000368769``):

    <base>.log        record batches, back to back (``FileRecords``; layouts in ``samsa.records.view``)
    <base>.index      8-byte entries (int32 offset - base, int32 position)      (``OffsetIndex``)
    <base>.timeindex  12-byte entries (int64 timestamp, int32 offset - base)    (``TimeIndex``)

A segment being deleted, cleaned or swapped carries a suffix after that (``.deleted``, ``.cleaned``, ``.swap``).

Invariants: every offset in the segment is in [base, base + Int.MAX]; an index entry is added when more than
``index.interval.bytes`` have been appended since the previous one, keyed by the appended set's *last* offset and
the set's start position; the first append never adds one. The last time-index entry of an inactive segment is
its maximum timestamp.

Concurrency contract: not thread-safe; the owning ``Log`` serialises every call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from samsa.clock import Clock
from samsa.records import CorruptRecordError, InvalidRecordError, iter_records

from .config import LogConfig
from .errors import LogSegmentOffsetOverflowError
from .file_records import FileRecords
from .file_slice import FetchDataInfo, FileSlice, LogOffsetMetadata
from .index import OffsetIndex, TimeIndex, TimestampOffset

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


def filename_prefix(offset: int) -> str:
    """The 20-digit, zero-padded decimal name of a segment with base ``offset``."""
    return f"{offset:020d}"


def segment_file(directory: Path, base_offset: int, suffix: str, extra: str = "") -> Path:
    return directory / f"{filename_prefix(base_offset)}{suffix}{extra}"


def offset_from_file_name(name: str) -> int | None:
    """The base offset a segment file name starts with (``.log``, ``.index``, ``.timeindex``, ``.txnindex``,
    ``.snapshot``, each maybe followed by ``.deleted``, ``.cleaned`` or ``.swap``): the decimal digits before the
    first dot. None when the name does not start with digits and a dot (not a segment file).

    This is the one parser of segment file names: the loader, producer state, the read-only reader and the tools
    all call it.
    """
    head, dot, _ = name.partition(".")
    return int(head) if dot and head.isdigit() else None


@dataclass(frozen=True, slots=True)
class LogOffsetPosition:
    """Where ``translate_offset`` found a batch: its last ``offset``, file ``position`` and ``size``."""

    offset: int
    position: int
    size: int


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """A ListOffsets answer: a record's ``timestamp``, ``offset`` and its batch's ``leader_epoch`` (None: unknown)."""

    timestamp: int
    offset: int
    leader_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class RollParams:
    """What ``should_roll`` weighs for an incoming append (Kafka's ``RollParams``)."""

    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


class EpochSink(Protocol):
    """What recovery tells about leader epochs (``LeaderEpochFileCache`` implements it)."""

    def latest_epoch(self) -> int | None: ...

    def assign(self, epoch: int, start_offset: int) -> None: ...


class LogSegment:
    """A ``.log`` with its two indexes (module doc). Not thread-safe; the owning ``Log`` serialises calls."""

    def __init__(
        self,
        log: FileRecords,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        base_offset: int,
        index_interval_bytes: int,
        roll_jitter_ms: int,
        clock: Clock,
    ) -> None:
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.clock = clock
        self._created = clock.milliseconds()
        self._bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        self._max_timestamp_and_offset: TimestampOffset | None = None

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        clock: Clock,
        *,
        init_file_size: int = 0,
        preallocate: bool = False,
        file_suffix: str = "",
    ) -> LogSegment:
        """Open (or create) the segment at ``base_offset`` in ``directory``; indexes are opened lazily."""
        max_index = config.segment_index_bytes
        return cls(
            FileRecords.open(
                segment_file(directory, base_offset, LOG_SUFFIX, file_suffix),
                preallocate=preallocate,
                init_file_size=init_file_size,
            ),
            OffsetIndex(
                segment_file(directory, base_offset, INDEX_SUFFIX, file_suffix), base_offset, max_index
            ),
            TimeIndex(
                segment_file(directory, base_offset, TIME_INDEX_SUFFIX, file_suffix), base_offset, max_index
            ),
            base_offset,
            config.index_interval_bytes,
            config.random_segment_jitter(clock.random()),
            clock,
        )

    # --- state -------------------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Bytes in the ``.log``."""
        return self.log.size

    @property
    def created_ms(self) -> int:
        return self._created

    def _max(self) -> TimestampOffset:
        if self._max_timestamp_and_offset is None:
            self._max_timestamp_and_offset = self.time_index.last_entry
        return self._max_timestamp_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self._max().timestamp

    @property
    def shallow_offset_of_max_timestamp_so_far(self) -> int:
        return self._max().offset

    @property
    def last_modified(self) -> int:
        """The ``.log``'s modification time in milliseconds."""
        return os.stat(self.log.path).st_mtime_ns // 1_000_000

    @last_modified.setter
    def last_modified(self, ms: int) -> None:
        os.utime(self.log.path, ns=(ms * 1_000_000, ms * 1_000_000))

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the ``.log``'s mtime when no record carries one."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT_MAX

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not self.can_convert_to_relative_offset(offset):
            raise LogSegmentOffsetOverflowError(self.base_offset, offset)

    # --- append ------------------------------------------------------------------------------------------

    def append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        shallow_offset_of_max_timestamp: int,
        records: bytes | bytearray | memoryview,
    ) -> None:
        """Write ``records`` (whole batches) at the end with one write and maybe add index entries (2.3)."""
        size = records.nbytes if isinstance(records, memoryview) else len(records)
        if size == 0:
            return
        position = self.log.size
        if position == 0:
            self._rolling_based_timestamp = largest_timestamp
        self._ensure_offset_in_range(largest_offset)
        self.log.append(records)
        if largest_timestamp > self.max_timestamp_so_far:
            self._max_timestamp_and_offset = TimestampOffset(
                largest_timestamp, shallow_offset_of_max_timestamp
            )
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far
            )
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += size

    # --- read --------------------------------------------------------------------------------------------

    def translate_offset(self, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """The first batch whose last offset is >= ``offset``, searched from the index's floor entry."""
        mapping = self.offset_index.lookup(offset)
        for position, batch in self.log.headers(max(mapping.position, starting_position)):
            if batch.last_offset >= offset:
                return LogOffsetPosition(batch.last_offset, position, batch.size_in_bytes)
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = False,
    ) -> FetchDataInfo | None:
        """Up to ``max_size`` bytes from the batch holding ``start_offset``, ending before ``max_position``
        (default: the segment's size). None when nothing at or after ``start_offset`` is here. With
        ``min_one_message`` the first batch is returned whole even if larger than ``max_size``."""
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for a read of {self.log.path}")
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        metadata = LogOffsetMetadata(start_offset, self.base_offset, found.position)
        adjusted = max(max_size, found.size) if min_one_message else max_size
        limit = self.log.size if max_position is None else max_position
        if adjusted == 0:
            return FetchDataInfo(metadata)
        fetch_size = max(0, min(limit - found.position, adjusted))
        return FetchDataInfo(metadata, self.log.slice(found.position, fetch_size), adjusted < found.size)

    def read_slice(self, position: int, size: int) -> FileSlice:
        return self.log.slice(position, size)

    def read_next_offset(self) -> int:
        """The offset after the last batch (scanning from the last index entry); the base when empty."""
        entries = self.offset_index.entries
        start = self.offset_index.entry(entries - 1).position if entries else 0
        next_offset = self.base_offset
        for _, batch in self.log.headers(start):
            next_offset = batch.next_offset
        return next_offset

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> TimestampAndOffset | None:
        """The first record with timestamp >= ``timestamp`` and offset >= ``start_offset`` in this segment."""
        floor = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(floor.offset, start_offset)).position
        for at, header in self.log.headers(position):
            if header.max_timestamp < timestamp:
                continue
            batch = self.log.batch_at(at)
            for record in iter_records(batch, verify_crc=False):
                if record.timestamp >= timestamp and record.offset >= start_offset:
                    epoch = batch.partition_leader_epoch
                    return TimestampAndOffset(record.timestamp, record.offset, epoch if epoch >= 0 else None)
        return None

    def offset_of_max_timestamp(self) -> TimestampAndOffset | None:
        """The first record carrying this segment's largest timestamp (None when there is none)."""
        ts, offset = self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far
        if ts < 0:
            return None
        for at, header in self.log.headers(self.offset_index.lookup(offset).position):
            if header.max_timestamp == ts:
                batch = self.log.batch_at(at)
                for record in iter_records(batch, verify_crc=False):
                    if record.timestamp == ts:
                        epoch = batch.partition_leader_epoch
                        return TimestampAndOffset(ts, record.offset, epoch if epoch >= 0 else None)
        return None

    # --- rolling -----------------------------------------------------------------------------------------

    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None and self.log.size > 0:
            for _, batch in self.log.headers():
                self._rolling_based_timestamp = batch.max_timestamp
                break

    def first_batch_timestamp(self) -> int:
        """The first batch's max timestamp; Long.MAX when the segment is empty."""
        self._load_first_batch_timestamp()
        return LONG_MAX if self._rolling_based_timestamp is None else self._rolling_based_timestamp

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """Record time since the first batch when it has a timestamp, else wall time since creation."""
        self._load_first_batch_timestamp()
        first = self._rolling_based_timestamp
        if first is not None and first >= 0:
            return message_timestamp - first
        return now - self._created

    def should_roll(self, params: RollParams) -> bool:
        """Kafka's roll predicate (4.1): size, time (with this segment's jitter), a full index, offset overflow."""
        size = self.log.size
        reached_roll_ms = (
            self.time_waited_for_roll(params.now, params.max_timestamp_in_messages)
            > params.max_segment_ms - self.roll_jitter_ms
        )
        return (
            size > params.max_segment_bytes - params.messages_size
            or (size > 0 and reached_roll_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.can_convert_to_relative_offset(params.max_offset_in_messages)
        )

    def on_become_inactive_segment(self) -> None:
        """On roll: write the final (max timestamp) time-index entry and trim the three files."""
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    # --- recovery and truncation --------------------------------------------------------------------------

    def recover(self, leader_epochs: EpochSink | None = None) -> int:
        """Rebuild both indexes from the ``.log``, validating every batch; cut the file at the first invalid or
        partial batch. Returns the number of bytes cut. Offsets that do not fit the segment raise
        LogSegmentOffsetOverflowError; a non-increasing offset raises InvalidOffsetError."""
        self.offset_index.reset()
        self.time_index.reset()
        valid_bytes = 0
        last_index_entry = 0
        max_ts = TimestampOffset(-1, self.base_offset)
        try:
            for position, batch in self.log.batches():
                batch.ensure_valid()
                self._ensure_offset_in_range(batch.last_offset)
                if batch.max_timestamp > max_ts.timestamp:
                    max_ts = TimestampOffset(batch.max_timestamp, batch.last_offset)
                if valid_bytes - last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(batch.last_offset, valid_bytes)
                    self.time_index.maybe_append(max_ts.timestamp, max_ts.offset)
                    last_index_entry = valid_bytes
                valid_bytes = position + batch.size_in_bytes
                if leader_epochs is not None and batch.magic >= 2:
                    epoch = batch.partition_leader_epoch
                    latest = leader_epochs.latest_epoch()
                    if epoch >= 0 and (latest is None or epoch > latest):
                        leader_epochs.assign(epoch, batch.base_offset)
        except (CorruptRecordError, InvalidRecordError):
            pass
        truncated = self.log.size - valid_bytes
        if truncated > 0:
            self.log.truncate_to(valid_bytes)
        self._max_timestamp_and_offset = max_ts
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        self._bytes_since_last_index_entry = valid_bytes - last_index_entry
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (the whole batch containing it); returns bytes cut."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.resize_indexes(self.offset_index.max_index_size)
        removed = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size == 0:
            self._created = self.clock.milliseconds()
            self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        self._reload_max_timestamp()
        return removed

    def truncate_fully(self) -> int:
        """Empty the segment without reading its batches (recovery gives up on it); returns bytes cut."""
        self.offset_index.reset()
        self.time_index.reset()
        removed = self.log.truncate_to(0)
        self._created = self.clock.milliseconds()
        self._rolling_based_timestamp = None
        self._bytes_since_last_index_entry = 0
        self._max_timestamp_and_offset = TimestampOffset(-1, self.base_offset)
        return removed

    def _reload_max_timestamp(self) -> None:
        best = self.time_index.last_entry
        position = self.offset_index.lookup(best.offset).position if self.time_index.entries else 0
        for _, batch in self.log.headers(position):
            if batch.max_timestamp > best.timestamp:
                best = TimestampOffset(batch.max_timestamp, batch.last_offset)
        self._max_timestamp_and_offset = best

    def sanity_check(self, time_index_file_newly_created: bool) -> None:
        """Raise FileNotFoundError when the ``.index`` is missing; a newly created time index is emptied."""
        if not self.offset_index.path.exists():
            raise FileNotFoundError(f"the offset index {self.offset_index.path} is missing")
        if time_index_file_newly_created:
            self.time_index.resize(0)

    # --- files -------------------------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the ``.log`` and both indexes (creating index files that were never opened)."""
        self.log.flush()
        self.offset_index._load()
        self.time_index._load()
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        """Write the final time-index entry, trim the indexes, fsync and trim the ``.log``, release files."""
        if self._max_timestamp_and_offset is not None and self.time_index.is_loaded:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, skip_full_check=True
            )
        self.offset_index.close()
        self.time_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self.log.close_handlers()

    def _paths(self) -> list[Path]:
        return [self.log.path, self.offset_index.path, self.time_index.path]

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the three files from ``<name><old_suffix>`` to ``<name><new_suffix>`` (missing indexes too)."""

        def renamed(path: Path) -> Path:
            name = path.name
            if old_suffix and name.endswith(old_suffix):
                name = name[: -len(old_suffix)]
            return path.with_name(name + new_suffix)

        self.log.rename_to(renamed(self.log.path))
        self.offset_index.rename_to(renamed(self.offset_index.path))
        self.time_index.rename_to(renamed(self.time_index.path))

    def has_suffix(self, suffix: str) -> bool:
        return all(path.name.endswith(suffix) for path in self._paths())

    def delete(self) -> None:
        """Close and remove the segment's files (a ``.txnindex`` beside them too)."""
        self.close_handlers()
        for path in self._paths():
            path.unlink(missing_ok=True)
        txn = self.log.path.with_name(self.log.path.name.replace(LOG_SUFFIX, TXN_INDEX_SUFFIX, 1))
        txn.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, path={self.log.path})"
