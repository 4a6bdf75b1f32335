"""Read-only access to a log dir: what it reads, and that it writes, creates and changes nothing.

Two oracles for "nothing written": every file's bytes and mtime and the set of files before and after, with an audit
hook recording every write-mode open, truncate, rename, remove or writable mmap under the directory; and the same
reads on a read-only bind mount (root only; skipped elsewhere), where any write would fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from samsa.cli.dump_log import DumpOptions, dump_files
from samsa.clock import ManualClock
from samsa.records import build_batch, iter_records
from samsa.storage import Log, LogConfig
from samsa.storage.checkpoint import LOG_START_OFFSET_CHECKPOINT, offset_checkpoint
from samsa.storage.log_dir_reader import LogDirReader, SegmentFiles
from samsa.storage.topic import TopicPartition

TP = TopicPartition("events", 0)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _write_log_dir(root: Path) -> None:
    """Three partitions' worth of one: several rolled segments and an active one with preallocated indexes."""
    clock = ManualClock(start_ms=1_700_000_000_000, seed=7)
    config = LogConfig.from_properties({"segment.bytes": 4096, "index.interval.bytes": 300})
    log = Log.open(root / str(TP), config, clock)
    for n in range(80):
        log.append_as_leader(build_batch([b"v%d" % n * 20, b"w" * 30], timestamp=clock.milliseconds()))
        clock.advance(3)
    log.flush(log.log_end_offset)
    (root / "other-topic-1").mkdir()
    (root / "events-0.0123456789abcdef0123456789abcdef-delete").mkdir()
    (root / "not a partition").mkdir()
    offset_checkpoint(root / LOG_START_OFFSET_CHECKPOINT).write({TP: 17})
    # the broker's files stay open while the log is read, as a running broker's would
    _OPEN_LOGS.append(log)


_OPEN_LOGS: list[Log] = []


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


def _read_everything(root: Path) -> dict[str, Any]:
    """Every read the reader offers, plus dump-log over every segment file; what was read, for assertions."""
    reader = LogDirReader(root)
    partitions = reader.partitions()
    segments = reader.segments(TP)
    result: dict[str, Any] = {
        "partitions": partitions,
        "bases": [s.base_offset for s in segments],
        "log_start": reader.log_start_offset(TP),
        "recovery_points": reader.recovery_points(),
        "high_watermarks": reader.high_watermarks(),
        "index_entries": [],
        "offsets": [],
    }
    for segment in segments:
        with segment.indexes() as (offset_index, time_index):
            result["index_entries"].append((offset_index.entries, time_index.entries))
            offset_index.lookup(segment.base_offset + 5)
            time_index.lookup(1_700_000_000_100)
        records = segment.records()
        try:
            result["offsets"] += [r.offset for _, b in records.batches() for r in iter_records(b)]
        finally:
            records.close()
        files = [p for p in (segment.log_path, segment.index_path, segment.time_index_path) if p.exists()]
        lines: list[str] = []
        report = dump_files(files, DumpOptions(deep_iteration=True), lines.append, lines.append)
        assert not report.failed, lines
        report = dump_files(
            files[1:] or files, DumpOptions(index_sanity_only=True), lines.append, lines.append
        )
        assert not report.failed, lines
    missing = SegmentFiles(root / str(TP), 999_999)
    with missing.indexes() as (offset_index, time_index):
        assert (offset_index.entries, time_index.entries) == (0, 0)
    return result


@pytest.fixture
def log_dir(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "logs"
    root.mkdir()
    _write_log_dir(root)
    yield root
    while _OPEN_LOGS:
        _OPEN_LOGS.pop().close()


class _WriteRecorder:
    """An audit hook (it cannot be removed, so it is switched on and off) recording writes under ``root``."""

    def __init__(self) -> None:
        self.root = ""
        self.events: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.root:
            return
        if event == "open" and self._under(args[0]):
            mode, flags = args[1], args[2]
            if (isinstance(mode, str) and set(mode) & set("wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS
            ):
                self.events.append((event, args))
        elif event in (
            "os.truncate",
            "os.remove",
            "os.rename",
            "os.replace",
            "os.utime",
            "os.mkdir",
            "os.rmdir",
        ):
            if isinstance(args[0], int) or self._under(args[0]):
                self.events.append((event, args))
        elif event == "mmap.__new__" and args[2] != 1:  # 1 = mmap.ACCESS_READ
            self.events.append((event, args))

    def _under(self, path: Any) -> bool:
        return isinstance(path, (str, bytes, os.PathLike)) and os.fsdecode(path).startswith(self.root)


_RECORDER = _WriteRecorder()
sys.addaudithook(_RECORDER)


def test_reads_partitions_segments_indexes_and_checkpoints(log_dir: Path) -> None:
    read = _read_everything(log_dir)
    assert read["partitions"] == [TopicPartition("events", 0), TopicPartition("other-topic", 1)]
    assert len(read["bases"]) >= 3 and read["bases"] == sorted(read["bases"]) and read["bases"][0] == 0
    assert read["log_start"] == 17  # the checkpoint, above the first segment's base
    assert read["offsets"] == list(range(160))
    assert all(entries > 0 for entries, _ in read["index_entries"])
    # the active segment's indexes are preallocated: its entries end at the zeros
    active = SegmentFiles(log_dir / str(TP), read["bases"][-1])
    with active.indexes() as (offset_index, _):
        assert offset_index.length > offset_index.entries * 8


def test_log_start_offset_is_at_least_the_first_base(log_dir: Path) -> None:
    offset_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT).write({})
    assert LogDirReader(log_dir).log_start_offset(TP) == 0
    assert LogDirReader(log_dir).log_start_offset(TopicPartition("other-topic", 1)) == 0


def test_reading_writes_creates_and_changes_nothing(log_dir: Path) -> None:
    for path in [*log_dir.rglob("*.index"), *log_dir.rglob("*.timeindex")][:2]:
        path.unlink()  # a missing index is read as empty, never created
    before = _snapshot(log_dir)
    _RECORDER.root, _RECORDER.events = str(log_dir), []
    try:
        _read_everything(log_dir)
    finally:
        _RECORDER.root = ""
    assert _RECORDER.events == []
    assert _snapshot(log_dir) == before


def _mount_read_only(source: Path, target: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    target.mkdir()
    bind = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True, timeout=30)
    if bind.returncode != 0:
        return False
    remount = subprocess.run(["mount", "-o", "remount,ro,bind", str(target)], capture_output=True, timeout=30)
    if remount.returncode != 0:
        subprocess.run(["umount", str(target)], timeout=30, check=True)
        return False
    return True


def test_a_log_dir_on_a_read_only_mount(log_dir: Path, tmp_path: Path) -> None:
    mounted = tmp_path / "ro"
    if not _mount_read_only(log_dir, mounted):
        pytest.skip("a read-only bind mount needs root and mount(8)")
    try:
        with pytest.raises(OSError):
            (mounted / "probe").write_bytes(b"x")  # the mount is read-only indeed
        before = _snapshot(mounted)
        assert _read_everything(mounted) == _read_everything(log_dir)
        assert _snapshot(mounted) == before
    finally:
        subprocess.run(["umount", str(mounted)], timeout=30, check=True)
