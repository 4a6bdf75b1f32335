"""The leader's one-batch append (``Log._append_lone_batch``, taken for a writable request buffer) against the
general path (taken for ``bytes``): the same appends, rolls, truncations and reopens on two logs must leave them
the same to the byte, in memory and on disk. Small segments and indexes make every roll rule fire: size, a
full offset or time index, time (record timestamps that jump past ``segment.ms``), and batches whose timestamps
go up, stay or go back, or carry none.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from storage_helpers import log_records, small_config

from samsa.clock import ManualClock
from samsa.records import Record, build_batch
from samsa.storage.log import Log

CONFIG = small_config(
    segment_bytes=2400,
    index_interval_bytes=90,
    segment_index_bytes=96,  # 12 offset entries, 8 time entries: the indexes fill before the segment
    **{"segment.ms": 10_000, "segment.jitter.ms": 0},
)
TINY_INDEXES = small_config(
    segment_bytes=2400, index_interval_bytes=90, segment_index_bytes=48, **{"segment.ms": 10_000}
)
START_MS = 1_700_000_000_000


def _state(log: Log) -> list[tuple[object, ...]]:
    """What a log holds: per segment its bytes, both indexes' entries and largest timestamp; then its ends."""
    out: list[tuple[object, ...]] = []
    for segment in log.segments:
        offsets = segment.offset_index
        times = segment.time_index
        out.append(
            (
                segment.base_offset,
                bytes(segment.log.read(0, segment.size)),
                [offsets.entry(i) for i in range(offsets.entries)],
                [times.entry(i) for i in range(times.entries)],
                segment.max_timestamp_so_far,
                segment.shallow_offset_of_max_timestamp_so_far,
            )
        )
    out.append((log.log_end_offset, log.log_start_offset))
    return out


def _files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.is_file()}


class FastAppends:
    """Counts the appends ``Log._append_lone_batch`` made, and the leader appends offered it (a ``bytearray``
    buffer): a test of the fast path must see it taken."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.offered = 0
        real = Log._append_lone_batch
        real_append = Log.append_as_leader

        def counted(log: Log, *args: Any) -> Any:
            self.count += 1
            return real(log, *args)

        def offered(log: Log, records: bytes | bytearray, *args: Any, **kwargs: Any) -> Any:
            self.offered += isinstance(records, bytearray)
            return real_append(log, records, *args, **kwargs)

        monkeypatch.setattr(Log, "_append_lone_batch", counted)
        monkeypatch.setattr(Log, "append_as_leader", offered)


class FastAndGeneralAppends(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="fast-path-"))
        self.clock = ManualClock(start_ms=START_MS, seed=5)
        self.fast = Log.open(self.root / "fast-0", CONFIG, self.clock)
        self.general = Log.open(self.root / "general-0", CONFIG, self.clock)
        self.timestamp = START_MS

    def teardown(self) -> None:
        for log in (self.fast, self.general):
            for segment in log.segments:
                segment.close_handlers()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(
        appends=st.integers(1, 8),
        records=st.integers(1, 5),
        size=st.integers(0, 60),
        step=st.sampled_from([0, 0, 1, 7, -3, 20_000]),
        timestamps=st.sampled_from([True, True, True, True, False]),
        epoch=st.integers(0, 2),
    )
    def append(self, appends: int, records: int, size: int, step: int, timestamps: bool, epoch: int) -> None:
        for _ in range(appends):
            self.timestamp += step
            stamp = self.timestamp if timestamps else -1
            batch = build_batch([Record(i, stamp, None, b"r" * size) for i in range(records)])
            fast = self.fast.append_as_leader(bytearray(batch), leader_epoch=epoch)
            general = self.general.append_as_leader(bytes(batch), leader_epoch=epoch)
            assert fast == general

    @rule()
    def roll(self) -> None:
        self.fast.roll()
        self.general.roll()

    @rule(back=st.integers(0, 12))
    def truncate(self, back: int) -> None:
        target = max(0, self.fast.log_end_offset - back)
        assert self.fast.truncate_to(target) == self.general.truncate_to(target)

    @rule(clean=st.booleans())
    def reopen(self, clean: bool) -> None:
        for name in ("fast", "general"):
            log: Log = getattr(self, name)
            if clean:
                log.close()
            else:
                for segment in log.segments:
                    segment.close_handlers()
            setattr(self, name, Log.open(log.directory, CONFIG, self.clock, had_clean_shutdown=clean))

    @invariant()
    def the_logs_are_the_same(self) -> None:
        assert _state(self.fast) == _state(self.general)
        assert self.fast.leader_epoch_cache.entries() == self.general.leader_epoch_cache.entries()


def test_fast_and_general_appends_leave_the_same_log(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = FastAppends(monkeypatch)
    run_state_machine_as_test(
        FastAndGeneralAppends, settings=settings(max_examples=40, stateful_step_count=30, deadline=None)
    )
    # every one-batch append of a writable buffer takes the fast path, rolls and first appends included
    assert fast.offered > 100
    assert fast.count == fast.offered


def test_closed_logs_are_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a run that fills indexes, rolls on each rule and closes, every file matches byte for byte."""
    taken = FastAppends(monkeypatch)
    clock = ManualClock(start_ms=START_MS, seed=5)
    fast = Log.open(tmp_path / "fast-0", TINY_INDEXES, clock)
    general = Log.open(tmp_path / "general-0", TINY_INDEXES, clock)
    timestamp = START_MS
    for i in range(400):
        timestamp += (0, 3, -2, 15_000)[i % 7 % 4]
        batch = build_batch([Record(j, timestamp, None, b"v" * (i % 50)) for j in range(1 + i % 4)])
        assert fast.append_as_leader(bytearray(batch)) == general.append_as_leader(bytes(batch))
    assert len(fast.segments) > 10
    assert taken.count == 400
    fast.close()
    general.close()
    assert _files(tmp_path / "fast-0") == _files(tmp_path / "general-0")


def test_recovery_keeps_within_a_full_index(tmp_path: Path) -> None:
    """Appends after a clean restart place index entries from there, so recovering the same segment later can
    find more places for entries than its index holds: the log still opens (a full index takes no more
    entries; it is a hint) with every record readable, and the next append rolls. Found by the machine above:
    before, the start failed with IndexFullError."""
    clock = ManualClock(start_ms=START_MS, seed=5)
    log = Log.open(tmp_path / "t-0", CONFIG, clock)
    batch = build_batch([Record(i, START_MS, None, b"r") for i in range(4)])
    for _ in range(7):
        log.append_as_leader(bytearray(batch))
    log.close()
    log = Log.open(tmp_path / "t-0", CONFIG, clock, had_clean_shutdown=True)
    for _ in range(7):
        log.append_as_leader(bytearray(batch))
    for segment in log.segments:
        segment.close_handlers()
    log = Log.open(tmp_path / "t-0", CONFIG, clock, had_clean_shutdown=False)
    assert log.log_end_offset == 56
    assert [r.offset for r in log_records(log)] == list(range(56))
