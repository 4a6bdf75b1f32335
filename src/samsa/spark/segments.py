"""``format("samsa-segments")``: read a Samsa (or Kafka) log directory with no broker running.

    spark.read.format("samsa-segments").load("/var/lib/samsa/data")
         .where("partition = 1 AND timestamp >= '2026-11-22 10:00:00'")

One Spark partition per segment, and segments larger than ``maxSplitBytes`` are cut at ``.index`` entries (batch
boundaries) into several. Filters on ``partition``, ``offset`` and ``timestamp`` are pushed down (when the Spark conf
``spark.sql.python.filterPushdown.enabled`` is true; ``samsa.spark.register`` sets it; without it the source
still reads, unpruned) and answered from file names,
``.index`` and ``.timeindex`` alone: a segment outside them is never opened, and inside one the read starts at the byte
position the indexes give. Spark still evaluates every filter, so pruning only ever saves work.

Options: ``path`` (the log dir; required), ``subscribe`` / ``subscribePattern`` / ``assign`` (optional, like the
broker source), ``includeHeaders``, ``maxSplitBytes`` (default 64 MiB), ``pushFilters`` (default true; false for a
session without the pushdown conf), ``traceFile`` (diagnostics: each ``read`` appends the ``.log`` path it opens).

The directory is read as found: the active segment may grow while a query runs, and a partial trailing batch is
ignored. Control batches are skipped; aborted transactional records are returned (read_uncommitted).
"""

from __future__ import annotations

import bisect
import os
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from samsa.records import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, BatchView, iter_batches, iter_records
from samsa.records.view import CONTROL_MASK

from .arrow import RecordBatchBuilder, spark_ddl
from .options import SamsaOptionError, Subscription, _bool, _int, parse_subscription

DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
READ_CHUNK_BYTES = 8 * 1024 * 1024
_PARTITION_DIR = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>\d+)$")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_PREFIX = struct.Struct(">qiiB")  # base offset, size, leader epoch (v2) or crc, magic
# from byte 21 of a v2 batch: attributes, lastOffsetDelta, (baseTimestamp skipped), maxTimestamp
_V2_FIELDS = struct.Struct(">hi8xq")


def read_offset_index(path: Path) -> list[tuple[int, int]]:
    """The valid ``(relative offset, position)`` entries of an ``.index`` (preallocated zeros dropped)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out: list[tuple[int, int]] = []
    for rel, pos in _OFFSET_ENTRY.iter_unpack(data[: len(data) - len(data) % 8]):
        if (out and rel <= out[-1][0]) or (not out and rel == 0 and pos == 0):
            break
        out.append((rel, pos))
    return out


def read_time_index(path: Path) -> list[tuple[int, int]]:
    """The valid ``(timestamp, relative offset)`` entries of a ``.timeindex``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out: list[tuple[int, int]] = []
    for ts, rel in _TIME_ENTRY.iter_unpack(data[: len(data) - len(data) % 12]):
        if (out and ts <= out[-1][0]) or (not out and ts == 0 and rel == 0):
            break
        out.append((ts, rel))
    return out


@dataclass(frozen=True)
class SegmentFile:
    """One ``.log`` of a partition: offsets in [base_offset, next_base_offset) (None: the active segment)."""

    topic: str
    partition: int
    path: str
    base_offset: int
    next_base_offset: int | None
    size: int


def scan_log_dir(root: Path, subscription: Subscription | None) -> list[SegmentFile]:
    """Every segment of every (selected) partition directory under ``root``, in (topic, partition, base) order."""
    if not root.is_dir():
        raise SamsaOptionError(f"option 'path': {str(root)!r} is not a directory")
    segments: list[SegmentFile] = []
    for child in sorted(root.iterdir()):
        match = _PARTITION_DIR.match(child.name)
        if match is None or not child.is_dir():
            continue
        topic, partition = match["topic"], int(match["partition"])
        if subscription is not None:
            if subscription.assigned and (topic, partition) not in subscription.assigned:
                continue
            if not subscription.matches(topic):
                continue
        bases = sorted(
            int(p.name.split(".")[0]) for p in child.glob("*.log") if p.name.split(".")[0].isdigit()
        )
        for i, base in enumerate(bases):
            path = child / f"{base:020d}.log"
            segments.append(
                SegmentFile(
                    topic,
                    partition,
                    str(path),
                    base,
                    bases[i + 1] if i + 1 < len(bases) else None,
                    path.stat().st_size,
                )
            )
    return segments


@dataclass
class Bounds:
    """What the pushed filters allow: partitions, offsets in [min_offset, max_offset), timestamps >= min_ts (ms)."""

    partitions: set[int] | None = None
    min_offset: int = 0
    max_offset: int | None = None
    min_timestamp: int | None = None

    def allow_partitions(self, values: Sequence[Any]) -> None:
        allowed = {int(v) for v in values if v is not None}
        self.partitions = allowed if self.partitions is None else self.partitions & allowed

    def raise_min_offset(self, value: int) -> None:
        self.min_offset = max(self.min_offset, value)

    def lower_max_offset(self, value: int) -> None:
        self.max_offset = value if self.max_offset is None else min(self.max_offset, value)

    def raise_min_timestamp(self, value: int) -> None:
        self.min_timestamp = value if self.min_timestamp is None else max(self.min_timestamp, value)


def _millis(value: Any) -> int | None:
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000) - 1  # floor, and one ms of slack for float rounding
    return None


def apply_filter(bounds: Bounds, f: Filter) -> bool:
    """Narrow ``bounds`` with ``f``; True when ``f`` was usable for pruning."""
    column: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
    name = column[0] if len(column) == 1 else None
    value: Any = getattr(f, "value", None)
    if name == "partition":
        if isinstance(f, (EqualTo, EqualNullSafe)) and value is not None:
            bounds.allow_partitions([value])
            return True
        if isinstance(f, In) and value is not None:
            bounds.allow_partitions(list(value))
            return True
    elif name == "offset" and isinstance(value, int):
        if isinstance(f, (EqualTo, EqualNullSafe)):
            bounds.raise_min_offset(value)
            bounds.lower_max_offset(value + 1)
        elif isinstance(f, GreaterThanOrEqual):
            bounds.raise_min_offset(value)
        elif isinstance(f, GreaterThan):
            bounds.raise_min_offset(value + 1)
        elif isinstance(f, LessThan):
            bounds.lower_max_offset(value)
        elif isinstance(f, LessThanOrEqual):
            bounds.lower_max_offset(value + 1)
        else:
            return False
        return True
    elif name == "timestamp" and isinstance(f, (GreaterThan, GreaterThanOrEqual, EqualTo)):
        millis = _millis(value)
        if millis is not None:
            bounds.raise_min_timestamp(millis)
            return True
    return False


@dataclass(frozen=True)
class SegmentSlice(InputPartition):  # type: ignore[misc]
    """One Spark task: batches of ``path`` starting in [start_position, end_position), filtered by offset and time."""

    topic: str
    partition: int
    path: str
    start_position: int
    end_position: int | None
    min_offset: int
    max_offset: int | None
    min_timestamp: int | None


def plan_segment(segment: SegmentFile, bounds: Bounds, split_bytes: int) -> list[SegmentSlice]:
    """The slices of one segment that can hold rows within ``bounds`` ([] when the indexes rule it out)."""
    if bounds.partitions is not None and segment.partition not in bounds.partitions:
        return []
    if segment.next_base_offset is not None and segment.next_base_offset <= bounds.min_offset:
        return []
    if bounds.max_offset is not None and segment.base_offset >= bounds.max_offset:
        return []
    stem = segment.path[: -len(".log")]
    base = segment.base_offset
    start = 0
    if bounds.min_timestamp is not None:
        times = read_time_index(Path(stem + ".timeindex"))
        if segment.next_base_offset is not None and times and times[-1][0] < bounds.min_timestamp:
            return []  # an inactive segment's last time-index entry is its largest timestamp
        floor = bisect.bisect_right([t for t, _ in times], bounds.min_timestamp) - 1
        if floor >= 0:
            start = max(start, _position_of(Path(stem + ".index"), base, base + times[floor][1]))
    if bounds.min_offset > base:
        start = max(start, _position_of(Path(stem + ".index"), base, bounds.min_offset))
    cuts = [start]
    if segment.size - start > split_bytes:
        for _, position in read_offset_index(Path(stem + ".index")):
            if position - cuts[-1] >= split_bytes:
                cuts.append(position)
    ends: list[int | None] = [*cuts[1:], None]
    return [
        SegmentSlice(
            segment.topic,
            segment.partition,
            segment.path,
            begin,
            end,
            bounds.min_offset,
            bounds.max_offset,
            bounds.min_timestamp,
        )
        for begin, end in zip(cuts, ends, strict=True)
    ]


def _position_of(index_path: Path, base: int, offset: int) -> int:
    """The byte position of the last indexed batch at or below ``offset`` (0 if none): a safe place to start."""
    entries = read_offset_index(index_path)
    slot = bisect.bisect_right([rel for rel, _ in entries], offset - base) - 1
    return entries[slot][1] if slot >= 0 else 0


def read_slice(
    part: SegmentSlice, include_headers: bool, trace_file: str | None = None
) -> Iterator[pa.RecordBatch]:
    """The rows of one slice as RecordBatches, reading the ``.log`` in chunks from ``start_position``."""
    if trace_file:
        with open(trace_file, "a", encoding="utf-8") as trace:
            trace.write(f"{part.path}\t{part.start_position}\n")
    builder = RecordBatchBuilder(part.topic, part.partition, include_headers)
    lo, hi, min_ts = part.min_offset, part.max_offset, part.min_timestamp
    with open(part.path, "rb") as f:
        f.seek(part.start_position)
        position = part.start_position
        pending = b""
        done = False
        while not done:
            limit = (
                READ_CHUNK_BYTES
                if part.end_position is None
                else min(READ_CHUNK_BYTES, part.end_position - position)
            )
            chunk = f.read(limit) if limit > 0 else b""
            position += len(chunk)
            if not chunk:
                break
            buf = pending + chunk if pending else chunk
            consumed = 0
            for view in iter_batches(buf):
                at = view.position
                base, size, _, magic = _PREFIX.unpack_from(buf, at)
                consumed = at + size + LOG_OVERHEAD
                if magic == 2 and size >= RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:  # the header read once
                    attributes, last_delta, max_ts = _V2_FIELDS.unpack_from(buf, at + 21)
                    next_offset = base + last_delta + 1
                    if attributes & CONTROL_MASK or next_offset <= lo:
                        continue
                    if hi is not None and base >= hi:
                        done = True
                        break
                    if min_ts is not None and max_ts < min_ts:
                        continue
                    if lo <= base and (hi is None or next_offset <= hi):
                        yield from builder.add_view(view)
                    else:
                        yield from _add(builder, view, lo, hi)
                    continue
                if view.magic >= 2 and view.is_control:
                    continue
                if view.next_offset <= lo:
                    continue
                if hi is not None and view.base_offset >= hi:
                    done = True
                    break
                if min_ts is not None and view.magic >= 1 and view.max_timestamp < min_ts:
                    continue
                yield from _add(builder, view, lo, hi)
            if not done and consumed == 0 and len(buf) >= LOG_OVERHEAD:
                size = struct.unpack_from(">i", buf, 8)[0] + LOG_OVERHEAD
                if size > len(buf) and part.end_position is None and position >= os.fstat(f.fileno()).st_size:
                    break  # a partial trailing batch (the active segment being written)
            pending = bytes(buf[consumed:])
    if len(builder):
        yield builder.flush()


def _add(builder: RecordBatchBuilder, view: BatchView, lo: int, hi: int | None) -> Iterator[pa.RecordBatch]:
    """Append one batch's records in [lo, hi): column-wise when the whole batch is wanted."""
    if lo <= view.base_offset and (hi is None or view.next_offset <= hi):
        yield from builder.add_view(view)
        return
    records = iter_records(view, verify_crc=False)
    yield from builder.add(
        (r for r in records if lo <= r.offset and (hi is None or r.offset < hi)), view.timestamp_type
    )


class SegmentsReader(DataSourceReader):  # type: ignore[misc]
    """Plans slices on the driver; ``read`` runs in executors on the pickled reader."""

    def __init__(self, options: dict[str, str], include_headers: bool) -> None:
        path = options.get("path")
        if not path:
            raise SamsaOptionError("samsa-segments needs a log directory: .load(path) or option 'path'")
        self.root = str(path)
        self.subscription = parse_subscription(options, required=False)
        self.include_headers = include_headers
        self.split_bytes = _int(options, "maxSplitBytes") or DEFAULT_SPLIT_BYTES
        self.trace_file = options.get("tracefile")
        self.bounds = Bounds()

    def partitions(self) -> list[SegmentSlice]:
        slices: list[SegmentSlice] = []
        for segment in scan_log_dir(Path(self.root), self.subscription):
            slices.extend(plan_segment(segment, self.bounds, self.split_bytes))
        return slices

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SegmentSlice)
        return read_slice(partition, self.include_headers, self.trace_file)


class PushdownSegmentsReader(SegmentsReader):
    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        for f in filters:
            apply_filter(self.bounds, f)
            yield f  # Spark evaluates every filter again: the indexes only prune


class SegmentsDataSource(DataSource):  # type: ignore[misc]
    """``format("samsa-segments")`` (module doc)."""

    @classmethod
    def name(cls) -> str:
        return "samsa-segments"

    def _include_headers(self) -> bool:
        return _bool(self.options, "includeHeaders", False)

    def schema(self) -> str:
        return spark_ddl(self._include_headers())

    def reader(self, schema: StructType) -> DataSourceReader:
        pushdown = _bool(self.options, "pushFilters", True) and _planner_pushdown_enabled()
        cls = PushdownSegmentsReader if pushdown else SegmentsReader
        return cls(dict(self.options), self._include_headers())


def _planner_pushdown_enabled(max_depth: int = 4) -> bool:
    """Whether the Spark session that plans this read lets a reader push filters.

    With ``spark.sql.python.filterPushdown.enabled`` on, PySpark plans the read in its filter-pushdown worker, which
    calls ``pushFilters``. With it off, its planning worker (``pyspark.sql.worker.plan_data_source_read``) refuses a
    reader that implements ``pushFilters`` and tells the data source nothing: the flag is the local
    ``enable_pushdown`` of the function that calls ``reader()``. Read it there, so the source found by name works in
    any session and prunes when pushdown is on; a caller without the flag may push.
    """
    import sys
    from types import FrameType

    frame: FrameType | None = sys._getframe(1)
    for _ in range(max_depth):
        if frame is None:
            break
        flag = frame.f_locals.get("enable_pushdown")
        if isinstance(flag, bool):
            return flag
        frame = frame.f_back
    return True
