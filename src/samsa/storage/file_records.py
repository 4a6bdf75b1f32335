"""``FileRecords``: a segment's ``.log`` file, a plain concatenation of record batches.

There is no header, footer or padding: batches follow one another (field layouts in ``samsa.records.batch_view``).
The logical ``size`` is tracked in memory; with ``preallocate`` the file may be longer (zeros after ``size``)
until it is trimmed on roll or close. A file can never exceed Int.MAX (2147483647) bytes.

Blocks ahead: on Linux an appended file reserves disk blocks ``ALLOCATE_AHEAD`` bytes past its end at a time
(``fallocate`` with ``FALLOC_FL_KEEP_SIZE``: the file's length does not change, so readers, recovery and Kafka's
tools see nothing), so a write fills blocks it already has instead of allocating them: about 15% less system
time per 16 KiB append on ext4 (``bench/bench_storage.py``). A reservation that fails (a full disk, a filesystem
without it) is skipped, and the write itself then reports what is wrong. A rolled segment gives its reserved
blocks back at its next flush (a broker flushes on roll) or close, after the ``fsync``, not at the roll itself:
an ``ftruncate`` on a file with dirty pages waits for ext4's journal commit, which writes those pages first (up to
65 ms per roll, 3% of the time of a 4 s loop of 16 KiB appends with 256 MiB segments, 2026-11-25; see
``docs/benchmarks.md``). Blocks reserved before a crash stay with the file until it is deleted (at most
``ALLOCATE_AHEAD``).

Concurrency contract: not thread-safe; the owning ``LogSegment`` (and its ``Log``) serialises calls. Slices
handed out stay readable while the file is open.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from samsa.records import CorruptRecordError
from samsa.records.batch_view import (
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_BATCH_OVERHEAD,
    BatchView,
    iter_batches,
)

from .errors import AppendRollbackError
from .file_slice import FileSlice

INT_MAX = 2**31 - 1
_CHUNK = 64 * 1024
_HEADER_CHUNK = 8 * 1024  # bytes a header scan reads at once: an index interval (4 KiB by default) and more
_UP_TO_MAGIC = struct.Struct(">qi4xb")  # baseOffset (a v0/v1 message: its own offset), length, magic
_LAST_OFFSET_DELTA = struct.Struct(">i")  # a v2 batch's lastOffsetDelta, at byte ``_LAST_OFFSET_DELTA_AT``
_LAST_OFFSET_DELTA_AT = 23
_V2_MIN_SIZE = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # the least size field of a v2 batch (its header alone)
ALLOCATE_AHEAD = 1 << 20
_FALLOC_FL_KEEP_SIZE = 1
_NOT_SUPPORTED = frozenset({errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL, errno.ENODEV})
_fallocate: Callable[[int, int, int], int] | None = (
    None  # (fd, offset, length) -> errno or 0, loaded on first use
)


def _keep_size_fallocate() -> Callable[[int, int, int], int]:
    """libc's ``fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length)`` returning 0 or the errno; one that always
    answers ENOSYS where there is none (not Linux, no libc). ctypes is imported here, at the first append, not at
    start-up."""
    global _fallocate
    if _fallocate is not None:
        return _fallocate

    def unsupported(fd: int, offset: int, length: int) -> int:
        return errno.ENOSYS

    _fallocate = unsupported
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            function = ctypes.CDLL(None, use_errno=True).fallocate
        except (OSError, AttributeError):
            return _fallocate
        function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        function.restype = ctypes.c_int

        def keep_size(fd: int, offset: int, length: int) -> int:
            return 0 if function(fd, _FALLOC_FL_KEEP_SIZE, offset, length) == 0 else ctypes.get_errno()

        _fallocate = keep_size
    return _fallocate


class FileRecords:
    """A ``.log`` file open for positional reads and appends (Kafka's ``FileRecords``)."""

    __slots__ = ("_fd", "_reserved", "_reserving", "_trim_on_flush", "path", "size", "writable")

    def __init__(self, path: Path, fd: int, size: int, writable: bool = True) -> None:
        self.path = path
        self._fd = fd
        # bytes of batches: a plain field, not a property (read on every append); set by this class only
        self.size = size
        self.writable = writable
        self._reserved = size  # blocks are reserved up to here (module doc)
        self._reserving = writable  # False once the filesystem said it cannot
        self._trim_on_flush = False  # reserved blocks to give back once the pages are clean (module doc)

    @classmethod
    def open(
        cls, path: Path, *, preallocate: bool = False, init_file_size: int = 0, writable: bool = True
    ) -> FileRecords:
        """Open or create ``path``. A new preallocated file gets length ``init_file_size`` and size 0.

        ``writable=False`` opens an existing file read-only (FileNotFoundError when missing) and creates nothing;
        appends, truncation and trimming are then refused and ``close`` writes nothing.
        """
        if not writable:
            fd = os.open(path, os.O_RDONLY)
            return cls(path, fd, os.fstat(fd).st_size, writable=False)
        existed = path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        length = os.fstat(fd).st_size
        if length > INT_MAX:
            os.close(fd)
            raise ValueError(f"the segment file {path} is {length} bytes, larger than {INT_MAX}")
        if not existed and preallocate and init_file_size > 0:
            os.ftruncate(fd, init_file_size)
            return cls(path, fd, 0)
        return cls(path, fd, length)

    # --- state -------------------------------------------------------------------------------------------

    @property
    def fd(self) -> int:
        return self._fd

    def file_length(self) -> int:
        return os.fstat(self._fd).st_size

    # --- writing -----------------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end (one ``pwrite``; more only on a short write); returns the position it
        starts at. All or nothing: a failed write is cut off again and raised (AppendRollbackError when even
        that fails)."""
        length = data.nbytes if type(data) is memoryview else len(data)
        size = self.size
        if size + length > INT_MAX:
            raise ValueError(
                f"appending {length} bytes to {self.path} of size {size} would exceed {INT_MAX} bytes"
            )
        if size + length > self._reserved and self._reserving:
            self._reserve_ahead(size, length)
        try:
            written = os.pwrite(self._fd, data, size)
            while written < length:
                written += os.pwrite(self._fd, memoryview(data)[written:], size + written)
        except BaseException:
            self.undo_append(size)
            raise
        self.size = size + length
        return size

    def _reserve_ahead(self, size: int, length: int) -> None:
        """Reserve blocks for ``length`` bytes at ``size`` and ``ALLOCATE_AHEAD`` more (module doc)."""
        failed = _keep_size_fallocate()(self._fd, size, length + ALLOCATE_AHEAD)
        if failed == 0:
            self._reserved = size + length + ALLOCATE_AHEAD
        elif failed in _NOT_SUPPORTED:
            self._reserving = False  # this file's filesystem cannot: never ask again
        # else (ENOSPC, EIO...): not now; the write says what is wrong, the next append asks again

    def copy_out(self, position: int, path: Path) -> int:
        """Write the bytes from ``position`` to the end into a new file at ``path`` (synced), unless they are all
        zeros (nothing to keep: a preallocated or zero-filled tail); returns the bytes written, 0 when none. A
        failed copy removes its partial file and raises."""
        size = self.size
        if position >= size or not any(self._chunks_nonzero(position, size)):
            return 0
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                for at in range(position, size, _CHUNK):
                    chunk = os.pread(self._fd, min(_CHUNK, size - at), at)
                    if os.write(fd, chunk) != len(chunk):  # a disk filling up
                        raise OSError(errno.ENOSPC, f"short write to {path}")
                os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return size - position

    def valid_batches_end(self, position: int, low: int, high: int) -> int:
        """The offset after the whole v2 batches with a matching CRC-32C and offsets in [``low``, ``high``]
        found from ``position`` on (``valid_batches``); -1 when there are none: recovery's claim on the offsets
        in bytes it cuts (``LogSegment.recover``)."""
        return max((next_offset for _, _, next_offset in self.valid_batches(position, low, high)), default=-1)

    def valid_batches(self, position: int, low: int, high: int) -> Iterator[tuple[int, int, int]]:
        """(position, bytes, next offset) of each whole v2 batch with a matching CRC-32C and offsets in [``low``,
        ``high``] from ``position`` on. Where the bytes at a position are not such a batch, the next one is looked
        for at every later byte holding the magic 2, since a damaged length hides the batches after it. Random
        bytes pass only if a CRC-32C matches by chance; the base offset, outside the CRC, must fit the range."""
        size = self.size
        while position <= size - RECORD_BATCH_OVERHEAD:
            found = self._valid_batch_at(position, low, high)
            if found is not None:
                yield position, found[1], found[0]
                position += found[1]
                continue
            # look further on, a chunk at a time, for a byte 2 where a batch's magic would be
            buf = self.read(position, _CHUNK + RECORD_BATCH_OVERHEAD)
            at = buf.find(b"\x02", MAGIC_OFFSET + 1)
            while at != -1 and at - MAGIC_OFFSET < _CHUNK:
                found = self._valid_batch_at(position + at - MAGIC_OFFSET, low, high)
                if found is not None:
                    break
                at = buf.find(b"\x02", at + 1)
            if found is None:
                position += _CHUNK
            else:
                position += at - MAGIC_OFFSET

    def _valid_batch_at(self, position: int, low: int, high: int) -> tuple[int, int] | None:
        """(next offset, bytes) of the valid v2 batch at ``position`` with offsets in [low, high], else None."""
        if position > self.size - RECORD_BATCH_OVERHEAD:
            return None
        header = BatchView(memoryview(self.read(position, RECORD_BATCH_OVERHEAD)), 0)
        length = header.size_field + LOG_OVERHEAD
        if (
            header.magic != 2
            or not RECORD_BATCH_OVERHEAD <= length <= self.size - position
            or not low <= header.base_offset <= header.last_offset <= high
        ):
            return None
        if not BatchView(memoryview(self.read(position, length)), 0).is_valid():
            return None
        return header.next_offset, length

    def _chunks_nonzero(self, position: int, end: int) -> Iterator[bool]:
        for at in range(position, end, _CHUNK):
            chunk = os.pread(self._fd, min(_CHUNK, end - at), at)
            yield chunk.count(0) != len(chunk)

    def undo_append(self, size: int) -> None:
        """Cut the file back to ``size`` after a failed or undone append (bytes a failed write left beyond the
        logical size included). Raises AppendRollbackError when the file cannot be cut."""
        try:
            self.truncate_to(size)
        except OSError as exc:
            raise AppendRollbackError(self.path, size, exc) from exc

    def truncate_to(self, target: int) -> int:
        """Cut the file at byte ``target`` (no OS call when the size is already ``target``); returns bytes cut."""
        if target > self.size or target < 0:
            raise ValueError(f"cannot truncate {self.path} of size {self.size} to {target} bytes")
        if target < self.size or self.file_length() > target:
            os.ftruncate(self._fd, target)
        removed = self.size - target
        self.size = target
        return removed

    def trim(self) -> None:
        """Drop preallocated bytes and reserved blocks beyond the logical size."""
        if self._reserved > self.size or self.file_length() != self.size:
            os.ftruncate(self._fd, self.size)
        self._reserved = self.size
        self._trim_on_flush = False

    def on_become_inactive(self) -> None:
        """The segment rolled: a preallocated file is cut to its size now, as Kafka does on roll; blocks
        reserved past the end are given back at the next ``flush`` or ``close`` (module doc)."""
        if self.file_length() != self.size:
            self.trim()
        else:
            self._trim_on_flush = self._reserved > self.size

    def flush(self) -> None:
        os.fsync(self._fd)
        if self._trim_on_flush:
            self.trim()

    def close(self) -> None:
        if self._fd >= 0 and not self.writable:
            self.close_handlers()
        if self._fd >= 0:
            self.flush()
            self.trim()
            os.close(self._fd)
            self._fd = -1

    def close_handlers(self) -> None:
        """Close without flushing or trimming (used before deleting the file)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.close_handlers()
        self.path.unlink(missing_ok=True)

    # --- reading -----------------------------------------------------------------------------------------

    def read(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position`` (a copy, bounded by the logical size)."""
        end = min(self.size, position + size)
        if end <= position:
            return b""
        return FileSlice(self._fd, position, end - position).read_bytes()

    def slice(self, position: int, size: int) -> FileSlice:
        """A zero-copy view of [position, position + size), capped at the current size."""
        if position < 0 or position > self.size or size < 0:
            raise ValueError(
                f"invalid slice position {position} size {size} of {self.path} (size {self.size})"
            )
        end = min(self.size, position + size)
        return FileSlice(self._fd, position, end - position, str(self.path))

    def batches(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchView]]:
        """(file position, batch) for each whole batch in [start, end), as Kafka iterates a file (1.12).

        Views are over a read buffer, valid until the next item. Stops at a partial trailing batch; a size
        below the legacy minimum raises CorruptRecordError.
        """
        limit = self.size if end is None else min(end, self.size)
        position = start
        while position < limit - HEADER_SIZE_UP_TO_MAGIC:
            buf = self.read(position, min(_CHUNK, limit - position))
            consumed = 0
            try:
                for view in iter_batches(buf):
                    yield position + view.position, view
                    consumed = view.end
            except CorruptRecordError as exc:  # its positions count from the start of ``buf``
                raise CorruptRecordError(f"{exc} (counted from position {position} of {self.path})") from None
            if consumed == 0:
                header = BatchView(memoryview(buf), 0)
                needed = header.size_field + LOG_OVERHEAD
                if len(buf) >= limit - position or needed <= len(buf):
                    return  # a partial trailing batch
                big = self.read(position, needed)
                if len(big) < needed:
                    return
                yield position, BatchView(memoryview(big), 0)
                consumed = needed
            position += consumed

    def headers(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchView]]:
        """Like ``batches`` but for header fields only (offsets, timestamps, size, epoch): for offset and
        timestamp scans. The views' record bytes may be absent or cut short: read ``batch_at`` for a whole batch.
        """
        for position, chunk, at, _, _, _ in self._header_fields(start, end):
            yield position, BatchView(chunk, at)

    def search_for_offset(self, offset: int, start: int) -> tuple[int, int, int] | None:
        """The first batch from ``start`` whose last offset is >= ``offset``: (its last offset, its position, its
        size in bytes); None when none is (Kafka's ``searchForOffsetWithSize``). Every fetch comes here, from
        its index entry, so this is ``_header_fields``'s loop written out, with plain fields and no view:
        ``translate_offset`` of 1 KiB batches 1.75 times as fast as with a 61-byte read and a view per batch,
        16 KiB batches (an index entry each) 0.98-1.08 times (best of 11 rounds of 5,000 random offsets,
        2026-11-27)."""
        limit = self.size
        position = start
        chunk, chunk_at = memoryview(b""), start
        while position < limit - HEADER_SIZE_UP_TO_MAGIC:
            at = position - chunk_at
            if at + RECORD_BATCH_OVERHEAD > len(chunk):
                chunk, chunk_at, at = self._header_chunk(position, limit), position, 0
            base, size, magic = _UP_TO_MAGIC.unpack_from(chunk, at)
            if (size < _V2_MIN_SIZE or position > limit - LOG_OVERHEAD - size) and not self._whole(
                position, limit, size, magic
            ):
                return None
            last = (
                base + _LAST_OFFSET_DELTA.unpack_from(chunk, at + _LAST_OFFSET_DELTA_AT)[0]
                if magic >= 2
                else base
            )
            if last >= offset:
                return last, position, size + LOG_OVERHEAD
            position += size + LOG_OVERHEAD
        return None

    def _header_fields(
        self, start: int, end: int | None
    ) -> Iterator[tuple[int, memoryview, int, int, int, int]]:
        """Per batch from ``start`` up to ``end`` (default: the size): its position, a buffer holding its header
        from byte ``at`` on, its offset field, its size field and its magic; stops before a partial trailing
        batch, raises CorruptRecordError for a size no batch can have. The file is read ``_HEADER_CHUNK`` bytes
        at a time, so the few batches a scan passes over cost one ``pread``, not one each."""
        limit = self.size if end is None else min(end, self.size)
        position = start
        chunk, chunk_at = memoryview(b""), start  # file bytes from ``chunk_at`` on
        while position < limit - HEADER_SIZE_UP_TO_MAGIC:
            at = position - chunk_at
            if at + RECORD_BATCH_OVERHEAD > len(chunk):
                chunk, chunk_at, at = self._header_chunk(position, limit), position, 0
            base, size, magic = _UP_TO_MAGIC.unpack_from(chunk, at)
            if (size < _V2_MIN_SIZE or position > limit - LOG_OVERHEAD - size) and not self._whole(
                position, limit, size, magic
            ):
                return
            yield position, chunk, at, base, size, magic
            position += size + LOG_OVERHEAD

    def _header_chunk(self, position: int, limit: int) -> memoryview:
        """The bytes from ``position`` on, ``_HEADER_CHUNK`` of them or up to ``limit``, a header at least."""
        return memoryview(
            os.pread(self._fd, max(RECORD_BATCH_OVERHEAD, min(_HEADER_CHUNK, limit - position)), position)
        )

    def _whole(self, position: int, limit: int, size: int, magic: int) -> bool:
        """Whether the batch at ``position`` with this size field and magic ends by ``limit`` (False: a partial
        trailing batch); raises CorruptRecordError for a size no batch can have. Asked only where the size is
        below a v2 batch's header or reaches past ``limit``: any other batch is whole."""
        if size < LEGACY_MIN_SIZE:
            raise CorruptRecordError(
                f"batch at position {position} of {self.path} has size {size}, smaller than the minimum "
                f"record overhead ({LEGACY_MIN_SIZE})"
            )
        if position > limit - LOG_OVERHEAD - size:
            return False
        if magic >= 2 and size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"v2 batch at position {position} of {self.path} is {size + LOG_OVERHEAD} bytes, smaller "
                f"than its {RECORD_BATCH_OVERHEAD}-byte header"
            )
        return True

    def batch_at(self, position: int) -> BatchView:
        """The whole batch starting at ``position`` (a copy)."""
        header = BatchView(memoryview(self.read(position, LOG_OVERHEAD)), 0)
        return BatchView(memoryview(self.read(position, header.size_field + LOG_OVERHEAD)), 0)
