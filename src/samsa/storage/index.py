"""The sparse ``.index`` (offset index) and ``.timeindex`` (time index) of a segment, memory-mapped.

Both files are plain arrays of fixed-size big-endian entries with no header and no checksum:

    .index      8 bytes    int32 relativeOffset (offset - baseOffset)   int32 position (byte offset in .log)
    .timeindex  12 bytes   int64 timestamp                               int32 relativeOffset

Rules (Kafka's ``AbstractIndex`` / ``OffsetIndex`` / ``TimeIndex``):

- A new file is preallocated to ``max_index_size`` rounded down to the entry size; an existing file is mapped
  at its length and holds ``floor(length / entry size)`` entries (a crash leaves zero entries at the end, which
  recovery rebuilds).
- Files are created lazily, on first use (``is_loaded`` tells); ``rename_to`` and ``delete`` do not create them.
- ``writable=False`` (read-only callers: tools, the Spark offline reader) opens the file read-only and creates
  nothing: a missing file has no entries, and the entries end at the first slot after slot 0 whose offset is the
  base offset (the zeros of a preallocated file; Kafka's DumpLogSegments stops at the same place).
- Offset-index offsets strictly increase; time-index timestamps strictly increase and offsets never go back.
- The time index is full one slot early: the last slot is kept for the entry written on roll or close.
- Lookups return the floor entry (largest key <= target); below the first entry they return
  (baseOffset, 0) for the offset index and (-1, baseOffset) for the time index.

Concurrency contract: not thread-safe; the owning ``LogSegment`` serialises calls.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from .errors import CorruptIndexError, IndexFullError, IndexOffsetOverflowError, InvalidOffsetError

INT_MAX = 2**31 - 1
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


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


class AbstractIndex:
    """The mmap, the entry count and the search shared by both indexes (one entry format per subclass)."""

    entry_size = 8

    def __init__(self, path: Path, base_offset: int, max_index_size: int, writable: bool = True) -> None:
        if max_index_size < self.entry_size:
            raise ValueError(f"invalid max index size {max_index_size} for {path}")
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._fd = -1
        self._mmap: mmap.mmap | None = None
        self._length = 0
        self._entries = 0
        self._loaded = False

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
            os.ftruncate(self._fd, self.max_index_size - self.max_index_size % self.entry_size)
        self._loaded = True
        self._map(os.fstat(self._fd).st_size)
        self._entries = 0 if new else self._length // self.entry_size
        self._after_change()

    def _load_read_only(self) -> None:
        """Map an existing file for reading (a missing file has no entries); stop at the preallocated zeros."""
        self._loaded = True
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        self._map(os.fstat(self._fd).st_size)
        count = self._length // self.entry_size
        self._entries = next((n for n in range(1, count) if self._offset_at(n) == self.base_offset), count)
        self._after_change()

    def _map(self, length: int) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        self._length = length
        if length > 0:
            access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
            self._mmap = mmap.mmap(self._fd, length, access=access)

    def _ensure_writable(self) -> None:
        if not self.writable:
            raise PermissionError(f"the index {self.path} is open read-only")

    def _after_change(self) -> None:
        """Re-read cached values (last entry) after the entry count changed."""

    def _buf(self) -> mmap.mmap:
        self._load()
        assert self._mmap is not None
        return self._mmap

    @property
    def entries(self) -> int:
        self._load()
        return self._entries

    @property
    def max_entries(self) -> int:
        self._load()
        return self._length // self.entry_size

    @property
    def length(self) -> int:
        """The file's (mapped) length in bytes."""
        self._load()
        return self._length

    def size_in_bytes(self) -> int:
        """Bytes of valid entries."""
        return self.entries * self.entry_size

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT_MAX

    def relative_offset(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= INT_MAX:
            raise IndexOffsetOverflowError(self.path, self.base_offset, offset)
        return relative

    # --- resizing ------------------------------------------------------------------------------------------

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to whole entries; False when already that long."""
        self._ensure_writable()
        self._load()
        rounded = new_size - new_size % self.entry_size
        if rounded == self._length:
            return False
        if self._mmap is not None:
            self._mmap.flush()
        self._map(0)
        os.ftruncate(self._fd, rounded)
        self._map(rounded)
        self._entries = min(self._entries, rounded // self.entry_size)
        self._after_change()
        return True

    def trim_to_valid_size(self) -> bool:
        return self.resize(self.entries * self.entry_size)

    def reset(self) -> None:
        """No entries, and room for ``max_index_size`` bytes (start of recovery)."""
        self.truncate()
        self.resize(self.max_index_size)

    def truncate(self) -> None:
        self._truncate_to_entries(0)

    def _truncate_to_entries(self, entries: int) -> None:
        self._load()
        self._entries = entries
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

    def _key_at(self, slot: int) -> int:
        raise NotImplementedError

    def _offset_at(self, slot: int) -> int:
        raise NotImplementedError

    def _floor_slot(self, target: int, by_offset: bool = False) -> int:
        """The largest slot whose key (or offset) is <= ``target``; -1 when none."""
        value_of = self._offset_at if by_offset else self._key_at
        lo, hi = 0, self.entries - 1
        if hi < 0 or value_of(0) > target:
            return -1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if value_of(mid) > target:
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
        if self._mmap is not None and self.writable:
            self._mmap.flush()

    def close(self) -> None:
        """Trim to the valid entries (when writable) and release the file."""
        if self._loaded and self.writable:
            self.trim_to_valid_size()
        self.close_handler()

    def close_handler(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
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

    entry_size = 8

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = 10485760, writable: bool = True
    ) -> None:
        super().__init__(path, base_offset, max_index_size, writable)
        self._last_offset = base_offset

    def _after_change(self) -> None:
        self._last_offset = self._offset_at(self._entries - 1) if self._entries else self.base_offset

    def _key_at(self, slot: int) -> int:
        return self.base_offset + int(_OFFSET_ENTRY.unpack_from(self._buf(), slot * 8)[0])

    _offset_at = _key_at

    @property
    def last_offset(self) -> int:
        self._load()
        return self._last_offset

    def entry(self, n: int) -> OffsetPosition:
        self._check_slot(n)
        relative, position = _OFFSET_ENTRY.unpack_from(self._buf(), n * 8)
        return OffsetPosition(self.base_offset + relative, position)

    def append(self, offset: int, position: int) -> None:
        """Add (offset, position); offsets must increase. Raises IndexFullError, InvalidOffsetError."""
        self._ensure_writable()
        if self.is_full():
            raise IndexFullError(self.path, self.entries, self.max_entries)
        if self._entries and offset <= self._last_offset:
            raise InvalidOffsetError(self.path, offset, self._last_offset)
        # pwrite, not a store into the map: the first store into a hole of a fresh index costs milliseconds
        # (a page fault that allocates a block); the shared map sees the written page all the same
        self._buf()
        os.pwrite(self._fd, _OFFSET_ENTRY.pack(self.relative_offset(offset), position), self._entries * 8)
        self._entries += 1
        self._last_offset = offset

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

    entry_size = 12

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int = 10485760, writable: bool = True
    ) -> None:
        super().__init__(path, base_offset, max_index_size, writable)
        self._last_entry = TimestampOffset(-1, base_offset)

    def _after_change(self) -> None:
        self._last_entry = (
            self.entry(self._entries - 1) if self._entries else TimestampOffset(-1, self.base_offset)
        )

    def _key_at(self, slot: int) -> int:
        return int(_TIME_ENTRY.unpack_from(self._buf(), slot * 12)[0])

    def _offset_at(self, slot: int) -> int:
        return self.base_offset + int(_TIME_ENTRY.unpack_from(self._buf(), slot * 12)[1])

    @property
    def last_entry(self) -> TimestampOffset:
        self._load()
        return self._last_entry

    def is_full(self) -> bool:
        return self.entries >= self.max_entries - 1

    def entry(self, n: int) -> TimestampOffset:
        self._check_slot(n)
        timestamp, relative = _TIME_ENTRY.unpack_from(self._buf(), n * 12)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) when ``timestamp`` is above the last entry's.

        Raises IndexFullError (unless ``skip_full_check``), InvalidOffsetError for an offset going back, and
        ValueError for a timestamp going back.
        """
        self._ensure_writable()
        if not skip_full_check and self.is_full():
            raise IndexFullError(self.path, self.entries, self.max_entries)
        last = self.last_entry
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
            self._buf()  # pwrite rather than a store into the map, as OffsetIndex.append does
            os.pwrite(self._fd, _TIME_ENTRY.pack(timestamp, self.relative_offset(offset)), self._entries * 12)
            self._entries += 1
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
