"""Read-only access to a log directory, for callers that are not the broker (``dump-log``, ``samsa-segments``).

What it reads (layout in ARCHITECTURE.md, "On disk"; each format in the module that owns it):

    item                              named / parsed by                  read with
    <topic>-<partition>/              ``topic.parse_dir_name`` (live)    ``LogDirReader.partitions``
    <base>.log / .index / .timeindex  ``segment.offset_from_file_name``  ``FileRecords`` / ``OffsetIndex`` /
                                                                         ``TimeIndex``, all ``writable=False``
    log-start-offset-checkpoint       ``checkpoint.offset_checkpoint``   ``LogDirReader.log_start_offsets``
    recovery-point-offset-checkpoint, replication-offset-checkpoint (the same format)

Nothing here opens a file for writing, creates, renames or deletes one: a log directory on a read-only mount can be
read, and a running broker's files are left exactly as they are (its active segment may grow while it is read, and
a partial trailing batch is then ignored by the batch iterators). Segments with a suffix after the extension
(``.deleted``, ``.cleaned``, ``.swap``) are not part of the log and are not listed.

The log start offset of a partition is the larger of its checkpoint entry and its first segment's base offset, as
the broker computes it on load: records below it were removed by retention or DeleteRecords and are never served.

Concurrency contract: stateless apart from the directory path; index and file handles are closed by the caller
(``SegmentFiles.indexes`` is a context manager).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offsets_or_empty,
)
from .errors import StorageError
from .file_records import FileRecords
from .index import OffsetIndex, TimeIndex
from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, offset_from_file_name, segment_file
from .topic import DirKind, InvalidPartitionDirError, TopicPartition, parse_dir_name


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """One segment of a partition: offsets in [base_offset, next_base_offset) (None: the last, active segment).

    ``size`` is the ``.log``'s length when the directory was listed.
    """

    directory: Path
    base_offset: int
    next_base_offset: int | None = None
    size: int = 0

    @classmethod
    def at(cls, path: Path) -> SegmentFiles:
        """The segment a file (``.log``, ``.index``, ``.timeindex``, ...) belongs to; ValueError if none."""
        base = offset_from_file_name(path.name)
        if base is None:
            raise ValueError(f"{path.name!r} is not a segment file name (<20-digit base offset>.<extension>)")
        return cls(path.parent, base)

    @property
    def log_path(self) -> Path:
        return segment_file(self.directory, self.base_offset, LOG_SUFFIX)

    @property
    def index_path(self) -> Path:
        return segment_file(self.directory, self.base_offset, INDEX_SUFFIX)

    @property
    def time_index_path(self) -> Path:
        return segment_file(self.directory, self.base_offset, TIME_INDEX_SUFFIX)

    def records(self) -> FileRecords:
        """The ``.log`` opened read-only (the caller closes it)."""
        return FileRecords.open(self.log_path, writable=False)

    @contextmanager
    def indexes(self) -> Iterator[tuple[OffsetIndex, TimeIndex]]:
        """The ``.index`` and ``.timeindex`` opened read-only (a missing file has no entries), closed on exit."""
        offset_index = OffsetIndex(self.index_path, self.base_offset, writable=False)
        time_index = TimeIndex(self.time_index_path, self.base_offset, writable=False)
        try:
            yield offset_index, time_index
        finally:
            offset_index.close()
            time_index.close()


class LogDirReader:
    """A log directory seen read-only (module doc). Raises StorageError when ``path`` is not a directory."""

    def __init__(self, path: Path) -> None:
        if not path.is_dir():
            raise StorageError(f"{path} is not a log directory")
        self.path = path

    def partitions(self) -> list[TopicPartition]:
        """The live partition directories, sorted; other names (and ``-delete``/``-future``/``-stray``) skipped."""
        found: list[TopicPartition] = []
        for child in self.path.iterdir():
            try:
                parsed = parse_dir_name(child.name)
            except InvalidPartitionDirError:
                continue
            if parsed.kind is DirKind.LIVE and child.is_dir():
                found.append(parsed.tp)
        return sorted(found)

    def partition_path(self, tp: TopicPartition) -> Path:
        return self.path / str(tp)

    def partition_dir(self, name: str) -> TopicPartition:
        """The partition a live directory name names (InvalidPartitionDirError when it names none)."""
        parsed = parse_dir_name(name)
        if parsed.kind is not DirKind.LIVE:
            raise InvalidPartitionDirError(name, "not a live partition directory")
        return parsed.tp

    def segments(self, tp: TopicPartition) -> list[SegmentFiles]:
        """The partition's segments in base-offset order."""
        directory = self.partition_path(tp)
        bases = sorted(
            base
            for name in (p.name for p in directory.iterdir())
            if name.endswith(LOG_SUFFIX) and name.count(".") == 1
            if (base := offset_from_file_name(name)) is not None
        )
        nexts: list[int | None] = [*bases[1:], None]
        return [
            SegmentFiles(directory, base, following, segment_file(directory, base, LOG_SUFFIX).stat().st_size)
            for base, following in zip(bases, nexts, strict=False)  # no segments: no None either
        ]

    def log_start_offsets(self) -> dict[TopicPartition, int]:
        """``log-start-offset-checkpoint`` (empty when missing or unreadable, as the broker treats it)."""
        return read_offsets_or_empty(self.path / LOG_START_OFFSET_CHECKPOINT)

    def recovery_points(self) -> dict[TopicPartition, int]:
        return read_offsets_or_empty(self.path / RECOVERY_POINT_CHECKPOINT)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return read_offsets_or_empty(self.path / REPLICATION_OFFSET_CHECKPOINT)

    def log_start_offset(
        self,
        tp: TopicPartition,
        segments: list[SegmentFiles] | None = None,
        checkpointed: Mapping[TopicPartition, int] | None = None,
    ) -> int:
        """The first offset the broker would serve: the checkpoint's entry or the first segment's base.

        ``segments`` and ``checkpointed`` (``log_start_offsets()``) save re-reading them when already at hand.
        """
        listed = self.segments(tp) if segments is None else segments
        offsets = self.log_start_offsets() if checkpointed is None else checkpointed
        first_base = listed[0].base_offset if listed else 0
        return max(offsets.get(tp, 0), first_base)
