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

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, BinaryIO

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

from samsa.records import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, BatchView, iter_batches
from samsa.records.batch_view import CONTROL_MASK
from samsa.storage.errors import StorageError
from samsa.storage.log_dir_reader import LogDirReader, SegmentFiles
from samsa.storage.topic import InvalidPartitionDirError, TopicPartition

from .arrow import RecordBatchBuilder, spark_ddl
from .options import SamsaOptionError, Subscription, _bool, _int, parse_subscription

DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
READ_CHUNK_BYTES = 8 * 1024 * 1024
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class SegmentFile:
    """One ``.log`` of a partition: offsets in [base_offset, next_base_offset) (None: the active segment).

    ``log_start_offset`` is the partition's (records below it were deleted and are not returned).
    """

    topic: str
    partition: int
    path: str
    base_offset: int
    next_base_offset: int | None
    size: int
    log_start_offset: int = 0


def scan_log_dir(root: Path, subscription: Subscription | None) -> list[SegmentFile]:
    """Every segment of every (selected) partition directory under ``root``, in (topic, partition, base) order.

    A partition directory given instead of its log directory (``<logdir>/clicks-0``) is read as that one partition.
    """
    reader, partitions = open_log_dir(root)
    start_offsets = reader.log_start_offsets()
    segments: list[SegmentFile] = []
    for tp in partitions:
        if subscription is not None:
            if subscription.assigned and (tp.topic, tp.partition) not in subscription.assigned:
                continue
            if not subscription.matches(tp.topic):
                continue
        files = reader.segments(tp)
        log_start = reader.log_start_offset(tp, files, start_offsets)
        segments.extend(
            SegmentFile(
                tp.topic,
                tp.partition,
                str(f.log_path),
                f.base_offset,
                f.next_base_offset,
                f.size,
                log_start,
            )
            for f in files
        )
    return segments


def open_log_dir(root: Path) -> tuple[LogDirReader, list[TopicPartition]]:
    """The reader of log directory ``root`` and its partitions; when ``root`` holds no partition directory and is
    named as one, the reader of its parent and that one partition."""
    try:
        reader = LogDirReader(root)
    except StorageError:
        raise SamsaOptionError(f"option 'path': {str(root)!r} is not a directory") from None
    partitions = reader.partitions()
    if partitions:
        return reader, partitions
    name = root.resolve().name
    try:
        tp = reader.partition_dir(name)
    except InvalidPartitionDirError:
        return reader, []
    if str(tp) != name:  # e.g. "clicks-01": not a directory the broker would have written
        return reader, []
    return LogDirReader(root.resolve().parent), [tp]


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
    """The slices of one segment that can hold rows within ``bounds`` ([] when the indexes rule it out).

    Offsets below the partition's log start offset are never returned, whatever the filters say.
    """
    lo = max(bounds.min_offset, segment.log_start_offset)
    if bounds.partitions is not None and segment.partition not in bounds.partitions:
        return []
    if segment.next_base_offset is not None and segment.next_base_offset <= lo:
        return []
    if bounds.max_offset is not None and segment.base_offset >= bounds.max_offset:
        return []
    files = SegmentFiles.at(Path(segment.path))
    with files.indexes() as (offset_index, time_index):
        start = 0
        if bounds.min_timestamp is not None:
            last = time_index.last_entry
            if (
                segment.next_base_offset is not None
                and time_index.entries
                and last.timestamp < bounds.min_timestamp
            ):
                return []  # an inactive segment's last time-index entry is its largest timestamp
            floor = time_index.lookup(bounds.min_timestamp)
            if floor.timestamp >= 0:
                start = offset_index.lookup(floor.offset).position
        if lo > segment.base_offset:
            start = max(start, offset_index.lookup(lo).position)
        cuts = [start]
        if segment.size - start > split_bytes:
            for n in range(offset_index.entries):
                position = offset_index.entry(n).position
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
            lo,
            bounds.max_offset,
            bounds.min_timestamp,
        )
        for begin, end in zip(cuts, ends, strict=True)
    ]


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
        for view in _batches_in_slice(f, part):
            action = _select(view, lo, hi, min_ts)
            if action is _Action.STOP:
                break
            if action is _Action.TAKE:
                yield from builder.add_range(view, lo, hi)
    if len(builder):
        yield builder.flush()


def _batches_in_slice(f: BinaryIO, part: SegmentSlice) -> Iterator[BatchView]:
    """The whole batches of ``f`` from ``start_position`` up to ``end_position``, read in chunks.

    Each view is valid until the next one is asked for. A partial trailing batch at the end of the file (the active
    segment being written) ends the scan.
    """
    f.seek(part.start_position)
    position = part.start_position
    pending = b""
    while True:
        limit = (
            READ_CHUNK_BYTES
            if part.end_position is None
            else min(READ_CHUNK_BYTES, part.end_position - position)
        )
        chunk = f.read(limit) if limit > 0 else b""
        position += len(chunk)
        if not chunk:
            return
        buf = pending + chunk if pending else chunk
        consumed = 0
        for view in iter_batches(buf):
            consumed = view.end
            yield view
        if consumed == 0 and len(buf) >= LOG_OVERHEAD:
            needed = BatchView(memoryview(buf), 0).size_in_bytes
            if needed > len(buf) and part.end_position is None and position >= os.fstat(f.fileno()).st_size:
                return
        pending = bytes(buf[consumed:])


class _Action(Enum):
    SKIP = "skip"
    STOP = "stop"
    TAKE = "take"


def _select(view: BatchView, lo: int, hi: int | None, min_ts: int | None) -> _Action:
    """Skip a batch (control, below ``lo``, older than ``min_ts``), stop at one at or past ``hi``, or take it."""
    if view.magic == 2 and view.size_in_bytes >= RECORD_BATCH_OVERHEAD:  # the v2 header read once
        header = view.v2_header()
        base, max_ts = header.base_offset, header.max_timestamp
        control, next_offset = bool(header.attributes & CONTROL_MASK), base + header.last_offset_delta + 1
    else:
        base, next_offset, max_ts = view.base_offset, view.next_offset, view.max_timestamp
        control = view.is_control
        if view.magic == 0:
            max_ts = LONG_MAX  # no timestamps: never pruned by time
    if control or next_offset <= lo:
        return _Action.SKIP
    if hi is not None and base >= hi:
        return _Action.STOP
    if min_ts is not None and max_ts < min_ts:
        return _Action.SKIP
    return _Action.TAKE


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
        if not isinstance(partition, SegmentSlice):  # PySpark's InputPartition(None) when partitions() is []
            return iter(())
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
