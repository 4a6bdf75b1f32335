"""``LogSegment``: one ``.log`` file with its ``.index``, ``.timeindex`` and ``.txnindex``, named by its base offset.

Files (20-digit zero-padded base offset, e.g. ``00000000000000368769``):

    <base>.log        record batches, back to back (``FileRecords``; layouts in ``samsa.records.batch_view``)
    <base>.index      8-byte entries (int32 offset - base, int32 position)      (``OffsetIndex``)
    <base>.timeindex  12-byte entries (int64 timestamp, int32 offset - base)    (``TimeIndex``)
    <base>.txnindex   34-byte aborted transactions, only once there is one      (``TransactionIndex``)

A segment being deleted, cleaned or swapped carries a suffix after that (``.deleted``, ``.cleaned``, ``.swap``).

Invariants: every offset in the segment is in [base, base + Int.MAX]; an index entry is added when more than
``index.interval.bytes`` have been appended since the previous one, keyed by the appended set's *last* offset and
the set's start position; the first append never adds one. The last time-index entry of an inactive segment is
its maximum timestamp.

Lookups: an offset's batch is found by scanning batch headers from the offset index's floor entry, or from a recent
append (the segment keeps the first batch of each, ``TAIL_APPENDS`` at least, in memory only) when that is further
on: a read at the log end, a caught-up follower's or consumer's, then scans one batch or a few, not every batch
since the last index entry.

Concurrency contract: not thread-safe; the owning ``Log`` serialises every call.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from samsa.clock import Clock
from samsa.records import CorruptRecordError, InvalidRecordError, iter_records
from samsa.records.batch_view import (
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    BatchView,
    iter_batches,
)

from .config import LogConfig
from .errors import LogSegmentOffsetOverflowError
from .file_records import FileRecords
from .file_slice import FetchDataInfo, FileSlice, LogOffsetMetadata
from .index import OffsetIndex, TimeIndex, TimestampOffset
from .txn_index import TransactionIndex

_log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
CHECKED_INDEX_ENTRIES = 4096  # offset-index entries whose batch ``check`` reads; an even spread beyond
_SIZE = struct.Struct(">i")  # a batch's size field, after its 8-byte offset
_OFFSET = struct.Struct(">q")  # a batch's offset field: v2's base offset, a legacy wrapper's last offset
TAIL_APPENDS = 16
"""Recent appends whose first batch a segment remembers (its offset field and position), at least: a read at or
near the log end, a caught-up follower's or consumer's, starts its batch scan there, not at the last index entry
up to ``index.interval.bytes`` before it (``translate_offset``)."""
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SET_ASIDE_SUFFIX = ".salvage"
"""Appended to the names of files recovery keeps out of the log but does not delete (valid segments after a
corrupt batch, the bytes cut from a segment): Kafka's loader and Samsa's ignore such names."""


def _spread(count: int, most: int) -> range:
    """Slots 0..count-1, or ``most`` of them spread evenly (the last one included) when there are more."""
    if count <= most:
        return range(count)
    step = -(-count // most)
    return range(count - 1, -1, -step)


def filename_prefix(offset: int) -> str:
    """The 20-digit, zero-padded decimal name of a segment with base ``offset``."""
    return f"{offset:020d}"


def segment_file(directory: Path, base_offset: int, suffix: str, extra: str = "") -> Path:
    return directory / f"{filename_prefix(base_offset)}{suffix}{extra}"


def remove_segment_files(directory: Path, base_offset: int, extra: str = "") -> None:
    """Remove what a segment at ``base_offset`` would open (its .log, .index and .timeindex, each ending in
    ``extra``), where a crash or an earlier attempt left them: ``LogSegment.open`` then starts them empty."""
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        segment_file(directory, base_offset, suffix, extra).unlink(missing_ok=True)


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
class AppendMark:
    """A segment's state before an append, for ``LogSegment.rollback``."""

    size: int
    offset_entries: int
    time_entries: int
    bytes_since_last_index_entry: int
    max_timestamp_and_offset: TimestampOffset | None
    rolling_based_timestamp: int | None


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

    def assign(self, epoch: int, start_offset: int, best_effort: bool = False) -> None: ...


class LogSegment:
    """A ``.log`` with its two indexes (module doc). Not thread-safe; the owning ``Log`` serialises calls."""

    __slots__ = (
        "_bytes_since_last_index_entry",
        "_created",
        "_max_timestamp_and_offset",
        "_rolling_based_timestamp",
        "_tail_offsets",
        "_tail_positions",
        "base_offset",
        "clock",
        "cut_claims",
        "cut_set_aside",
        "index_interval_bytes",
        "log",
        "offset_index",
        "roll_jitter_ms",
        "time_index",
        "txn_index",
        "verify_on_first_use",
    )

    def __init__(
        self,
        log: FileRecords,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        base_offset: int,
        index_interval_bytes: int,
        roll_jitter_ms: int,
        clock: Clock,
        txn_index: TransactionIndex | None = None,
    ) -> None:
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = txn_index or TransactionIndex(
            log.path.with_name(log.path.name.replace(LOG_SUFFIX, TXN_INDEX_SUFFIX, 1)), base_offset
        )
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.clock = clock
        self._created = clock.milliseconds()
        self._bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        self._max_timestamp_and_offset: TimestampOffset | None = None
        # the offset field and position of the first batch of each recent append, in append order (``TAIL_APPENDS``)
        self._tail_offsets: list[int] = []
        self._tail_positions: list[int] = []
        self.verify_on_first_use = False  # set by the loader for segments trusted from a clean shutdown
        self.cut_set_aside: Path | None = None  # where the last recovery kept the bytes it cut (``recover``)
        self.cut_claims = -1  # the offset after the valid batches among the bytes the last recovery cut

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
            TransactionIndex(
                segment_file(directory, base_offset, TXN_INDEX_SUFFIX, file_suffix), base_offset
            ),
        )

    # --- state -------------------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Bytes in the ``.log``."""
        return self.log.size

    @property
    def created_ms(self) -> int:
        return self._created

    def _verify_once(self) -> None:
        """A segment trusted from a clean shutdown is checked when first read; if it fails, recovered."""
        self.verify_on_first_use = False
        reason = self.check()
        if reason is not None:
            size = self.size
            truncated = self.recover()
            _log.warning(
                "recovered %s on first read after a clean shutdown (%s): cut %d of %d bytes, indexes rebuilt",
                self.log.path,
                reason,
                truncated,
                size,
            )

    def _max(self) -> TimestampOffset:
        if self.verify_on_first_use:
            self._verify_once()
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
        """Write ``records`` (whole batches) at the end with one write and maybe add index entries (2.3).

        All or nothing: when the write or an index entry fails, the segment is put back as it was (the bytes
        written are cut off again) and the error is raised; if even that fails, AppendRollbackError."""
        size = records.nbytes if type(records) is memoryview else len(records)
        if size == 0:
            return
        if not 0 <= largest_offset - self.base_offset <= INT_MAX:
            raise LogSegmentOffsetOverflowError(self.base_offset, largest_offset)
        max_so_far = self._max_timestamp_and_offset
        if max_so_far is None:
            max_so_far = self._max()
        new_max = largest_timestamp > max_so_far.timestamp
        position = self.log.append(records)
        if (
            self._bytes_since_last_index_entry + size > self.index_interval_bytes
            and LOG_OVERHEAD + _SIZE.unpack_from(records, 8)[0] < size  # its first batch ends before its end
        ):
            self._index_each_batch(position, records, max_so_far)
        else:
            if self._bytes_since_last_index_entry > self.index_interval_bytes:
                self._add_index_entries(
                    position, largest_offset, largest_timestamp, shallow_offset_of_max_timestamp, max_so_far
                )
            self._bytes_since_last_index_entry += size
        if position == 0:
            self._rolling_based_timestamp = largest_timestamp
        if new_max:
            self._max_timestamp_and_offset = TimestampOffset(
                largest_timestamp, shallow_offset_of_max_timestamp
            )
        offsets = self._tail_offsets
        offsets.append(_OFFSET.unpack_from(records)[0])
        self._tail_positions.append(position)
        if len(offsets) > 2 * TAIL_APPENDS:
            del offsets[:TAIL_APPENDS], self._tail_positions[:TAIL_APPENDS]

    def _index_each_batch(
        self, position: int, records: bytes | bytearray | memoryview, current: TimestampOffset
    ) -> None:
        """The index entries of an append of several batches (a follower's fetched data, a legacy message set),
        as Kafka adds them: walking the batches, each batch reached when more than ``index.interval.bytes`` were
        appended since the last entry gets one, with its own last offset at its own position (an entry for the
        whole append at its first batch would name an offset that batch does not end at). The batch headers are
        read only for appends that reach the interval. All or nothing, as ``append``."""
        mark = AppendMark(
            position,
            self.offset_index.entries,
            self.time_index.entries,
            self._bytes_since_last_index_entry,
            current,
            self._rolling_based_timestamp,
        )
        try:
            for batch in iter_batches(records):
                at = position + batch.position
                if self._bytes_since_last_index_entry > self.index_interval_bytes:
                    self._add_index_entries(
                        at, batch.last_offset, batch.max_timestamp, batch.last_offset, current
                    )
                if batch.max_timestamp > current.timestamp:
                    current = TimestampOffset(batch.max_timestamp, batch.last_offset)
                self._bytes_since_last_index_entry += batch.size_in_bytes
        except BaseException:
            self.rollback(mark)
            raise

    def _add_index_entries(
        self, position: int, offset: int, timestamp: int, shallow_offset: int, current: TimestampOffset
    ) -> None:
        """The index entries of the append that starts at ``position`` (``current``: the segment's largest
        timestamp before it); on failure, the append is undone."""
        offsets, times = self.offset_index, self.time_index
        added = 0  # entries the offset index took (a failed index append leaves its index as it was)
        try:
            offsets.append(offset, position)
            added = 1
            if timestamp > current.timestamp:
                times.maybe_append(timestamp, shallow_offset)
            elif current.timestamp > times.last_entry.timestamp:
                times.maybe_append(current.timestamp, current.offset)
        except BaseException:
            self._undo_index_entries(position, added, current)
            raise
        self._bytes_since_last_index_entry = 0

    def _undo_index_entries(self, position: int, added: int, current: TimestampOffset) -> None:
        """Undo an append starting at ``position`` whose index entries failed after the offset index took
        ``added`` of them (the time index's entry, the last step, is the one that failed if any)."""
        self.rollback(
            AppendMark(
                position,
                self.offset_index.entries - added,
                self.time_index.entries,
                self._bytes_since_last_index_entry,
                current,
                self._rolling_based_timestamp,
            )
        )

    def append_mark(self) -> AppendMark:
        """What ``rollback`` needs to undo the appends made after this call."""
        return AppendMark(
            self.log.size,
            self.offset_index.entries,
            self.time_index.entries,
            self._bytes_since_last_index_entry,
            self._max_timestamp_and_offset,
            self._rolling_based_timestamp,
        )

    def rollback(self, mark: AppendMark) -> None:
        """Put the segment back as it was at ``mark``: bytes after it cut, index entries after it dropped.
        Raises AppendRollbackError when the ``.log`` cannot be cut (the caller takes the log offline)."""
        if self.offset_index.entries > mark.offset_entries:
            self.offset_index._truncate_to_entries(mark.offset_entries)
        if self.time_index.entries > mark.time_entries:
            self.time_index._truncate_to_entries(mark.time_entries)
        self._bytes_since_last_index_entry = mark.bytes_since_last_index_entry
        self._max_timestamp_and_offset = mark.max_timestamp_and_offset
        self._rolling_based_timestamp = mark.rolling_based_timestamp
        self._forget_tail()
        self.log.undo_append(mark.size)

    def _forget_tail(self) -> None:
        """Drop the recent appends' positions: bytes are about to be cut (their batches may go)."""
        self._tail_offsets.clear()
        self._tail_positions.clear()

    # --- read --------------------------------------------------------------------------------------------

    def translate_offset(self, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """The first batch whose last offset is >= ``offset``, searched from the index's floor entry, or from the
        latest recent append whose first batch's offset field is <= ``offset`` when that is further on: every
        batch before such an append ends below that field, so below ``offset`` (a legacy wrapper's field is its
        last offset, the batches before it end below its first). When that field is past the index's last
        entry, so is the append, and the index is not searched."""
        if self.verify_on_first_use:
            self._verify_once()
        offsets = self._tail_offsets
        if offsets and offset >= offsets[0]:
            slot = bisect.bisect_right(offsets, offset) - 1
            start = self._tail_positions[slot]
            if offsets[slot] <= self.offset_index.last_offset:
                start = max(start, self.offset_index.lookup(offset).position)
            start = max(start, starting_position)
        else:
            start = max(self.offset_index.lookup(offset).position, starting_position)
        found = self.log.search_for_offset(offset, start)
        return None if found is None else LogOffsetPosition(*found)

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
        if self.verify_on_first_use:
            self._verify_once()
        entries = self.offset_index.entries
        start = self.offset_index.entry(entries - 1).position if entries else 0
        next_offset = self.base_offset
        for _, batch in self.log.headers(start):
            next_offset = batch.next_offset
        return next_offset

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> TimestampAndOffset | None:
        """The first record with timestamp >= ``timestamp`` and offset >= ``start_offset`` in this segment."""
        if self.verify_on_first_use:
            self._verify_once()
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

    def time_waited_for_roll(self, now: int | None, message_timestamp: int) -> int:
        """Record time since the first batch when it has a timestamp, else wall time since creation (``now``, or
        this segment's clock when None)."""
        first = self._rolling_based_timestamp
        if first is None:
            self._load_first_batch_timestamp()
            first = self._rolling_based_timestamp
        if first is not None and first >= 0:
            return message_timestamp - first
        return (self.clock.milliseconds() if now is None else now) - self._created

    def should_roll(self, params: RollParams) -> bool:
        """Kafka's roll predicate (4.1): size, time (with this segment's jitter), a full index, offset overflow."""
        return self.should_roll_for(
            params.messages_size,
            params.max_timestamp_in_messages,
            params.max_offset_in_messages,
            params.now,
            params.max_segment_ms,
            params.max_segment_bytes,
        )

    def should_roll_for(
        self,
        messages_size: int,
        max_timestamp: int,
        max_offset: int,
        now: int | None,
        max_segment_ms: int,
        max_segment_bytes: int,
    ) -> bool:
        """``should_roll`` with the parameters spread out (the append path makes no ``RollParams``); ``now``
        None reads this segment's clock, and only when the time rule needs it (a batch without timestamps)."""
        size = self.log.size
        if size > max_segment_bytes - messages_size or not 0 <= max_offset - self.base_offset <= INT_MAX:
            return True
        if self.offset_index.is_full() or self.time_index.is_full():
            return True
        if size == 0:
            return False
        first = self._rolling_based_timestamp
        if first is not None and first >= 0:  # time_waited_for_roll's common case, without the call
            waited = max_timestamp - first
        else:
            waited = self.time_waited_for_roll(now, max_timestamp)
        return waited > max_segment_ms - self.roll_jitter_ms

    def restart_roll_clock(self) -> None:
        """Time-based rolling counts from now (an empty active segment rolled onto itself)."""
        self._created = self.clock.milliseconds()
        self._rolling_based_timestamp = None

    def on_become_inactive_segment(self) -> None:
        """On roll: write the final (max timestamp) time-index entry and trim the three files (the ``.log``'s
        reserved blocks at its next flush, ``FileRecords.on_become_inactive``)."""
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.on_become_inactive()

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    # --- recovery and truncation --------------------------------------------------------------------------

    def recover(self, leader_epochs: EpochSink | None = None) -> int:
        """Rebuild both indexes from the ``.log``, validating every batch; cut the file at the first invalid or
        partial batch, or at the first whose offsets do not increase (Kafka empties the whole segment there;
        keeping what precedes it loses less). Returns the number of bytes cut. Offsets that do not fit the
        segment raise LogSegmentOffsetOverflowError. The indexes are built in memory and written once; if that
        write fails the ``.index`` is removed, so the next start recovers this segment again.

        The bytes cut are first copied to ``<base>.log.cut-at-<position>.salvage`` (``cut_set_aside``) unless
        they are all zeros or too few to hold a whole batch: after a corrupt batch they may hold valid ones,
        which recovery does not trust but an operator can use. A copy that fails (a full disk) is said at WARN and
        the cut goes ahead: the log must serve. Either way the offsets of the valid batches among the bytes cut,
        looked for past a damaged length too (``FileRecords.valid_batches_end``), are kept in ``cut_claims``,
        from the file before the cut: the log must never hand them out again."""
        self._forget_tail()
        self.offset_index.reset()
        self.time_index.reset()
        valid_bytes = 0
        last_index_entry = 0
        previous_last = self.base_offset - 1
        max_ts = TimestampOffset(-1, self.base_offset)
        try:
            for position, batch in self.log.batches():
                batch.ensure_valid()
                first = batch.base_offset if batch.magic >= 2 else batch.last_offset
                if first <= previous_last or batch.last_offset < first:
                    break
                self._ensure_offset_in_range(batch.last_offset)
                previous_last = batch.last_offset
                if batch.max_timestamp > max_ts.timestamp:
                    max_ts = TimestampOffset(batch.max_timestamp, batch.last_offset)
                if valid_bytes - last_index_entry > self.index_interval_bytes and not (
                    self.offset_index.is_full() or self.time_index.is_full()
                ):  # a full index takes no more entries (a hint: lookups scan further), the next append rolls
                    self.offset_index.append(batch.last_offset, valid_bytes, write=False)
                    self.time_index.maybe_append(max_ts.timestamp, max_ts.offset, write=False)
                    last_index_entry = valid_bytes
                valid_bytes = position + batch.size_in_bytes
                if leader_epochs is not None and batch.magic >= 2:
                    epoch = batch.partition_leader_epoch
                    latest = leader_epochs.latest_epoch()
                    if epoch >= 0 and (latest is None or epoch > latest):
                        try:
                            leader_epochs.assign(epoch, batch.base_offset, best_effort=True)
                        except OSError as exc:  # a full disk at start: kept in memory, written later
                            _log.warning("could not write the leader epochs of %s: %s", self.log.path, exc)
        except (CorruptRecordError, InvalidRecordError):
            pass
        truncated = self.log.size - valid_bytes
        self.cut_set_aside = None
        self.cut_claims = -1
        if truncated > 0:
            if truncated >= RECORD_BATCH_OVERHEAD:
                self.cut_claims = self.log.valid_batches_end(
                    valid_bytes, self.base_offset, self.base_offset + INT_MAX
                )
                self._set_aside_cut(valid_bytes)
            self.log.truncate_to(valid_bytes)
        self._max_timestamp_and_offset = max_ts
        self.time_index.maybe_append(max_ts.timestamp, max_ts.offset, skip_full_check=True, write=False)
        self._persist_indexes()
        self._bytes_since_last_index_entry = valid_bytes - last_index_entry
        if truncated:  # aborts whose markers were cut are not in the log any more
            try:
                self.txn_index.truncate_to(previous_last + 1)
            except (OSError, ValueError) as exc:
                _log.warning("could not cut %s after recovery (%s): removed", self.txn_index.path, exc)
                self.txn_index.delete()
        return truncated

    def _set_aside_cut(self, position: int) -> None:
        """Keep the bytes from ``position`` on in a file of their own (``recover``)."""
        path = segment_file(
            self.log.path.parent, self.base_offset, LOG_SUFFIX, f".cut-at-{position}{SET_ASIDE_SUFFIX}"
        )
        try:
            kept = self.log.copy_out(position, path)
        except OSError as exc:
            _log.warning(
                "could not set aside the %d bytes cut from %s at position %d (%s): cut without a copy",
                self.log.size - position,
                self.log.path,
                position,
                exc,
            )
            return
        if kept:
            self.cut_set_aside = path
            _log.warning(
                "set aside the %d bytes cut from %s at position %d in %s: not deleted (valid batches may follow "
                "the corrupt one)",
                kept,
                self.log.path,
                position,
                path.name,
            )

    def _persist_indexes(self) -> None:
        try:
            self.offset_index.persist()
            self.time_index.persist()
            self.offset_index.trim_to_valid_size()
            self.time_index.trim_to_valid_size()
        except OSError as exc:
            _log.warning(
                "could not write the rebuilt indexes of %s (%s): serving them from memory; the .index is "
                "removed so the next start rebuilds them",
                self.log.path,
                exc,
            )
            self.offset_index.path.unlink(missing_ok=True)

    def check(self) -> str | None:
        """Why this segment, loaded after a clean shutdown, cannot be trusted as it is; None when it is sound.

        Cheap (no full scan): the offset index's offsets and positions increase and stay inside the segment;
        its entries (every one up to ``CHECKED_INDEX_ENTRIES``, an even spread beyond) name batch starts whose
        offsets fit them; the time index never goes back; from the last offset-index entry to the end of file
        the batches are whole, valid (CRC) and increasing, the file ends on a batch boundary, and no timestamp
        there is above the time index's last (the entry a clean close writes)."""
        index, time_index, size = self.offset_index, self.time_index, self.log.size
        if index.length % index.entry_size:
            return f"{index.path} is {index.length} bytes, not whole {index.entry_size}-byte entries"
        if time_index.length % time_index.entry_size:
            return f"{time_index.path} is {time_index.length} bytes, not whole {time_index.entry_size}-byte entries"
        entries = index.offset_positions()
        previous = (self.base_offset - 1, -1)
        for offset, position in entries:
            if offset <= previous[0] or position <= previous[1] or position >= size:
                return f"{index.path}: entry ({offset}, {position}) after {previous} in a {size}-byte segment"
            previous = (offset, position)
        for slot in _spread(len(entries), CHECKED_INDEX_ENTRIES):
            offset, position = entries[slot]
            below = entries[slot - 1][0] if slot else self.base_offset - 1
            reason = self._check_entry(offset, position, below)
            if reason is not None:
                return f"{index.path}: {reason}"
        last_time = time_index.last_entry
        walked = self._check_tail(entries[-1][1] if entries else 0)
        if isinstance(walked, str):
            return walked
        next_offset, tail_max = walked
        times = time_index.timestamp_offsets()
        for (ts_a, offset_a), (ts_b, offset_b) in itertools.pairwise(times):
            if ts_b < ts_a or offset_b < offset_a:
                return f"{time_index.path}: entry ({ts_b}, {offset_b}) goes back from ({ts_a}, {offset_a})"
        if times and not self.base_offset <= last_time.offset < max(next_offset, self.base_offset + 1):
            return f"{time_index.path}: last entry offset {last_time.offset} is outside the segment"
        if tail_max > last_time.timestamp:
            return f"{time_index.path}: last timestamp {last_time.timestamp} is below a batch's {tail_max}"
        return None

    def _check_entry(self, offset: int, position: int, below: int) -> str | None:
        header = self.log.read(position, RECORD_BATCH_OVERHEAD)
        if len(header) < HEADER_SIZE_UP_TO_MAGIC:
            return f"entry ({offset}, {position}) points past the data"
        batch = BatchView(memoryview(header), 0)
        first = batch.base_offset if batch.magic >= 2 else batch.last_offset
        if (
            batch.magic > 2
            or batch.size_field < LEGACY_MIN_SIZE
            or position + batch.size_in_bytes > self.log.size
        ):
            return f"entry ({offset}, {position}) does not point at a batch"
        if not below < first <= offset:
            return f"entry ({offset}, {position}) points at a batch starting at offset {first}"
        return None

    def _check_tail(self, position: int) -> tuple[int, int] | str:
        """Walk whole batches from ``position`` to the end: (next offset, largest timestamp) or what is wrong."""
        previous_last = self.base_offset - 1
        max_ts = -1
        end = position
        try:
            for at, batch in self.log.batches(position):
                batch.ensure_valid()
                first = batch.base_offset if batch.magic >= 2 else batch.last_offset
                if first <= previous_last or batch.last_offset < first:
                    return f"{self.log.path}: batch at {at} starts at offset {first} after {previous_last}"
                if not self.can_convert_to_relative_offset(batch.last_offset):
                    return (
                        f"{self.log.path}: batch at {at} has offset {batch.last_offset} outside the segment"
                    )
                previous_last = batch.last_offset
                max_ts = max(max_ts, batch.max_timestamp)
                end = at + batch.size_in_bytes
        except (CorruptRecordError, InvalidRecordError) as exc:
            return f"{self.log.path}: invalid batch after position {end}: {exc}"
        if end != self.log.size:
            return f"{self.log.path}: ends with {self.log.size - end} bytes that are not a whole batch (from {end})"
        return previous_last + 1, max_ts

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (the whole batch containing it); returns bytes cut."""
        mapping = self.translate_offset(offset)
        self._forget_tail()
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
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
        self._forget_tail()
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
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
        self.txn_index.flush()

    def close(self) -> None:
        """Write the final time-index entry, trim the indexes, fsync and trim the ``.log``, release files."""
        if self._max_timestamp_and_offset is not None and self.time_index.is_loaded:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.shallow_offset_of_max_timestamp_so_far, skip_full_check=True
            )
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.close()

    def close_handlers(self) -> None:
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self.txn_index.close()
        self.log.close_handlers()

    def _paths(self) -> list[Path]:
        return [self.log.path, self.offset_index.path, self.time_index.path]

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the files from ``<name><old_suffix>`` to ``<name><new_suffix>`` (missing indexes too)."""

        def renamed(path: Path) -> Path:
            name = path.name
            if old_suffix and name.endswith(old_suffix):
                name = name[: -len(old_suffix)]
            return path.with_name(name + new_suffix)

        self.log.rename_to(renamed(self.log.path))
        self.offset_index.rename_to(renamed(self.offset_index.path))
        self.time_index.rename_to(renamed(self.time_index.path))
        self.txn_index.rename_to(renamed(self.txn_index.path))

    def has_suffix(self, suffix: str) -> bool:
        return all(path.name.endswith(suffix) for path in self._paths())

    def delete(self) -> None:
        """Close and remove the segment's files (its ``.txnindex`` too)."""
        self.close_handlers()
        for path in self._paths():
            path.unlink(missing_ok=True)
        self.txn_index.delete()

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, path={self.log.path})"
