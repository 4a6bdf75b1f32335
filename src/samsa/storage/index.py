"""The sparse ``.index`` (offset index) and ``.timeindex`` (time index) of a segment.

Both files are plain arrays of fixed-size big-endian entries with no header and no checksum:

    .index      8 bytes    int32 relativeOffset (offset - baseOffset)   int32 position (byte offset in .log)
    .timeindex  12 bytes   int64 timestamp                               int32 relativeOffset

Rules (Kafka's ``AbstractIndex`` / ``OffsetIndex`` / ``TimeIndex``):

- A new file is sized to ``max_index_size`` rounded down to the entry size (sparse, as Kafka's ``setLength``);
  an existing file holds ``floor(length / entry size)`` entries (a crash leaves zero entries at the end, which
  recovery rebuilds).
- Files are created lazily, on first use (``is_loaded`` tells); ``rename_to`` and ``delete`` do not create them.
- ``writable=False`` (read-only callers: tools, the Spark offline reader) opens the file read-only and creates
  nothing: a missing file has no entries, and the entries end at the first slot after slot 0 whose offset is the
  base offset (the zeros of a preallocated file; Kafka's DumpLogSegments stops at the same place).
- Offset-index offsets strictly increase; time-index timestamps strictly increase and offsets never go back.
- The time index is full one slot early: the last slot is kept for the entry written on roll or close.
- Lookups return the floor entry (largest key <= target); below the first entry they return
  (baseOffset, 0) for the offset index and (-1, baseOffset) for the time index.

Memory, not a mapping: Kafka maps index files; Samsa keeps the valid entries in a ``bytearray`` (read from the
file when a lookup first needs them). Nothing ever touches the file through a mapping, so a full disk or a sparse
(preallocated) region can only ever surface as an ``OSError`` from a write, never as SIGBUS.

New entries are kept in memory at once and written behind: the first at once (a preallocated file's zero slot 0
would otherwise read as an entry at the base offset), then every ``WRITE_BEHIND`` (32) entries with one ``pwrite``
of them all, and always at a flush, a resize, a roll (``trim_to_valid_size``) and a close, before anything that
needs the file (the clean-shutdown marker, the start-up check, a roll's final entry) can look. One ``pwrite`` per entry cost
a leader about 1.1 us per 16 KiB append (7% of it; ``bench/bench_storage.py``, 2026-11-25). So other readers of a
live segment's file (Kafka's dump tool, samsa-segments) may miss its last 31 entries: an index is a sparse hint,
they find the same batches from an earlier entry, and samsa-segments prunes by the last time-index entry of
inactive segments only, which a roll has written. A crash loses at most those entries, and recovery rebuilds the
active segment's indexes anyway. A write that fails (a full disk) drops the entry that triggered it and raises (its
append is undone); the earlier entries stay pending for the next write. ``WRITE_BEHIND = 1`` writes each entry
before it is kept. Recovery builds a whole index in memory (``write=False``) and writes it with one ``pwrite``
(``persist``).

Concurrency contract: not thread-safe; the owning ``LogSegment`` serialises calls.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from .errors import CorruptIndexError, IndexFullError, IndexOffsetOverflowError, InvalidOffsetError

INT_MAX = 2**31 - 1
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class OffsetPosition:
    """An offset-index entry: ``offset`` (absolute) starts at byte ``position`` of the ``.log``."""

    offset: int
    position: int


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A time-index entry: every record up to ``offset`` has a timestamp <= ``timestamp``."""

    timestamp: int
    offset: int


WRITE_BEHIND = 32
"""Entries kept in memory before they are written to the file (module doc)."""


class AbstractIndex:
    """The entries, their count and the search shared by both indexes (one entry format per subclass)."""

    __slots__ = (
        "_data",
        "_entries",
        "_fd",
        "_length",
        "_loaded",
        "_persisted",
        "base_offset",
        "max_index_size",
        "path",
        "writable",
    )

    entry_size = 8

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = 10485760, writable: bool = True
    ) -> None:
        if max_index_size < self.entry_size:
            raise ValueError(f"invalid max index size {max_index_size} for {path}")
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._fd = -1
        self._data: bytearray | None = None  # the valid entries, read on first need
        self._persisted = 0  # how many of them the file holds (the rest wait for ``persist``)
        self._length = 0
        self._entries = 0
        self._loaded = False
        self._after_change()  # the subclass's last-entry cache, empty until the file is loaded

    # --- lifecycle -----------------------------------------------------------------------------------------

    @property
    def is_loaded(self) -> bool:
        return self._loaded

    def _load(self) -> None:
        if self._loaded:
            return
        if not self.writable:
            self._load_read_only()
            return
        new = not self.path.exists()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if new:
            self._length = self.max_index_size - self.max_index_size % self.entry_size
            os.ftruncate(self._fd, self._length)
            self._data = bytearray()
        else:
            self._length = os.fstat(self._fd).st_size
            self._data = None
        self._loaded = True
        self._entries = self._persisted = 0 if new else self._length // self.entry_size
        self._after_change()

    def _buf(self) -> bytearray:
        """The valid entries, read from the file the first time they are needed."""
        self._load()
        data = self._data
        if data is None:
            wanted = self._entries * self.entry_size
            data = self._data = bytearray(_pread_exactly(self._fd, wanted, 0))
        return data

    def _entry_bytes(self, slot: int) -> bytes | bytearray:
        """One entry's bytes, without reading the whole file when the entries are not in memory yet."""
        size = self.entry_size
        if self._data is not None:
            return self._data[slot * size : (slot + 1) * size]
        return _pread_exactly(self._fd, size, slot * size)

    def _load_read_only(self) -> None:
        """Read an existing file (a missing one has no entries), opened read-only; the entries stop at the
        preallocated zeros, as Kafka's dump tool reads them."""
        self._loaded = True
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._data = bytearray()
            return
        self._length = os.fstat(self._fd).st_size
        count = self._length // self.entry_size
        self._entries = count
        self._data = None
        self._entries = next((n for n in range(1, count) if self._offset_at(n) == self.base_offset), count)
        self._persisted = self._entries
        if self._data is not None:
            del self._data[self._entries * self.entry_size :]
        self._after_change()

    def _ensure_writable(self) -> None:
        if not self.writable:
            raise PermissionError(f"the index {self.path} is open read-only")

    def _after_change(self) -> None:
        """Re-read cached values (last entry) after the entry count changed."""

    @property
    def entries(self) -> int:
        if not self._loaded:  # tested here rather than in _load: one call less on the append path
            self._load()
        return self._entries

    @property
    def max_entries(self) -> int:
        self._load()
        return self._length // self.entry_size

    @property
    def length(self) -> int:
        """The file's length in bytes."""
        self._load()
        return self._length

    def size_in_bytes(self) -> int:
        """Bytes of valid entries."""
        return self.entries * self.entry_size

    def is_full(self) -> bool:
        if not self._loaded:
            self._load()
        return self._entries >= self._length // self.entry_size

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT_MAX

    def relative_offset(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= INT_MAX:
            raise IndexOffsetOverflowError(self.path, self.base_offset, offset)
        return relative

    def _add_entry(self, entry: bytes, write: bool) -> None:
        """Add one packed entry, kept in memory at once; with ``write`` the pending entries are written when
        ``WRITE_BEHIND`` of them wait (a failed write drops this entry again and raises, so the index is as it
        was). Without ``write`` it waits for ``persist``."""
        data = self._data
        if data is None:
            data = self._buf()
        entries = self._entries
        data += entry
        self._entries = entries + 1
        if write and (entries + 1 - self._persisted >= WRITE_BEHIND or self._persisted == 0):
            self._persist_or_drop_last()

    def _persist_or_drop_last(self) -> None:
        """``persist`` after adding one entry; if it fails, that entry is dropped again (the index as it was)
        and the error raised."""
        try:
            self.persist()
        except BaseException:
            del self._buf()[-self.entry_size :]
            self._entries -= 1
            raise

    def persist(self) -> None:
        """Write the entries added with ``write=False`` since the last ``persist`` to their slots, with one
        ``pwrite`` (recovery builds a whole index that way)."""
        if self._persisted >= self._entries:
            return
        size = self.entry_size
        pending = self._buf()[self._persisted * size : self._entries * size]
        written = os.pwrite(self._fd, pending, self._persisted * size)
        if written != len(pending):
            raise OSError(f"short write of the index {self.path}: {written} of {len(pending)} bytes")
        self._persisted = self._entries

    # --- resizing ------------------------------------------------------------------------------------------

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to whole entries (the pending ones written first);
        False when already that long."""
        self._ensure_writable()
        self._load()
        self.persist()
        rounded = new_size - new_size % self.entry_size
        if rounded == self._length:
            return False
        os.ftruncate(self._fd, rounded)
        self._length = rounded
        if self._entries > rounded // self.entry_size:
            self._truncate_to_entries(rounded // self.entry_size)
        return True

    def trim_to_valid_size(self) -> bool:
        self._load()
        self.persist()
        return self.resize(self._entries * self.entry_size)

    def reset(self) -> None:
        """No entries, and room for ``max_index_size`` bytes (start of recovery)."""
        self.truncate()
        self.resize(self.max_index_size)

    def truncate(self) -> None:
        self._truncate_to_entries(0)

    def _truncate_to_entries(self, entries: int) -> None:
        self._load()
        self._entries = entries
        self._persisted = min(self._persisted, entries)
        if entries == 0:
            self._data = bytearray()
        elif self._data is not None:
            del self._data[entries * self.entry_size :]
        self._after_change()

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        slot = self._floor_slot(offset, by_offset=True)
        if slot < 0:
            keep = 0
        elif self._offset_at(slot) == offset:
            keep = slot
        else:
            keep = slot + 1
        if keep < self.entries:
            self._truncate_to_entries(keep)

    # --- search --------------------------------------------------------------------------------------------

    # where a slot's key and offset are: (field, its byte in the entry, whether it is relative to the base offset)
    _key_field: tuple[struct.Struct, int, bool]
    _offset_field: tuple[struct.Struct, int, bool]

    def _offset_at(self, slot: int) -> int:
        """The offset entry ``slot`` names (relative in the file)."""
        field, at, _ = self._offset_field
        return self.base_offset + int(field.unpack_from(self._buf(), slot * self.entry_size + at)[0])

    def _floor_slot(self, target: int, by_offset: bool = False) -> int:
        """The largest slot whose key (or offset) is <= ``target``; -1 when none. Every fetch and offset lookup
        comes here: the probes unpack the field straight from the entries, no call per probe (a third of
        the time of a one-batch read in ``bench/bench_storage.py`` was calls here, 2026-11-26)."""
        entries = self.entries
        if not entries:
            return -1
        field, at, relative = self._offset_field if by_offset else self._key_field
        if relative:
            target -= self.base_offset
        unpack, size, buf = field.unpack_from, self.entry_size, self._buf()
        if unpack(buf, at)[0] > target:
            return -1
        lo, hi = 0, entries - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if unpack(buf, mid * size + at)[0] > target:
                hi = mid - 1
            else:
                lo = mid
        return lo

    def _check_slot(self, n: int) -> None:
        if not 0 <= n < self.entries:
            raise IndexError(
                f"attempt to fetch entry {n} from the index {self.path} of {self.entries} entries"
            )

    # --- files ---------------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the pending entries and fsync the file (nothing for a read-only index)."""
        if self._fd >= 0 and self.writable:
            self.persist()
            os.fsync(self._fd)

    def close(self) -> None:
        """Trim to the valid entries (when writable) and release the file."""
        if self._loaded and self.writable:
            self.trim_to_valid_size()
        self.close_handler()

    def close_handler(self) -> None:
        self._data = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._loaded = False

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete_if_exists(self) -> bool:
        self.close_handler()
        existed = self.path.exists()
        self.path.unlink(missing_ok=True)
        return existed


class OffsetIndex(AbstractIndex):
    """Maps offsets to ``.log`` positions, one entry per ``index.interval.bytes`` of appended data.

    Format: 8-byte entries, int32 relative offset then int32 position, big-endian (module doc).
    Not thread-safe; the owning ``LogSegment`` serialises calls.
    """

    __slots__ = ("_last_offset",)
    entry_size = 8
    _last_offset: int  # of the last entry (the base offset when there is none)

    def _after_change(self) -> None:
        if self._entries:
            relative = _OFFSET_ENTRY.unpack(self._entry_bytes(self._entries - 1))[0]
            self._last_offset = self.base_offset + int(relative)
        else:
            self._last_offset = self.base_offset

    _key_field = _offset_field = (_INT32, 0, True)

    @property
    def last_offset(self) -> int:
        self._load()
        return self._last_offset

    def entry(self, n: int) -> OffsetPosition:
        self._check_slot(n)
        relative, position = _OFFSET_ENTRY.unpack_from(self._buf(), n * 8)
        return OffsetPosition(self.base_offset + relative, position)

    def offset_positions(self) -> list[tuple[int, int]]:
        """Every entry as (offset, position), in slot order, with one unpack over them all (a whole-index check
        at start-up reads them so, without an ``OffsetPosition`` per entry)."""
        base = self.base_offset
        return [(base + relative, position) for relative, position in _OFFSET_ENTRY.iter_unpack(self._buf())]

    def append(self, offset: int, position: int, write: bool = True) -> None:
        """Add (offset, position); offsets must increase. Raises IndexFullError, InvalidOffsetError, and
        OSError when the write fails (the index is then unchanged). ``write=False``: see ``persist``.

        Every append of a leader at 16 KiB a batch comes here, so the checks are one test of plain fields and
        the entry is added in place; ``_check_append`` names what is wrong."""
        entries = self._entries
        relative = offset - self.base_offset
        data = self._data
        if (
            data is None
            or entries >= self._length >> 3  # full (or not loaded: no length yet)
            or (entries and offset <= self._last_offset)
            or not 0 <= relative <= INT_MAX
            or not self.writable
        ):
            self._check_append(offset)  # raises, or loads what was not loaded yet
            self._add_entry(_OFFSET_ENTRY.pack(relative, position), write)
            self._last_offset = offset
            return
        data += _OFFSET_ENTRY.pack(relative, position)
        self._entries = entries + 1
        if write and (entries + 1 - self._persisted >= WRITE_BEHIND or not self._persisted):
            self._persist_or_drop_last()
        self._last_offset = offset

    def _check_append(self, offset: int) -> None:
        """Load the entries if they are not in memory yet, then raise what forbids appending ``offset``."""
        self._ensure_writable()
        self._buf()
        if self._entries >= self._length // self.entry_size:
            raise IndexFullError(self.path, self.entries, self.max_entries)
        if self._entries and offset <= self._last_offset:
            raise InvalidOffsetError(self.path, offset, self._last_offset)
        self.relative_offset(offset)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The floor entry for ``target_offset``, or (baseOffset, 0)."""
        slot = self._floor_slot(target_offset)
        return OffsetPosition(self.base_offset, 0) if slot < 0 else self.entry(slot)

    def fetch_upper_bound_offset(self, start: OffsetPosition, fetch_size: int) -> OffsetPosition | None:
        """The first entry whose position is >= ``start.position + fetch_size``, if any."""
        target = start.position + fetch_size
        lo, hi = 0, self.entries
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.entry(mid).position < target:
                lo = mid + 1
            else:
                hi = mid
        return self.entry(lo) if lo < self.entries else None

    def sanity_check(self) -> None:
        """Raise CorruptIndexError for a last offset below the base or a length not a multiple of 8."""
        if self.entries and self._last_offset < self.base_offset:
            raise CorruptIndexError(
                self.path,
                f"last offset {self._last_offset} is below the base offset {self.base_offset} "
                f"({self.entries} entries)",
            )
        if self._length % self.entry_size:
            raise CorruptIndexError(
                self.path, f"length {self._length} is not a multiple of {self.entry_size}"
            )


class TimeIndex(AbstractIndex):
    """Maps timestamps to offsets: entry (T, O) says every record up to O has a timestamp <= T.

    Format: 12-byte entries, int64 timestamp then int32 relative offset, big-endian (module doc).
    Not thread-safe; the owning ``LogSegment`` serialises calls.
    """

    __slots__ = ("_last_entry",)
    entry_size = 12
    _last_entry: TimestampOffset  # (-1, base offset) when there is none

    def _after_change(self) -> None:
        if self._entries:
            timestamp, relative = _TIME_ENTRY.unpack(self._entry_bytes(self._entries - 1))
            self._last_entry = TimestampOffset(timestamp, self.base_offset + relative)
        else:
            self._last_entry = TimestampOffset(-1, self.base_offset)

    _key_field = (_INT64, 0, False)
    _offset_field = (_INT32, 8, True)

    @property
    def last_entry(self) -> TimestampOffset:
        if not self._loaded:
            self._load()
        return self._last_entry

    def is_full(self) -> bool:
        if not self._loaded:
            self._load()
        return self._entries >= self._length // self.entry_size - 1

    def entry(self, n: int) -> TimestampOffset:
        self._check_slot(n)
        timestamp, relative = _TIME_ENTRY.unpack_from(self._buf(), n * 12)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def timestamp_offsets(self) -> list[tuple[int, int]]:
        """Every entry as (timestamp, offset), in slot order, with one unpack over them all."""
        base = self.base_offset
        return [(timestamp, base + relative) for timestamp, relative in _TIME_ENTRY.iter_unpack(self._buf())]

    def maybe_append(
        self, timestamp: int, offset: int, skip_full_check: bool = False, write: bool = True
    ) -> None:
        """Add (timestamp, offset) when ``timestamp`` is above the last entry's.

        Raises IndexFullError (unless ``skip_full_check``), InvalidOffsetError for an offset going back,
        ValueError for a timestamp going back, OSError when the write fails (the index is then unchanged).
        ``write=False``: see ``persist``.
        """
        entries = self._entries
        data = self._data
        last = self._last_entry
        relative = offset - self.base_offset
        if (
            data is not None
            and entries
            and timestamp > last.timestamp
            and offset >= last.offset
            and relative <= INT_MAX
            and entries < self._length // 12 - 1
            and self.writable
        ):  # the append path's common case (a later timestamp, room): one test of plain fields, added in place
            data += _TIME_ENTRY.pack(timestamp, relative)
            self._entries = entries + 1
            if write and (entries + 1 - self._persisted >= WRITE_BEHIND or not self._persisted):
                self._persist_or_drop_last()
            self._last_entry = TimestampOffset(timestamp, offset)
            return
        if not self.writable:
            self._ensure_writable()
        if not self._loaded:
            self._load()
        if not skip_full_check and self._entries >= self._length // self.entry_size - 1:  # full
            raise IndexFullError(self.path, self.entries, self.max_entries)
        last = self._last_entry
        if self._entries and offset < last.offset:
            raise InvalidOffsetError(self.path, offset, last.offset)
        if self._entries and timestamp < last.timestamp:
            raise ValueError(
                f"attempt to append timestamp {timestamp} to the time index {self.path}, below its last "
                f"timestamp {last.timestamp}"
            )
        if timestamp > last.timestamp:
            if self._entries >= self.max_entries:
                raise IndexFullError(self.path, self.entries, self.max_entries)
            self._add_entry(_TIME_ENTRY.pack(timestamp, self.relative_offset(offset)), write)
            self._last_entry = TimestampOffset(timestamp, offset)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The floor entry for ``target_timestamp``, or (-1, baseOffset)."""
        slot = self._floor_slot(target_timestamp)
        return TimestampOffset(-1, self.base_offset) if slot < 0 else self.entry(slot)

    def sanity_check(self) -> None:
        """Raise CorruptIndexError for timestamps or offsets out of order or a length not a multiple of 12."""
        if self.entries:
            first, last = self.entry(0), self._last_entry
            if last.timestamp < first.timestamp:
                raise CorruptIndexError(
                    self.path, f"last timestamp {last.timestamp} is below the first {first.timestamp}"
                )
            if last.offset < self.base_offset:
                raise CorruptIndexError(
                    self.path, f"last offset {last.offset} is below the base offset {self.base_offset}"
                )
        if self._length % self.entry_size:
            raise CorruptIndexError(
                self.path, f"length {self._length} is not a multiple of {self.entry_size}"
            )


def _pread_exactly(fd: int, size: int, position: int) -> bytes:
    """``size`` bytes from ``position``; zeros where the file is shorter (an index read past its end)."""
    chunks: list[bytes] = []
    got = 0
    while got < size:
        chunk = os.pread(fd, size - got, position + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    data = b"".join(chunks)
    return data if got == size else data + bytes(size - got)
