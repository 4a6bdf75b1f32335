"""Damage found after a clean shutdown: the marker says "no recovery needed", the files say otherwise.

Each test closes a real log cleanly, damages its files the way disks and operators do (a cut tail, a fake batch
header, a stale or garbage index, a truncated time index), reopens it as after a clean shutdown and reads it the
way a consumer does (``Log.read`` from offset 0 on, through the indexes). The oracle: every complete batch before
the damage is read, nothing is skipped, the log continues after every offset it ever held (offsets lost with a cut
tail are never handed out again), a new append gets the next one and is readable, and the fix is logged.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
from pathlib import Path

import pytest
from storage_helpers import decode_all, small_config, v2

from samsa.clock import ManualClock
from samsa.records import iter_batches
from samsa.storage.log import FetchIsolation, Log

CONFIG = small_config(segment_bytes=2400, index_interval_bytes=200, segment_index_bytes=4096)


def build(directory: Path, batches: int = 60) -> None:
    log = Log.open(directory, CONFIG, ManualClock(), flush_on_roll=False)
    rng = random.Random(11)
    for i in range(batches):
        n = rng.randint(1, 4)
        log.append_as_leader(
            v2(list(range(n)), [5000 + i] * n, [os.urandom(rng.randint(0, 60)) for _ in range(n)])
        )
    log.close()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("clean") / "t-0"
    build(directory)
    return directory


def fresh(pristine: Path, tmp_path: Path) -> tuple[Path, list[Path], list[tuple[int, bytes | None]]]:
    """A copy of the clean log to damage: its directory, its ``.log`` files, and every record it holds."""
    target = tmp_path / "t-0"
    shutil.copytree(pristine, target)
    logs = sorted(target.glob("*.log"))
    return target, logs, records_of(logs)


def reopen(directory: Path) -> Log:
    return Log.open(directory, CONFIG, ManualClock(), had_clean_shutdown=True, flush_on_roll=False)


def consume(log: Log) -> list[tuple[int, bytes | None]]:
    """Every record from offset 0, as a consumer fetches them (index lookups, one fetch after another), up to
    the log end or to offsets that hold nothing (lost with a cut tail: a consumer there waits for new records)."""
    out: list[tuple[int, bytes | None]] = []
    offset = 0
    while offset < log.log_end_offset:
        data = log.read(offset, 700, FetchIsolation.LOG_END, min_one_message=True).records.read_bytes()
        records = [r for r in decode_all(data) if r.offset >= offset]
        if not records:
            break
        out += [(r.offset, r.value) for r in records]
        offset = records[-1].offset + 1
    return out


def records_of(paths: list[Path]) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for path in paths for r in decode_all(path.read_bytes())]


def assert_serves(log: Log, expected: list[tuple[int, bytes | None]], held_end: int) -> None:
    """``log`` serves exactly ``expected``; its end is ``held_end``, the end of the log before the damage (no
    offset it held is handed out again), and a new append lands there, readable."""
    assert consume(log) == expected
    assert log.log_end_offset == held_end
    info = log.append_as_leader(v2([0, 1], [9000, 9001], [b"new-a", b"new-b"]))
    assert info.first_offset == held_end
    assert consume(log) == [*expected, (held_end, b"new-a"), (held_end + 1, b"new-b")]
    log.close()


def end_of(records: list[tuple[int, bytes | None]]) -> int:
    return records[-1][0] + 1 if records else 0


def test_every_segment_is_whole_after_a_plain_clean_reopen(pristine: Path, tmp_path: Path) -> None:
    directory, logs, expected = fresh(pristine, tmp_path)
    assert len(logs) >= 3
    log = reopen(directory)
    assert log.load_report.segments_recovered == 0
    assert_serves(log, expected, end_of(expected))


def test_a_tail_cut_anywhere_keeps_every_whole_batch_before_it(
    pristine: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    last = sorted(pristine.glob("*.log"))[-1]
    content = last.read_bytes()
    boundaries = [b.position for b in iter_batches(content)] + [len(content)]
    cuts = sorted({max(0, min(len(content) - 1, b + d)) for b in boundaries for d in (-13, -1, 1, 30)})
    for i, cut in enumerate(cuts):
        directory = tmp_path / f"cut-{i}"
        shutil.copytree(pristine, directory)
        logs = sorted(directory.glob("*.log"))
        logs[-1].write_bytes(content[:cut])
        whole = b"".join(bytes(b.raw()) for b in iter_batches(content) if b.end <= cut)
        expected = records_of(logs[:-1]) + [(r.offset, r.value) for r in decode_all(whole)]
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            log = reopen(directory)
        if len(whole) != cut:  # a cut inside a batch is found and fixed, and said
            assert any("recovered" in m and logs[-1].name in m for m in caplog.messages), cut
        held_end = end_of(records_of(sorted(pristine.glob("*.log"))))
        if end_of(expected) < held_end:  # offsets lost with the tail: said, and never handed out again
            lost = f"offsets {end_of(expected)} to {held_end - 1} were handed out before"
            assert any(lost in m for m in caplog.messages), (cut, caplog.messages)
        assert_serves(log, expected, held_end)


@pytest.mark.parametrize("size_field", [49, 500, 10_000])
def test_a_fake_batch_header_appended_is_cut_off(
    pristine: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, size_field: int
) -> None:
    directory, logs, expected = fresh(pristine, tmp_path)
    fake = (expected[-1][0] + 1).to_bytes(8, "big") + size_field.to_bytes(4, "big") + bytes(4) + b"\x02"
    with open(logs[-1], "ab") as f:
        f.write(fake + os.urandom(size_field - 5 if size_field < 100 else 44))
    with caplog.at_level(logging.WARNING):
        log = reopen(directory)
    assert any("recovered" in m for m in caplog.messages)
    assert_serves(log, expected, end_of(expected))


def test_a_stale_index_on_the_active_segment_is_rebuilt(
    pristine: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory, _logs, expected = fresh(pristine, tmp_path)
    indexes = sorted(directory.glob("*.index"))
    # an index from another log: entries that point at wrong positions for the offsets they claim
    entries = [(rel + 3, pos + 17) for rel, pos in _entries(indexes[0])][:6]
    indexes[-1].write_bytes(b"".join(r.to_bytes(4, "big") + p.to_bytes(4, "big") for r, p in entries))
    with caplog.at_level(logging.WARNING):
        log = reopen(directory)
    assert log.load_report.segments_recovered == 1
    assert any("recovered" in m and indexes[-1].name in m for m in caplog.messages)
    assert_serves(log, expected, end_of(expected))


def test_a_garbage_index_on_an_older_segment_is_rebuilt_when_first_read(
    pristine: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory, _logs, expected = fresh(pristine, tmp_path)
    first_index = sorted(directory.glob("*.index"))[0]
    first_index.write_bytes(os.urandom(first_index.stat().st_size or 64))
    with caplog.at_level(logging.WARNING):
        log = reopen(directory)
        assert_serves(log, expected, end_of(expected))
    assert any("first read" in m and "00000000000000000000.log" in m for m in caplog.messages)


def test_a_truncated_time_index_is_rebuilt(
    pristine: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory, logs, expected = fresh(pristine, tmp_path)
    time_index = sorted(directory.glob("*.timeindex"))[-1]
    time_index.write_bytes(time_index.read_bytes()[:-12])
    with caplog.at_level(logging.WARNING):
        log = reopen(directory)
    assert any("recovered" in m and time_index.name in m for m in caplog.messages)
    segment = log.active_segment
    assert segment.max_timestamp_so_far == max(b.max_timestamp for b in iter_batches(logs[-1].read_bytes()))
    found = log.fetch_offset_by_timestamp(5059)
    assert found is not None and found.offset == _first_offset_with_timestamp(logs, 5059)
    assert_serves(log, expected, end_of(expected))


def _entries(index: Path) -> list[tuple[int, int]]:
    data = index.read_bytes()
    return [
        (int.from_bytes(data[i : i + 4], "big"), int.from_bytes(data[i + 4 : i + 8], "big"))
        for i in range(0, len(data) - len(data) % 8, 8)
    ]


def _first_offset_with_timestamp(logs: list[Path], timestamp: int) -> int:
    return next(r.offset for path in logs for r in decode_all(path.read_bytes()) if r.timestamp >= timestamp)


def test_a_time_index_that_goes_back_is_rebuilt(
    pristine: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory, logs, expected = fresh(pristine, tmp_path)
    time_index = sorted(directory.glob("*.timeindex"))[-1]
    data = time_index.read_bytes()
    assert len(data) >= 24
    time_index.write_bytes(data[12:24] + data[:12] + data[24:])  # the first two entries swapped
    with caplog.at_level(logging.WARNING):
        log = reopen(directory)
    assert any("goes back from" in m and time_index.name in m for m in caplog.messages)
    found = log.fetch_offset_by_timestamp(5059)
    assert found is not None and found.offset == _first_offset_with_timestamp(logs, 5059)
    assert_serves(log, expected, end_of(expected))
