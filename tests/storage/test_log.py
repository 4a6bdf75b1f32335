"""Log: appends, reads, rolls, HW, truncation, retention, flush, timestamps (spec 12.5, 12.6)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from storage_helpers import decode_all, leader_batch, log_records, small_config, v1, v2

from samsa.clock import ManualClock
from samsa.records import CompressionType, Record, build_batch, iter_batches
from samsa.storage.config import LogConfig
from samsa.storage.errors import (
    IllegalRollError,
    OffsetOutOfRangeError,
    OffsetsOutOfOrderError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from samsa.storage.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    FetchIsolation,
    Log,
)
from samsa.storage.segment import TimestampAndOffset

LOG_END = FetchIsolation.LOG_END


def open_log(path: Path, clock: ManualClock, config: LogConfig | None = None, **kwargs: object) -> Log:
    return Log.open(path / "topic-0", config or small_config(), clock, **kwargs)  # type: ignore[arg-type]


def offsets_read(
    log: Log, start: int, max_bytes: int = 10**6, isolation: FetchIsolation = LOG_END
) -> list[int]:
    return [r.offset for r in decode_all(log.read(start, max_bytes, isolation).read_bytes())]


def read_all(log: Log, start: int, isolation: FetchIsolation = LOG_END) -> list[int]:
    """Offsets from ``start`` to the isolation bound, one segment per read as Kafka returns them."""
    out: list[int] = []
    while True:
        got = [o for o in offsets_read(log, start, isolation=isolation) if o >= start]
        if not got:
            return out
        out.extend(got)
        start = got[-1] + 1


def test_new_log_is_empty(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark, len(log.segments)) == (0, 0, 0, 1)
    assert (tmp_path / "topic-0" / "00000000000000000000.log").exists()


def test_leader_assigns_consecutive_offsets_across_rolls(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    firsts = []
    for _ in range(3):
        info = log.append_as_leader(leader_batch(3))
        firsts.append(info.first_offset)
        log.roll()
    assert firsts == [0, 3, 6] and log.log_end_offset == 9
    assert [r.offset for r in log_records(log)] == list(range(9))


def test_append_patches_offsets_and_epoch_in_place(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(leader_batch(2))
    buf = bytearray(leader_batch(3))
    info = log.append_as_leader(buf, leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.num_messages) == (2, 4, 3)
    (batch,) = iter_batches(buf)
    assert batch.base_offset == 2 and batch.partition_leader_epoch == 7 and batch.is_valid()
    assert log.leader_epoch_cache.entries()[-1].epoch == 7
    text = (tmp_path / "topic-0" / "leader-epoch-checkpoint").read_text()
    assert text == "0\n2\n0 0\n7 2\n"


def test_trailing_partial_batch_is_trimmed_and_written_once(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    whole = leader_batch(2) + leader_batch(3)
    info = log.append_as_leader(whole + leader_batch(4)[:30])
    assert info.valid_bytes == len(whole) and log.log_end_offset == 5
    assert log.active_segment.size == len(whole)
    assert log.append_as_leader(b"").valid_bytes == 0 and log.log_end_offset == 5


def test_legacy_leader_appends(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(v1(0, 100) + v1(0, 200))
    from samsa.records import build_legacy_message_set

    wrapper = build_legacy_message_set(
        1, [Record(i, 300 + i, None, b"z") for i in range(3)], CompressionType.GZIP
    )
    info = log.append_as_leader(wrapper)
    assert (info.first_offset, info.last_offset) == (2, 4)
    assert [r.offset for r in log_records(log)] == [0, 1, 2, 3, 4]


def test_log_append_time(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(message_timestamp_type="LogAppendTime"))
    info = log.append_as_leader(v2([0, 1], [5, 6]))
    now = clock.milliseconds()
    assert info.log_append_time == now and info.max_timestamp == now
    assert [r.timestamp for r in log_records(log)] == [now, now]
    assert all(b.is_valid() for b in iter_batches(log.active_segment.log.read(0, 10**6)))


def test_size_based_roll(tmp_path: Path, clock: ManualClock) -> None:
    set_size = len(leader_batch(1))
    log = open_log(tmp_path, clock, small_config(segment_bytes=10 * set_size))
    for _ in range(10):
        log.append_as_leader(leader_batch(1))
    assert len(log.segments) == 1
    log.append_as_leader(leader_batch(1))
    assert len(log.segments) == 2


def test_message_size_checks(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(max_message_bytes=200, segment_bytes=1000))
    big = leader_batch(1, size=300)
    with pytest.raises(RecordTooLargeError) as err:
        log.append_as_leader(big)
    assert err.value.size == len(big) and err.value.max_size == 200
    follower_big = build_batch([Record(0, 0, None, b"x" * 300)])
    log.append_as_follower(follower_big)  # the follower does not check max.message.bytes
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_follower(build_batch([Record(1, 0, None, b"x" * 1200)]))


def test_time_based_roll(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_ms=3600_000))
    log.append_as_leader(v2([0], [-1]))  # no timestamp: wall clock decides
    clock.advance(3600_001)
    log.append_as_leader(v2([0], [-1]))
    assert len(log.segments) == 2
    # with timestamps, record time decides, not the clock
    log = open_log(tmp_path / "ts", clock, small_config(segment_ms=3600_000))
    base = clock.milliseconds()
    log.append_as_leader(v2([0], [base]))
    clock.advance(10 * 3600_000)
    log.append_as_leader(v2([0], [base + 10]))
    assert len(log.segments) == 1
    log.append_as_leader(v2([0], [base + 3600_001]))
    assert len(log.segments) == 2


def test_roll_jitter(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_ms=1000, segment_jitter_ms=400))
    jitter = log.active_segment.roll_jitter_ms
    assert 0 <= jitter < 400
    log.append_as_leader(v2([0], [0]))
    log.append_as_leader(v2([0], [1000 - jitter]))
    assert len(log.segments) == 1
    log.append_as_leader(v2([0], [1000 - jitter + 1]))
    assert len(log.segments) == 2


def test_roll_rules(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    directory = tmp_path / "topic-0"
    first = log.active_segment
    assert (
        log.roll() is first and len(log.segments) == 1
    )  # empty active: kept as the new one, files untouched
    assert first.log.path.name == "00000000000000000000.log"
    log.append_as_leader(leader_batch(1))
    assert log.roll().base_offset == 1
    log.append_as_leader(leader_batch(1))
    assert log.roll(1).base_offset == 2  # max(expected, LEO)
    log.append_as_leader(leader_batch(1))
    log._log_end_offset = 2
    with pytest.raises(IllegalRollError):
        log.roll()
    log._log_end_offset = 3
    assert sorted(p.name for p in directory.glob("*.log")) == [
        "00000000000000000000.log",
        "00000000000000000001.log",
        "00000000000000000002.log",
    ]


def test_roll_below_active_base_is_refused(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_follower(v2([10]))
    log.roll()
    assert log.active_segment.base_offset == 11
    log._log_end_offset = 5
    with pytest.raises(IllegalRollError) as err:
        log.roll(3)
    assert err.value.active_base_offset == 11


def test_flushing_empty_active_segments(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, flush_on_roll=False)
    directory = tmp_path / "topic-0"
    log.append_as_leader(leader_batch(1))
    log.roll()
    assert len(list(directory.glob("*.log"))) == 2 and len(list(directory.glob("*.index"))) == 1
    log.flush(log.log_end_offset, including_offset=True)
    assert len(list(directory.glob("*.index"))) == 2
    assert log.recovery_point == 1


def test_roll_flushes_and_moves_recovery_point(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_bytes=300))
    for _ in range(20):
        log.append_as_leader(leader_batch(2))
    assert len(log.segments) > 3
    assert log.recovery_point == log.active_segment.base_offset
    assert [r.offset for r in log_records(log)] == list(range(40))


def test_flush_messages(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(flush_messages=5))
    log.append_as_leader(leader_batch(3))
    assert log.recovery_point == 0
    log.append_as_leader(leader_batch(3))
    assert log.recovery_point == 6
    clock.advance(5)
    log.flush(10**9)
    assert log.recovery_point == 6  # never past LEO


def test_reads(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_bytes=400))
    for i in range(30):
        log.append_as_leader(v2([0], [i], [f"m{i}".encode()]))
    assert len(log.segments) > 2
    for i in range(30):
        info = log.read(i, 1, LOG_END, min_one_message=True)
        assert decode_all(info.read_bytes())[0].value == f"m{i}".encode()
    assert log.read(30, 100, LOG_END).size == 0
    with pytest.raises(OffsetOutOfRangeError) as err:
        log.read(31, 100, LOG_END)
    assert (err.value.offset, err.value.log_end_offset) == (31, 30)


def test_read_with_min_one_message_and_small_max(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(v2([0], [1], [b"x" * 50]))
    for max_length in (1, 100, 100_000):
        info = log.read(0, max_length, LOG_END, min_one_message=True)
        assert decode_all(info.read_bytes())[0].offset == 0
    assert log.read(0, 0, LOG_END).size == 0
    info = log.read(0, 1, LOG_END)
    assert info.size == 1 and info.first_entry_incomplete


def test_read_out_of_range(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, log_start_offset=1024)
    log.append_as_leader(leader_batch(1))
    assert log.log_end_offset == 1025
    assert log.read(1025, 1000, LOG_END).size == 0
    for bad in (0, 1026):
        with pytest.raises(OffsetOutOfRangeError):
            log.read(bad, 1000, LOG_END)


def test_read_at_log_gap_and_non_sequential_offsets(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_follower(v2([0, 2]))
    log.roll(10)
    log.append_as_follower(v2([10, 14]))
    assert offsets_read(log, 1) == [0, 2]  # one segment per read, as Kafka
    assert offsets_read(log, 3) == [10, 14]  # nothing >= 3 in the first segment: continue
    assert offsets_read(log, 11) == [10, 14]


def test_compressed_read_returns_the_whole_batch(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    for _ in range(2):
        log.append_as_leader(
            build_batch([Record(i, 0, None, b"v") for i in range(2)], compression=CompressionType.GZIP)
        )
    assert offsets_read(log, 1) == [0, 1, 2, 3]
    assert offsets_read(log, 3) == [2, 3]


def test_null_payload(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(build_batch([None]))
    assert log_records(log)[0].value is None


def test_high_watermark_maintenance_and_bounded_reads(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_bytes=300))
    assert log.high_watermark == 0
    for _ in range(3):
        log.append_as_leader(leader_batch(1))
    assert log.high_watermark == 0
    assert log.read(0, 1000).size == 0  # HW-bounded reads see nothing yet
    assert log.update_high_watermark(5) == 3
    log.update_high_watermark(2)
    assert offsets_read(log, 0, isolation=FetchIsolation.HIGH_WATERMARK) == [0, 1]
    assert log.read(2, 1000).size == 0
    for _ in range(10):
        log.append_as_leader(leader_batch(1))
    assert len(log.segments) > 1
    log.update_high_watermark(11)
    assert read_all(log, 0, FetchIsolation.HIGH_WATERMARK) == list(range(11))
    assert all(o < 11 for o in offsets_read(log, 5, isolation=FetchIsolation.TXN_COMMITTED))
    assert log.read(12, 1000).fetch_offset_metadata.message_offset == 12
    log.truncate_to(3)
    assert log.high_watermark == 3
    log.truncate_fully_and_start_at(4)
    assert (log.log_end_offset, log.log_start_offset, log.high_watermark) == (4, 4, 4)


def test_maybe_increment_and_follower_hw(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(leader_batch(5))
    assert log.maybe_increment_high_watermark(3) and not log.maybe_increment_high_watermark(2)
    assert log.maybe_increment_high_watermark(99) and log.high_watermark == 5
    assert log.maybe_update_high_watermark(5) is None
    assert log.maybe_update_high_watermark(4) == 4


def test_truncate_to(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_bytes=200))
    for _ in range(12):
        log.append_as_leader(leader_batch(1))
    size = log.size
    assert not log.truncate_to(12) and not log.truncate_to(20)
    assert log.truncate_to(7)
    assert log.log_end_offset == 7 and log.size < size
    assert all(s.base_offset <= 7 for s in log.segments)
    log.append_as_leader(leader_batch(1))
    assert [r.offset for r in log_records(log)] == list(range(8))
    assert log.truncate_to(0) and log.log_end_offset == 0 and log.size == 0
    with pytest.raises(ValueError):
        log.truncate_to(-1)


def test_truncate_at_the_log_end_drops_an_epoch_no_record_has(tmp_path: Path, clock: ManualClock) -> None:
    # A leader of epoch 2 appends, becomes leader of epoch 3 (assigned at its log end), loses leadership before
    # appending. As a follower it is told its log diverged after epoch 2's end (its log end): nothing to cut, but
    # epoch 3 must go, or every fetch names it as the last fetched epoch and gets the same answer (seen in a
    # nemesis run: a follower spinning at ~800 fetches/s that never rejoined the ISR).
    log = open_log(tmp_path, clock)
    for _ in range(3):
        log.append_as_leader(leader_batch(1), leader_epoch=2)
    log.leader_epoch_cache.assign(3, log.log_end_offset)
    assert log.leader_epoch_cache.latest_epoch() == 3
    assert not log.truncate_to(log.log_end_offset)
    assert log.leader_epoch_cache.latest_epoch() == 2 and log.log_end_offset == 3
    log.close()
    reopened = open_log(tmp_path, clock)
    assert reopened.leader_epoch_cache.latest_epoch() == 2  # the checkpoint too
    reopened.close()


def test_index_resizing_at_truncation(tmp_path: Path, clock: ManualClock) -> None:
    set_size = len(leader_batch(1))
    config = small_config(segment_bytes=5 * set_size, index_interval_bytes=1, segment_index_bytes=1000)
    log = open_log(tmp_path, clock, config)
    for _ in range(5):
        log.append_as_leader(v2([0], [clock.milliseconds()]))
        clock.advance(1)
    log.append_as_leader(v2([0], [clock.milliseconds()]))
    assert len(log.segments) == 2
    first = log.segments.first_segment()
    assert first is not None and first.offset_index.max_entries == 4
    log.truncate_to(0)
    active = log.active_segment
    assert active.offset_index.max_entries == 1000 // 8 and active.time_index.max_entries == 1000 // 12


def test_truncate_fully_and_start_at(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(leader_batch(3))
    log.truncate_fully_and_start_at(10)
    assert len(log.segments) == 1 and log.active_segment.base_offset == 10
    assert log.log_end_offset == 10 and log.recovery_point == 0
    assert log.read(10, 100, LOG_END).size == 0


def test_follower_offset_checks(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    bad = v2([0]) + v2([1]) + v2([3]) + v2([2]) + v2([4])
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(bad)
    log.append_as_follower(v2([0, 1, 2]))
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(v2([1, 2, 3]))
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(v1(2, 0))
    empty = open_log(tmp_path / "e", clock, log_start_offset=7)
    with pytest.raises(UnexpectedAppendOffsetError) as err:
        empty.append_as_follower(v2([4, 5, 6]))
    assert (err.value.first_offset, err.value.last_offset, err.value.log_end_offset) == (4, 6, 7)


def test_build_time_index_when_not_assigning_offsets(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(index_interval_bytes=1))
    for i in range(100):
        log.append_as_follower(v2([i], [1000 + i]))
    ti = log.active_segment.time_index
    assert ti.entries == 99 and ti.last_entry.timestamp == 1099


def test_fetch_offset_by_timestamp(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_bytes=200))
    t = 1_000_000
    log.append_as_leader(v2([0], [t]), leader_epoch=0)
    log.append_as_leader(v2([0], [t + 1]), leader_epoch=1)
    log.append_as_leader(v2([0], [t]), leader_epoch=1)
    assert log.fetch_offset_by_timestamp(t) == TimestampAndOffset(t, 0, 0)
    assert log.fetch_offset_by_timestamp(t + 1) == TimestampAndOffset(t + 1, 1, 1)
    assert log.fetch_offset_by_timestamp(t + 2) is None
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == TimestampAndOffset(-1, 0, 0)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == TimestampAndOffset(-1, 3, 1)
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == TimestampAndOffset(t + 1, 1, 1)
    log.leader_epoch_cache.assign(2, 3)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == TimestampAndOffset(-1, 3, 2)
    with pytest.raises(ValueError):
        log.fetch_offset_by_timestamp(-9)


# --- retention -----------------------------------------------------------------------------------------


def _keyed(timestamp: int) -> bytes:
    """One keyed record (a compacted log refuses keyless ones)."""
    return build_batch([Record(0, timestamp, b"k", b"v0")])


def _three_segments(tmp_path: Path, clock: ManualClock, **props: int | str) -> Log:
    set_size = len(_keyed(0))
    log = open_log(tmp_path, clock, small_config(segment_bytes=5 * set_size, **props))
    for _ in range(15):
        log.append_as_leader(_keyed(clock.milliseconds()))
    assert len(log.segments) == 3
    return log


def test_nothing_deleted_before_hw(tmp_path: Path, clock: ManualClock) -> None:
    log = _three_segments(tmp_path, clock, retention_ms=1)
    clock.advance(10)
    assert log.delete_old_segments() == 0
    log.update_high_watermark(7)
    assert log.delete_old_segments() == 1 and log.log_start_offset == 5
    log.update_high_watermark(15)
    assert log.delete_old_segments() == 2
    assert len(log.segments) == 1 and log.active_segment.size == 0
    assert (log.log_start_offset, log.log_end_offset) == (15, 15)
    log.append_as_leader(leader_batch(1))
    assert log.log_end_offset == 16  # garbage collection does not change offsets


def test_async_delete(tmp_path: Path, clock: ManualClock) -> None:
    log = _three_segments(tmp_path, clock, retention_ms=1, file_delete_delay_ms=1000)
    log.update_high_watermark(15)
    clock.advance(10)
    directory = tmp_path / "topic-0"
    assert log.delete_old_segments() == 3
    deleted = sorted(p.name for p in directory.glob("*.deleted"))
    assert (
        "00000000000000000000.log.deleted" in deleted
        and not (directory / "00000000000000000000.log").exists()
    )
    assert log.delete_pending_segments(clock.milliseconds()) == 0
    clock.advance(1001)
    assert log.delete_pending_segments() == 3
    assert not list(directory.glob("*.deleted"))


def test_size_based_retention(tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    set_size = len(v2([0], [0]))
    log = _three_segments(tmp_path, clock, retention_bytes=10 * set_size)
    log.update_high_watermark(15)
    oldest = next(iter(log.segments)).size
    with caplog.at_level(logging.INFO, logger="samsa.storage.log"):
        assert log.delete_old_segments() == 1 and len(log.segments) == 2
    assert f"deleting 1 segment(s), offsets 0 to 4 ({oldest} bytes), past retention.bytes" in caplog.text
    log2 = _three_segments(tmp_path / "b", clock, retention_bytes=15 * set_size)
    log2.update_high_watermark(15)
    assert log2.delete_old_segments() == 0 and len(log2.segments) == 3


def test_time_based_retention(tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    log = _three_segments(tmp_path, clock, retention_ms=10_000)
    log.update_high_watermark(15)
    assert log.delete_old_segments() == 0
    clock.advance(10_001)
    with caplog.at_level(logging.INFO, logger="samsa.storage.log"):
        assert log.delete_old_segments() == 3 and len(log.segments) == 1
    assert (
        "deleting 3 segment(s), offsets 0 to 14 " in caplog.text and "past retention.ms 10000" in caplog.text
    )


def test_compact_policy_keeps_segments_but_honours_log_start(tmp_path: Path, clock: ManualClock) -> None:
    log = _three_segments(tmp_path, clock, retention_ms=10, cleanup_policy="compact")
    log.update_high_watermark(15)
    clock.advance(100)
    assert log.delete_old_segments() == 0
    log.maybe_increment_log_start_offset(7)
    assert log.delete_old_segments() == 1 and log.segments.first_base_offset() == 5
    both = _three_segments(tmp_path / "b", clock, retention_ms=10, cleanup_policy="compact,delete")
    both.update_high_watermark(15)
    clock.advance(100)
    assert both.delete_old_segments() == 3


def test_delete_records(tmp_path: Path, clock: ManualClock) -> None:
    log = _three_segments(tmp_path, clock, retention_ms=-1)
    log.update_high_watermark(15)
    for start, remaining in ((1, 3), (6, 2), (15, 1)):
        log.maybe_increment_log_start_offset(start)
        log.delete_old_segments()
        assert len(log.segments) == remaining and log.log_start_offset == start
    with pytest.raises(OffsetOutOfRangeError):
        log.read(14, 100, LOG_END)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(16)


def test_deletable_segments_never_returns_empty_active(tmp_path: Path, clock: ManualClock) -> None:
    log = _three_segments(tmp_path, clock)
    log.update_high_watermark(15)
    assert [s.base_offset for s in log.deletable_segments(lambda s, n: True)] == [0, 5, 10]
    log.roll()
    assert [s.base_offset for s in log.deletable_segments(lambda s, n: True)] == [0, 5, 10]
    seen: list[tuple[int, int | None]] = []

    def record(s: object, n: object) -> bool:
        seen.append((s.base_offset, n.base_offset if n else None))  # type: ignore[attr-defined]
        return True

    log.deletable_segments(record)
    assert seen == [(0, 5), (5, 10), (10, 15), (15, None)]


def test_update_config(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.update_config(small_config(index_interval_bytes=1))
    assert log.active_segment.index_interval_bytes == 1


def test_close_and_reopen_clean(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_bytes=300))
    for i in range(20):
        log.append_as_leader(v2([0, 1], [i, i]))
    log.close()
    again = open_log(
        tmp_path, clock, small_config(segment_bytes=300), recovery_point=0, had_clean_shutdown=True
    )
    assert again.log_end_offset == 40 and again.recovery_point == 40
    assert [r.offset for r in log_records(again)] == list(range(40))
    again.append_as_leader(leader_batch(1))
    assert again.log_end_offset == 41


def test_delete_removes_the_directory(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(leader_batch(1))
    log.delete()
    assert not (tmp_path / "topic-0").exists()
    assert not os.path.exists(tmp_path / "topic-0" / "leader-epoch-checkpoint")


def test_io_errors_become_kafka_storage_error(tmp_path: Path, clock: ManualClock) -> None:
    from samsa.storage.errors import KafkaStorageError

    log = open_log(tmp_path, clock)
    log.append_as_leader(leader_batch(1))
    os.close(log.active_segment.log.fd)  # the descriptor goes bad underneath the log
    with pytest.raises(KafkaStorageError) as err:
        log.append_as_leader(leader_batch(1))
    assert err.value.path == tmp_path / "topic-0" and isinstance(err.value, OSError)
    log.active_segment.log._fd = -1
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(KafkaStorageError):
        Log.open(blocker / "t-0", small_config(), clock)


def test_hw_reads_after_roll(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(leader_batch(2))
    assert log.read(0, 1000).size == 0
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert offsets_read(log, 0, isolation=FetchIsolation.HIGH_WATERMARK) == [0, 1]
    log.append_as_leader(leader_batch(1))
    assert offsets_read(log, 0, isolation=FetchIsolation.HIGH_WATERMARK) == [0, 1]
    assert log.read(2, 1000).size == 0 and offsets_read(log, 2) == [2]


def test_roll_replaces_empty_active_segment_with_trimmed_index(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.active_segment.offset_index.resize(0)  # KAFKA-6388: a trimmed, empty active segment reports full
    assert log.active_segment.offset_index.is_full()
    log.append_as_leader(leader_batch(1))
    assert len(log.segments) == 1 and log.active_segment.offset_index.max_entries > 1
    assert [r.offset for r in log_records(log)] == [0]


def test_reopen_then_truncate(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_bytes=200))
    for _ in range(6):
        log.append_as_leader(leader_batch(1))
    log.close()
    again = open_log(tmp_path, clock, small_config(segment_bytes=200), had_clean_shutdown=True)
    first = again.segments.first_base_offset()
    assert first == 0 and len(again.segments) > 1
    again.truncate_to(1)
    assert len(again.segments) == 1 and again.log_end_offset == 1


def test_fetch_beyond_bound_cases(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, small_config(segment_bytes=200))
    for _ in range(6):
        log.append_as_leader(leader_batch(1))
    log.update_high_watermark(2)
    at_bound = log.read(2, 1000)
    assert at_bound.size == 0 and at_bound.fetch_offset_metadata == log.high_watermark_metadata()
    beyond = log.read(4, 1000)
    assert beyond.size == 0 and beyond.fetch_offset_metadata.message_offset == 4
    assert beyond.fetch_offset_metadata.segment_base_offset == log.segments.floor_segment(4).base_offset  # type: ignore[union-attr]
    assert offsets_read(log, 0, isolation=FetchIsolation.HIGH_WATERMARK)[-1] < 2
