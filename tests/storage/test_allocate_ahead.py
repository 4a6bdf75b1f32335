"""Blocks reserved ahead of a ``.log``'s end (``file_records`` module doc): the file's length stays its logical
size, so readers and recovery see nothing; a rolled segment gives the blocks back when it is flushed or closed; a
filesystem that cannot reserve, or a reservation that fails, leaves appends working."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from samsa.clock import ManualClock
from samsa.records import Record, build_batch
from samsa.storage import file_records
from samsa.storage.config import LogConfig
from samsa.storage.file_records import ALLOCATE_AHEAD
from samsa.storage.log import Log

BATCH = build_batch([Record(i, 1_700_000_000_000, None, b"v" * 100) for i in range(10)])


def allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def open_log(tmp_path: Path) -> Log:
    config = LogConfig.from_properties({"segment.bytes": 64 * 1024})
    return Log.open(tmp_path / "t-0", config, ManualClock(1_700_000_000_000), flush_on_roll=False)


def test_blocks_are_reserved_past_the_end_and_given_back_on_flush_after_roll_and_on_close(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(bytearray(BATCH))
    first = log.segments.active_segment.log.path
    if allocated(first) < ALLOCATE_AHEAD:
        pytest.skip("this filesystem does not reserve blocks (fallocate with FALLOC_FL_KEEP_SIZE)")
    assert os.stat(first).st_size == len(BATCH)  # the length is the data, nothing more
    while len(log.segments) == 1:
        log.append_as_leader(bytearray(BATCH))
    assert os.stat(first).st_size == log.segments.get(0).size  # type: ignore[union-attr]
    assert allocated(first) >= ALLOCATE_AHEAD  # rolled: the reserve waits for the flush (clean pages)
    log.flush(log.active_segment.base_offset)
    assert allocated(first) < 64 * 1024 + 4096  # flushed: the reserve is given back
    active = log.segments.active_segment.log.path
    assert allocated(active) >= ALLOCATE_AHEAD
    log.close()
    assert allocated(active) <= 4096 * ((os.stat(active).st_size + 4095) // 4096)
    reopened = open_log(tmp_path)
    assert reopened.log_end_offset == log.log_end_offset
    reopened.close()


def test_a_log_that_flushes_on_roll_gives_the_blocks_back_at_the_roll(tmp_path: Path) -> None:
    config = LogConfig.from_properties({"segment.bytes": 64 * 1024})
    log = Log.open(tmp_path / "t-0", config, ManualClock(1_700_000_000_000))  # a broker's log: flush on roll
    log.append_as_leader(bytearray(BATCH))
    first = log.segments.active_segment.log.path
    if allocated(first) < ALLOCATE_AHEAD:
        pytest.skip("this filesystem does not reserve blocks (fallocate with FALLOC_FL_KEEP_SIZE)")
    while len(log.segments) == 1:
        log.append_as_leader(bytearray(BATCH))
    assert allocated(first) < 64 * 1024 + 4096
    log.close()


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EOPNOTSUPP])
def test_appends_work_when_reserving_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: int
) -> None:
    calls: list[int] = []

    def refuse(fd: int, offset: int, length: int) -> int:
        calls.append(offset)
        return failure

    monkeypatch.setattr(file_records, "_fallocate", refuse)
    log = open_log(tmp_path)
    for _ in range(3):
        log.append_as_leader(bytearray(BATCH))
    assert log.log_end_offset == 30
    # a full disk is asked again at the next append; a filesystem that cannot, never again
    assert len(calls) == (3 if failure == errno.ENOSPC else 1)
    log.close()
