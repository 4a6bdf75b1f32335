"""What a read returns: file slices (no bytes copied), offset metadata and ``FetchDataInfo``.

A ``FileSlice`` names ``size`` bytes at ``position`` of an open file descriptor; the fetch path hands it to
``os.sendfile``. The descriptor belongs to the segment's ``FileRecords`` and stays valid until that segment is
closed or deleted: the consumer of a slice must use it before the next operation that could delete the
segment (retention, truncation) runs on the same thread. ``read_bytes()`` copies, for tests and tools.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

UNKNOWN_OFFSET = -1


@dataclass(frozen=True, slots=True)
class FileSlice:
    """``size`` bytes from ``position`` of the file open as ``fd`` (the ``.log`` at ``path``)."""

    fd: int
    position: int
    size: int
    path: str = ""

    def read_bytes(self) -> bytes:
        """The slice's bytes (a copy)."""
        chunks: list[bytes] = []
        done = 0
        while done < self.size:
            chunk = os.pread(self.fd, self.size - done, self.position + done)
            if not chunk:
                break
            chunks.append(chunk)
            done += len(chunk)
        return b"".join(chunks)

    def fileno(self) -> int:
        return self.fd


EMPTY_SLICE = FileSlice(-1, 0, 0)


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    """An offset with the segment holding it and the byte position there (Kafka's ``LogOffsetMetadata``).

    ``segment_base_offset`` and ``relative_position_in_segment`` are -1 when only the offset is known.
    """

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = -1

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset == UNKNOWN_OFFSET and self.relative_position_in_segment == -1


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """The result of a read: where it starts, the slice of batches, and whether the first batch was cut short."""

    fetch_offset_metadata: LogOffsetMetadata
    records: FileSlice = EMPTY_SLICE
    first_entry_incomplete: bool = False

    @property
    def size(self) -> int:
        return self.records.size

    def read_bytes(self) -> bytes:
        return self.records.read_bytes() if self.records.size else b""
