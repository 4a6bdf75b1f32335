"""Appends against a disk that fails: a fault-injecting file layer under a real ``Log``, checked against a model.

``FaultyDisk`` wraps the ``os`` calls storage writes with (``pwrite``, ``write``, ``fsync``, ``replace``): armed
with a countdown it lets that many calls through, then fails every call with ENOSPC (a full disk) until disarmed,
or fails once; a ``pwrite`` may first write part of its bytes (a short write, as a disk filling up gives).
``ftruncate`` to a shorter length, which is how a failed append is undone, needs no space and is left alone here;
an undo that fails takes the log offline (``test_an_append_that_cannot_be_undone_takes_the_log_offline``). The model is the list of acknowledged batches: an append that returned is acknowledged, one
that raised is not. Invariant after every step, and after clean and unclean reopens: the log holds exactly the
acknowledged records, at the offsets they were acknowledged with, and its log end offset follows the last one,
so no offset is ever handed out twice.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from storage_helpers import decode_all, small_config

from samsa.clock import ManualClock
from samsa.records import Record, build_batch
from samsa.storage import KafkaStorageError
from samsa.storage.log import FetchIsolation, Log

CONFIG = small_config(
    segment_bytes=1500, index_interval_bytes=120, segment_index_bytes=800, **{"flush.messages": 7}
)
FAULTED = ("pwrite", "write", "fsync", "replace")


class FaultyDisk:
    """Counts the write-side ``os`` calls and fails them on demand (module doc)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.countdown: int | None = None
        self.sticky = True
        self.short_write = False
        self.failed = False
        self.real: dict[str, Callable[..., Any]] = {name: getattr(os, name) for name in FAULTED}
        for name in FAULTED:
            monkeypatch.setattr(os, name, self._wrap(name))

    def arm(self, after: int, sticky: bool, short_write: bool) -> None:
        self.countdown, self.sticky, self.short_write, self.failed = after, sticky, short_write, False

    def disarm(self) -> None:
        self.countdown = None

    def _wrap(self, name: str) -> Callable[..., Any]:
        real = self.real[name]

        def call(*args: Any) -> Any:
            if self.countdown is not None:
                if self.countdown > 0:
                    self.countdown -= 1
                else:
                    if not self.sticky:
                        self.countdown = None
                    self.failed = True
                    if name == "pwrite" and self.short_write and len(args[1]) > 1:
                        self.short_write = False
                        return real(args[0], memoryview(args[1])[: len(args[1]) // 2], args[2])
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(*args)

        return call


class AppendsOnAFailingDisk(RuleBasedStateMachine):
    disk: FaultyDisk

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="faults-"))
        self.directory = self.root / "t-0"
        self.clock = ManualClock(start_ms=1_700_000_000_000, seed=3)
        self.log = Log.open(self.directory, CONFIG, self.clock)
        self.acked: list[tuple[int, bytes]] = []  # (offset, value) of every acknowledged record
        self.serial = 0

    def teardown(self) -> None:
        self.disk.disarm()
        for segment in self.log.segments:
            segment.close_handlers()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(
        records=st.integers(1, 6),
        size=st.integers(0, 120),
        fault=st.none() | st.tuples(st.integers(0, 6), st.booleans(), st.booleans()),
    )
    def append(self, records: int, size: int, fault: tuple[int, bool, bool] | None) -> None:
        values = []
        for _ in range(records):
            self.serial += 1
            values.append(f"{self.serial:08d}".encode() + b"x" * size)
        batch = build_batch([Record(i, self.clock.milliseconds(), None, v) for i, v in enumerate(values)])
        if fault is not None:
            self.disk.arm(*fault)
        try:
            info = self.log.append_as_leader(bytearray(batch))
        except KafkaStorageError:
            assert fault is not None and self.disk.failed, "an append failed with no fault injected"
        else:
            expected = self.acked[-1][0] + 1 if self.acked else 0
            assert info.first_offset == expected
            self.acked += [(info.first_offset + i, v) for i, v in enumerate(values)]
        finally:
            self.disk.disarm()
        self.clock.advance(5)

    @rule(fault=st.none() | st.tuples(st.integers(0, 4), st.booleans(), st.just(False)))
    def roll(self, fault: tuple[int, bool, bool] | None) -> None:
        if fault is not None:
            self.disk.arm(*fault)
        try:
            self.log.roll()
        except KafkaStorageError:
            assert fault is not None and self.disk.failed
        finally:
            self.disk.disarm()

    @precondition(lambda self: self.log.offline_error is None)
    @rule(clean=st.booleans())
    def reopen(self, clean: bool) -> None:
        if clean:
            self.log.close()
        else:  # a crash: nothing trimmed, nothing flushed beyond what the page cache holds
            for segment in self.log.segments:
                segment.close_handlers()
        self.log = Log.open(self.directory, CONFIG, self.clock, had_clean_shutdown=clean)

    @invariant()
    def holds_exactly_what_was_acknowledged(self) -> None:
        if self.log.offline_error is not None:
            return
        expected_end = self.acked[-1][0] + 1 if self.acked else 0
        assert self.log.log_end_offset == expected_end
        got: list[tuple[int, bytes]] = []
        offset = 0
        while offset < expected_end:
            data = self.log.read(
                offset, 10_000, FetchIsolation.LOG_END, min_one_message=True
            ).records.read_bytes()
            records = [(r.offset, r.value or b"") for r in decode_all(data) if r.offset >= offset]
            assert records, f"nothing at offset {offset}"
            got += records
            offset = records[-1][0] + 1
        assert got == self.acked


@pytest.mark.slow
def test_appends_on_a_failing_disk_keep_exactly_the_acknowledged_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    AppendsOnAFailingDisk.disk = FaultyDisk(monkeypatch)
    run = AppendsOnAFailingDisk.TestCase
    run.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
    run().runTest()


def test_an_append_that_cannot_be_undone_takes_the_log_offline(tmp_path: Path) -> None:
    clock = ManualClock(start_ms=1_700_000_000_000)
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, clock)
    acked = log.append_as_leader(build_batch([Record(0, 1, None, b"kept")]))
    segment = log.active_segment
    real_fd = segment.log.fd
    segment.log._fd = os.open(tmp_path, os.O_RDONLY)  # a directory: the write and the undo both fail
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(build_batch([Record(0, 1, None, b"lost")]))
    assert log.offline_error is not None
    for call in (
        lambda: log.append_as_leader(build_batch([Record(0, 1, None, b"refused")])),
        lambda: log.read(0, 1000, FetchIsolation.LOG_END),
        lambda: log.roll(),
    ):
        with pytest.raises(KafkaStorageError):
            call()
    os.close(segment.log.fd)
    segment.log._fd = real_fd
    for s in log.segments:
        s.close_handlers()
    reopened = Log.open(directory, CONFIG, clock, had_clean_shutdown=False)
    assert [
        (r.offset, r.value)
        for r in decode_all(reopened.read(0, 1000, FetchIsolation.LOG_END).records.read_bytes())
    ] == [(acked.first_offset, b"kept")]
    assert reopened.append_as_leader(build_batch([Record(0, 1, None, b"after")])).first_offset == 1


@pytest.mark.parametrize("buffer", [bytearray, bytes], ids=["one-batch path", "general path"])
def test_a_failed_time_index_entry_undoes_the_offset_entry_and_the_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, buffer: Callable[[bytes], bytes]
) -> None:
    """The time index fails after the offset index took its entry: the append leaves nothing behind (no
    offset entry, no bytes, the log end where it was), and the same offsets then go to the next batch."""
    clock = ManualClock(start_ms=1_700_000_000_000)
    log = Log.open(tmp_path / "t-0", CONFIG, clock)
    for i in range(3):  # bigger than the index interval: each append adds index entries
        log.append_as_leader(buffer(build_batch([Record(0, 1_700_000_000_000 + i, None, b"k" * 150)])))
    segment = log.active_segment
    before = (segment.size, segment.offset_index.entries, segment.time_index.entries, log.log_end_offset)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(type(segment.time_index), "maybe_append", full)
        with pytest.raises(KafkaStorageError):
            log.append_as_leader(buffer(build_batch([Record(0, 1_700_000_000_009, None, b"n" * 150)])))
    assert (
        segment.size,
        segment.offset_index.entries,
        segment.time_index.entries,
        log.log_end_offset,
    ) == before
    info = log.append_as_leader(buffer(build_batch([Record(0, 1_700_000_000_010, None, b"a" * 150)])))
    assert info.first_offset == before[3]
    data = log.read(0, 10_000, FetchIsolation.LOG_END).records.read_bytes()
    assert [r.value[:1] for r in decode_all(data) if r.value] == [b"k", b"k", b"k", b"a"]


def test_delete_records_on_a_full_disk_fails_with_nothing_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeleteRecords rewrites the leader-epoch checkpoint; when it cannot, the log start stays where it was (it
    answered an error: consumers must not see records vanish that come back at the next start)."""
    log = Log.open(tmp_path / "t-0", CONFIG, ManualClock())
    for epoch in (1, 2):
        for i in range(5):
            log.append_as_leader(
                bytearray(build_batch([Record(0, 1000 + i, None, b"v")])), leader_epoch=epoch
            )
    log.update_high_watermark(log.log_end_offset)
    disk = FaultyDisk(monkeypatch)
    disk.arm(0, sticky=True, short_write=False)
    with pytest.raises(OSError):
        log.maybe_increment_log_start_offset(7)
    disk.disarm()
    assert disk.failed and log.log_start_offset == 0
    assert [e.start_offset for e in log.leader_epoch_cache.entries()] == [0, 5]
    assert log.maybe_increment_log_start_offset(7) and log.log_start_offset == 7  # once the disk has room
    log.close()
