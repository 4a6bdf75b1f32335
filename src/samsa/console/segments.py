"""A partition's segments on disk, read-only: what the protocol cannot tell (the seeds' picture of a log).

For each segment of ``<log dir>/<topic>-<partition>/`` (through ``samsa.storage.log_dir_reader``, which opens
nothing for writing):

    field                 from
    base_offset           the 20-digit file name
    next_base_offset      the next segment's base offset (None for the active segment)
    size                  the ``.log``'s length
    index_entries         ``.index`` entries (8 bytes each: relative offset int32, position int32, big-endian)
    time_index_entries    ``.timeindex`` entries (12 bytes each: timestamp int64, relative offset int32)
    first_timestamp       the first batch header's base timestamp (v2 header: 61 bytes, big-endian)
    max_timestamp         the largest batch max timestamp seen, or the last ``.timeindex`` entry's
    batches, last_offset  from the batch headers, when the segment has at most ``SCAN_BATCHES`` of them

Only batch headers are read (one ``pread`` of 61 bytes per batch), never records. A segment with more batches
takes its time range from its time index alone (``scanned`` is then false).

Concurrency contract: plain functions doing file I/O; the console calls them in a worker thread, never on its
event loop. A file that vanishes while it is read (retention, a roll) gives an ``error`` for that segment only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from samsa.records.batch_view import read_v2_header
from samsa.storage.errors import StorageError
from samsa.storage.log_dir_reader import LogDirReader, SegmentFiles
from samsa.storage.topic import TopicPartition

__all__ = ["SCAN_BATCHES", "partition_segments"]

SCAN_BATCHES = 20_000
V2_HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base offset int64 + batch length int32


def partition_segments(log_dirs: list[tuple[str, Path]], topic: str, partition: int) -> list[dict[str, Any]]:
    """One entry per log dir (labelled by its owner) holding the partition: its segments, or an error."""
    tp = TopicPartition(topic, partition)
    found: list[dict[str, Any]] = []
    for label, path in log_dirs:
        if not (path / str(tp)).is_dir():
            continue
        try:
            reader = LogDirReader(path)
            segments = reader.segments(tp)
            start = reader.log_start_offset(tp, segments)
        except (OSError, StorageError) as exc:
            found.append({"owner": label, "log_dir": str(path), "error": str(exc), "segments": []})
            continue
        found.append(
            {
                "owner": label,
                "log_dir": str(path),
                "log_start_offset": start,
                "error": None,
                "segments": [_segment(s) for s in segments],
            }
        )
    return found


def _segment(segment: SegmentFiles) -> dict[str, Any]:
    row: dict[str, Any] = {
        "base_offset": segment.base_offset,
        "next_base_offset": segment.next_base_offset,
        "size": segment.size,
        "error": None,
    }
    try:
        with segment.indexes() as (offset_index, time_index):
            row["index_entries"] = offset_index.entries
            row["time_index_entries"] = time_index.entries
            indexed_max = time_index.last_entry.timestamp if time_index.entries else None
        row.update(_scan(segment.log_path, segment.size))
    except (OSError, StorageError, ValueError) as exc:
        row["error"] = str(exc)
        return row
    if row["max_timestamp"] is None or (indexed_max is not None and indexed_max > row["max_timestamp"]):
        row["max_timestamp"] = indexed_max
    return row


def _scan(path: Path, size: int) -> dict[str, Any]:
    """Walk the batch headers of a ``.log`` (up to ``SCAN_BATCHES``)."""
    first_ts: int | None = None
    max_ts: int | None = None
    last_offset: int | None = None
    batches = 0
    position = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while position + V2_HEADER_SIZE <= size and batches < SCAN_BATCHES:
            header = read_v2_header(os.pread(fd, V2_HEADER_SIZE, position))
            if header is None or header.size <= 0:
                break
            if header.magic >= 2:
                first_ts = header.base_timestamp if first_ts is None else first_ts
                max_ts = header.max_timestamp if max_ts is None else max(max_ts, header.max_timestamp)
                last_offset = header.base_offset + header.last_offset_delta
            else:
                last_offset = header.base_offset  # a legacy message: its offset is the (last) offset
            batches += 1
            position += LOG_OVERHEAD + header.size
    finally:
        os.close(fd)
    scanned = position >= size or batches < SCAN_BATCHES
    return {
        "first_timestamp": first_ts,
        "max_timestamp": max_ts,
        "batches": batches if scanned else None,
        "last_offset": last_offset if scanned else None,
        "scanned": scanned,
    }
