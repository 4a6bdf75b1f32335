"""A partition's log with idempotent producers: duplicates, refusals, snapshots at roll and close, and the state
rebuilt from snapshots plus the log after a clean or an unclean restart, a truncation and retention."""

from __future__ import annotations

from pathlib import Path

import pytest

from samsa.clock import ManualClock
from samsa.records import build_batch
from samsa.storage.config import LogConfig
from samsa.storage.log import Log
from samsa.storage.producer_state import InvalidProducerEpochError, OutOfOrderSequenceError, snapshot_file

PID = 4000


def producer_batch(seq: int, count: int = 1, *, epoch: int = 0, pid: int = PID, now: int) -> bytes:
    values = [f"p{pid}-e{epoch}-s{seq + i}".encode() * 4 for i in range(count)]
    return build_batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=seq, timestamp=now)


def config(**props: int | str) -> LogConfig:
    return LogConfig.from_properties({"segment.bytes": 600, "file.delete.delay.ms": 0, **props})


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def open_log(directory: Path, clock: ManualClock, *, clean: bool = False, **props: int | str) -> Log:
    return Log.open(directory, config(**props), clock, had_clean_shutdown=clean)


def snapshots(directory: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in directory.glob("*.snapshot"))


def fill(log: Log, clock: ManualClock, batches: int, count: int = 2) -> list[int]:
    """Append ``batches`` in-order batches of ``count`` records from sequence 0; their first offsets."""
    return [
        log.append_as_leader(producer_batch(i * count, count, now=clock.milliseconds())).first_offset
        for i in range(batches)
    ]


def test_a_retried_batch_is_answered_with_its_offset_and_not_written(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    now = clock.milliseconds()
    first = log.append_as_leader(producer_batch(0, 3, now=now))
    second = log.append_as_leader(producer_batch(3, 2, now=now))
    size, end = log.size, log.log_end_offset
    again = log.append_as_leader(producer_batch(0, 3, now=now))
    assert again.duplicate and (again.first_offset, again.last_offset) == (
        first.first_offset,
        first.last_offset,
    )
    assert (log.size, log.log_end_offset) == (size, end)
    assert log.append_as_leader(producer_batch(3, 2, now=now)).first_offset == second.first_offset
    assert log.append_as_leader(producer_batch(5, 1, now=now)).first_offset == 5


def test_a_gap_and_a_stale_epoch_are_refused_and_nothing_is_written(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    now = clock.milliseconds()
    log.append_as_leader(producer_batch(0, 2, epoch=1, now=now))
    with pytest.raises(OutOfOrderSequenceError) as gap:
        log.append_as_leader(producer_batch(5, 1, epoch=1, now=now))
    assert (gap.value.first_sequence, gap.value.expected) == (5, 2)
    with pytest.raises(InvalidProducerEpochError) as stale:
        log.append_as_leader(producer_batch(2, 1, epoch=0, now=now))
    assert (stale.value.epoch, stale.value.current_epoch) == (0, 1)
    assert log.log_end_offset == 2
    assert (
        log.append_as_leader(producer_batch(0, 1, epoch=2, now=now)).first_offset == 2
    )  # a bump restarts at 0


def test_a_roll_snapshots_the_state_and_retention_deletes_it_with_its_segment(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, **{"retention.bytes": 1})
    fill(log, clock, 12)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 2
    assert set(bases[1:]) <= set(snapshots(tmp_path))
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    remaining = [s.base_offset for s in log.segments]
    assert all(not snapshot_file(tmp_path, b).exists() for b in bases if b not in remaining)
    assert snapshot_file(tmp_path, remaining[0]).exists()


@pytest.mark.parametrize("clean", [True, False], ids=["clean close", "unclean"])
def test_after_a_restart_the_last_batches_are_still_duplicates(
    tmp_path: Path, clock: ManualClock, clean: bool
) -> None:
    log = open_log(tmp_path, clock)
    offsets = fill(log, clock, 9)
    end = log.log_end_offset
    if clean:
        log.close()
        assert snapshots(tmp_path)[-1] == end
    reopened = open_log(tmp_path, clock, clean=clean)
    assert reopened.log_end_offset == end
    now = clock.milliseconds()
    last = reopened.append_as_leader(producer_batch(16, 2, now=now))
    assert last.duplicate and last.first_offset == offsets[-1]
    if (
        not clean
    ):  # the roll snapshot holds the batch before it; the batches after it are replayed from the log
        rolled_at = reopened.active_segment.base_offset
        known = [i for i in range(9) if offsets[i] >= rolled_at]
        known = [known[0] - 1, *known][-5:]
        assert len(known) >= 3
        for i in known:
            assert reopened.append_as_leader(producer_batch(2 * i, 2, now=now)).first_offset == offsets[i]
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_as_leader(producer_batch(20, 1, now=now))
    assert reopened.append_as_leader(producer_batch(18, 1, now=now)).first_offset == end


def test_snapshots_lost_after_a_clean_stop_are_rebuilt_from_the_log(
    tmp_path: Path, clock: ManualClock
) -> None:
    """A clean stop always leaves a snapshot at the log end: with none, and idempotent batches in the log, they
    were lost, and the state comes from the log (skipping it, as for data older than producer state, stored a
    retried batch twice)."""
    log = open_log(tmp_path, clock)
    offsets = fill(log, clock, 9)
    log.close()
    for path in tmp_path.glob("*.snapshot"):
        path.unlink()
    reopened = open_log(tmp_path, clock, clean=True)
    retried = reopened.append_as_leader(producer_batch(16, 2, now=clock.milliseconds()))
    assert retried.duplicate and retried.first_offset == offsets[-1]
    assert snapshots(tmp_path)[-1] == reopened.log_end_offset


def test_a_corrupt_latest_snapshot_falls_back_to_an_older_one_and_the_log(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    offsets = fill(log, clock, 9)
    log.close()
    latest = snapshots(tmp_path)[-1]
    snapshot_file(tmp_path, latest).write_bytes(b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00")
    reopened = open_log(tmp_path, clock, clean=True)
    assert (
        reopened.append_as_leader(producer_batch(16, 2, now=clock.milliseconds())).first_offset == offsets[-1]
    )
    assert snapshots(tmp_path)[-1] == reopened.log_end_offset


def test_truncation_rebuilds_the_state_at_the_new_end(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    offsets = fill(log, clock, 9)
    log.truncate_to(offsets[6])  # batches 6, 7 and 8 are gone
    assert all(o <= offsets[6] for o in snapshots(tmp_path))
    now = clock.milliseconds()
    assert (
        log.append_as_leader(producer_batch(10, 2, now=now)).first_offset == offsets[5]
    )  # still a duplicate
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(producer_batch(14, 2, now=now))
    appended = log.append_as_leader(producer_batch(12, 2, now=now))
    assert not appended.duplicate and appended.first_offset == offsets[6]


def test_a_full_truncation_forgets_every_producer(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    fill(log, clock, 4)
    log.truncate_fully_and_start_at(100)
    assert snapshots(tmp_path) == []
    assert log.append_as_leader(producer_batch(5, 1, now=clock.milliseconds())).first_offset == 100


def test_follower_appends_record_producer_state(tmp_path: Path, clock: ManualClock) -> None:
    leader = open_log(tmp_path / "leader", clock)
    fill(leader, clock, 3)
    follower = open_log(tmp_path / "follower", clock)
    for segment in leader.segments:
        follower.append_as_follower(segment.log.read(0, segment.size))
    entry = follower.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 5 and len(entry.batches) == 3


def test_producers_expire_after_a_day_of_silence(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    fill(log, clock, 2)
    clock.advance(86_400_000 + 1)
    log.delete_old_segments()
    assert log.producer_state.is_empty
    assert log.append_as_leader(producer_batch(9, 1, now=clock.milliseconds())).first_offset == 4
