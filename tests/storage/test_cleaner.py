"""Log compaction (``samsa.storage.log_cleaner``) on real files: a model of what survives, crashes at each step of
the swap, producer state, scheduling and the produce-path key check."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_helpers import decode_all

from samsa.clock import ManualClock
from samsa.records import CompressionType, Record, build_batch, build_legacy_message_set, iter_batches
from samsa.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, offset_checkpoint
from samsa.storage.cleaner import clean, clean_log, commit, plan
from samsa.storage.config import LogConfig
from samsa.storage.errors import CleaningAbortedError, RecordValidationError
from samsa.storage.log import FetchIsolation, Log
from samsa.storage.log_cleaner import (
    FULL_DISK_RETRY_MS,
    CleanerConfig,
    cleanable_offsets,
    filthiest_log,
    log_to_clean,
)
from samsa.storage.log_manager import LogManager
from samsa.storage.segment import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX
from samsa.storage.topic import TopicPartition

TP = TopicPartition("compacted", 0)
RETENTION = 1_000  # delete.retention.ms
BIG_MAP = 1_000_000

Row = tuple[int, bytes | None, bytes | None]  # offset, key, value


def compact_config(**props: int | str | float) -> LogConfig:
    base: dict[str, int | str | float] = {
        "cleanup.policy": "compact",
        "segment.bytes": 600,
        "segment.index.bytes": 1024,
        "index.interval.bytes": 64,
        "file.delete.delay.ms": 0,
        "delete.retention.ms": RETENTION,
        "min.cleanable.dirty.ratio": 0.0,
    }
    base.update({k.replace("_", "."): v for k, v in props.items()})
    return LogConfig.from_properties(base)  # type: ignore[arg-type]


def keyed(items: list[tuple[bytes | None, bytes | None]], timestamp: int, **kwargs: object) -> bytes:
    """A producer's batch (offsets from 0) of (key, value) records."""
    return build_batch([Record(i, timestamp, k, v) for i, (k, v) in enumerate(items)], **kwargs)  # type: ignore[arg-type]


def append(
    log: Log, items: list[tuple[bytes | None, bytes | None]], clock: ManualClock, **kwargs: object
) -> int:
    info = log.append_as_leader(keyed(items, clock.milliseconds(), **kwargs))
    log.update_high_watermark(log.log_end_offset)
    return info.first_offset


def rows(log: Log) -> list[Row]:
    """Every record in the segment files, in file order."""
    out: list[Row] = []
    for segment in log.segments:
        out.extend((r.offset, r.key, r.value) for r in decode_all(segment.log.read(0, segment.size)))
    return out


def read_rows(log: Log) -> list[Row]:
    """Every record as a consumer reads it, fetch after fetch from the log start (gaps in offsets and all)."""
    out: list[Row] = []
    position = log.log_start_offset
    while position < log.log_end_offset:
        data = log.read(position, 10**6, FetchIsolation.LOG_END).read_bytes()
        got = [(r.offset, r.key, r.value) for r in decode_all(data) if r.offset >= position]
        if not got:
            skipped = [b.next_offset for b in iter_batches(data)]  # only empty batches: go past them
            if not skipped:
                break  # nothing left below the log end but removed records
            position = max(skipped)
            continue
        out.extend(got)
        position = got[-1][0] + 1
    return out


def run_clean(log: Log, clock: ManualClock, checkpoint: int | None, entries: int = BIG_MAP) -> int:
    return clean_log(log_to_clean(TP, log, checkpoint, clock.milliseconds()), clock, entries).end_offset


def reopen(log: Log, clock: ManualClock, clean_shutdown: bool = True) -> Log:
    if clean_shutdown:
        log.close()
    else:
        for segment in log.segments:
            segment.close_handlers()
    again = Log.open(log.directory, log.config, clock, had_clean_shutdown=clean_shutdown)
    again.update_high_watermark(again.log_end_offset)
    return again


# --- the model ------------------------------------------------------------------------------------------------


@dataclass
class Batch:
    base: int
    last: int
    horizon: int | None = None


@dataclass
class Model:
    """What the log must hold: the records present, the batches (for delete horizons) and the checkpoint."""

    present: dict[int, tuple[bytes, bytes | None]] = field(default_factory=dict)
    batches: list[Batch] = field(default_factory=list)
    checkpoint: int | None = None

    def append(self, first: int, items: list[tuple[bytes, bytes | None]]) -> None:
        for i, item in enumerate(items):
            self.present[first + i] = item
        self.batches.append(Batch(first, first + len(items) - 1))

    def clean(self, end: int, cleaned_below: int, now: int) -> None:
        """A cleaning up to ``end`` that rewrote the segments below ``cleaned_below`` at time ``now``."""
        latest: dict[bytes, int] = {}
        for offset in sorted(self.present):
            if offset < end:
                latest[self.present[offset][0]] = offset
        for batch in self.batches:
            if batch.base >= cleaned_below:
                continue
            kept_tombstone = False
            for offset in range(batch.base, batch.last + 1):
                if offset not in self.present:
                    continue
                key, value = self.present[offset]
                keep = offset >= end or (
                    latest[key] == offset
                    and (value is not None or batch.horizon is None or now < batch.horizon)
                )
                if not keep:
                    del self.present[offset]
                elif value is None:
                    kept_tombstone = True
            if kept_tombstone and batch.horizon is None:
                batch.horizon = now + RETENTION
        self.checkpoint = end

    def rows(self) -> list[Row]:
        return [(o, k, v) for o, (k, v) in sorted(self.present.items())]


KEYS = [b"a", b"b", b"c", b"d", b"e", b"f"]
record_st = st.tuples(
    st.sampled_from(KEYS[:4]), st.one_of(st.none(), st.binary(min_size=1, max_size=30), st.just(b"v"))
)
append_st = st.tuples(st.just("append"), st.lists(record_st, min_size=1, max_size=4))
clean_st = st.tuples(st.just("clean"), st.sampled_from([1, 2, 3, BIG_MAP]))
op_st = st.one_of(  # appends and cleanings weighted up, so that cleanings have something to remove
    append_st,
    append_st,
    append_st,
    append_st,
    clean_st,
    clean_st,
    st.tuples(st.just("roll"), st.none()),
    st.tuples(st.just("advance"), st.sampled_from([10, RETENTION // 2, RETENTION + 1])),
    st.tuples(st.just("reopen"), st.booleans()),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op_st, min_size=5, max_size=40), segment_bytes=st.sampled_from([250, 600, 4096]))
def test_compaction_keeps_the_latest_record_of_each_key(
    ops: list[tuple[str, object]], segment_bytes: int
) -> None:
    clock = ManualClock(start_ms=1_700_000_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        log = Log.open(Path(tmp) / "compacted-0", compact_config(segment_bytes=segment_bytes), clock)
        model = Model()
        for name, arg in ops:
            if name == "append":
                items: list[tuple[bytes, bytes | None]] = arg  # type: ignore[assignment]
                model.append(append(log, items, clock), items)  # type: ignore[arg-type]
            elif name == "roll":
                log.roll()
            elif name == "clean":
                bases = [s.base_offset for s in log.segments]
                end = run_clean(log, clock, model.checkpoint, arg)  # type: ignore[arg-type]
                cleaned_below = min((b for b in bases if b >= end), default=log.log_end_offset)
                model.clean(end, cleaned_below, clock.milliseconds())
            elif name == "advance":
                clock.advance(arg)  # type: ignore[arg-type]
            else:
                log = reopen(log, clock, clean_shutdown=bool(arg))
            expected = model.rows()
            assert rows(log) == expected
            assert read_rows(log) == expected
        log.close()
        log = reopen(log, clock, clean_shutdown=False)
        assert rows(log) == model.rows()
        names = [p.name for p in log.directory.iterdir()]
        assert not [n for n in names if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX, DELETED_SUFFIX))]
        log.close()


def test_tombstones_go_after_delete_retention_and_offsets_never_move(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    append(log, [(b"a", b"1"), (b"b", b"1")], clock)
    append(log, [(b"a", None), (b"c", b"1")], clock)
    log.roll()
    append(log, [(b"d", b"1")], clock)
    end = run_clean(log, clock, None)
    assert end == 4
    assert rows(log) == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1"), (4, b"d", b"1")]
    stamped = next(iter_batches(log.segments.first_segment().log.read(0, 10**6)))  # type: ignore[union-attr]
    # the first batch keeps only b, and its base and last offsets
    assert (stamped.base_offset, stamped.last_offset, stamped.records_count) == (0, 1, 1)
    horizon_batch = list(iter_batches(log.segments.first_segment().log.read(0, 10**6)))[1]  # type: ignore[union-attr]
    assert horizon_batch.delete_horizon_ms == clock.milliseconds() + RETENTION
    clock.advance(RETENTION - 1)
    run_clean(log, clock, end)
    assert (2, b"a", None) in rows(log)
    clock.advance(1)
    run_clean(log, clock, end)
    assert rows(log) == [(1, b"b", b"1"), (3, b"c", b"1"), (4, b"d", b"1")]
    assert log.log_end_offset == 5
    log = reopen(log, clock)
    assert read_rows(log) == [(1, b"b", b"1"), (3, b"c", b"1"), (4, b"d", b"1")]


def test_rebuilt_batches_keep_codec_timestamps_and_last_offset(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    log.append_as_leader(
        build_batch(
            [Record(0, 100, b"a", b"old"), Record(1, 105, b"b", b"keep"), Record(2, 107, b"c", b"old")],
            compression=CompressionType.GZIP,
        )
    )
    append(log, [(b"a", b"new"), (b"c", b"new")], clock)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    run_clean(log, clock, None)
    batch = next(iter_batches(log.segments.first_segment().log.read(0, 10**6)))  # type: ignore[union-attr]
    assert (batch.base_offset, batch.last_offset, batch.compression) == (0, 2, int(CompressionType.GZIP))
    assert batch.max_timestamp == 105 and batch.records_count == 1
    assert [(r.offset, r.timestamp) for r in decode_all(bytes(batch.raw()))] == [(1, 105)]


def test_last_batch_of_a_producer_stays_as_an_empty_batch(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    producer = {"producer_id": 7, "producer_epoch": 2}
    append(log, [(b"a", b"1")], clock, base_sequence=0, **producer)
    append(log, [(b"a", b"2"), (b"b", b"2")], clock, base_sequence=1, **producer)
    append(log, [(b"a", b"3"), (b"b", b"3")], clock)  # no producer id
    log.roll()
    run_clean(log, clock, None)
    batches = list(iter_batches(log.segments.first_segment().log.read(0, 10**6)))  # type: ignore[union-attr]
    shapes = [
        (b.base_offset, b.last_offset, b.records_count, b.producer_id, b.last_sequence) for b in batches
    ]
    assert shapes == [(1, 2, 0, 7, 2), (3, 4, 2, -1, -1)]
    assert batches[0].base_timestamp == -1
    log = reopen(log, clock, clean_shutdown=False)
    entry = log.producer_state.last_entry(7)
    assert entry is not None and (entry.producer_epoch, entry.last_seq) == (2, 2)
    # the idempotent producer carries on with sequence 3
    append(log, [(b"c", b"1")], clock, base_sequence=3, **producer)


def test_records_without_key_are_dropped_by_the_cleaner(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    log.append_as_follower(build_batch([Record(0, 1, None, b"x"), Record(1, 1, b"k", b"v")]))
    log.append_as_follower(build_batch([Record(2, 1, b"k", b"w")]))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    run_clean(log, clock, None)
    assert rows(log) == [(2, b"k", b"w")]


def test_a_compacted_log_refuses_records_without_key(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    with pytest.raises(RecordValidationError) as raised:
        log.append_as_leader(keyed([(b"k", b"v"), (None, b"v"), (None, None)], 1))
    assert [i for i, _ in raised.value.record_errors] == [1, 2]
    assert "Compacted topic cannot accept message without key in topic partition compacted-0." in str(
        raised.value
    )
    assert log.log_end_offset == 0
    plain = Log.open(tmp_path / "plain-0", LogConfig(), clock)
    plain.append_as_leader(keyed([(None, b"v")], 1))
    assert plain.log_end_offset == 1


def test_small_segments_are_merged_within_segment_bytes(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(segment_bytes=400), clock)
    for i in range(60):
        append(log, [(KEYS[i % 3], b"v%d" % i)], clock)
    assert len(log.segments) > 10
    end = run_clean(log, clock, None)
    end = run_clean(log, clock, end)
    assert len(log.segments) <= 3
    assert [r[0] for r in rows(log)][:3] == [end - 3, end - 2, end - 1]
    assert all(s.size <= 400 for s in log.segments)


def test_min_compaction_lag_and_dirty_ratio_choose_what_is_cleaned(tmp_path: Path) -> None:
    clock = ManualClock()
    config = compact_config(min_compaction_lag_ms=5_000, min_cleanable_dirty_ratio=0.5)
    log = Log.open(tmp_path / "compacted-0", config, clock)
    for _ in range(3):
        append(log, [(b"a", b"x" * 50)], clock)
        log.roll()
    clock.advance(6_000)
    append(log, [(b"a", b"y" * 50)], clock)
    log.roll()
    append(log, [(b"a", b"z")], clock)
    first_dirty, first_uncleanable, now = cleanable_offsets(log, None, clock.milliseconds())
    assert (first_dirty, first_uncleanable, now) == (0, 3, False)  # offset 3 is younger than the lag
    assert filthiest_log({TP: log}, {}, clock.milliseconds()) is not None
    assert filthiest_log({TP: log}, {TP: 3}, clock.milliseconds()) is None  # nothing dirty below the lag
    lagged = log_to_clean(TP, log, 3, clock.milliseconds())
    assert lagged.cleanable_bytes == 0 and not lagged.needs_compaction_now


def test_max_compaction_lag_forces_a_cleaning(tmp_path: Path) -> None:
    clock = ManualClock()
    config = compact_config(max_compaction_lag_ms=1_000, min_cleanable_dirty_ratio=0.99)
    log = Log.open(tmp_path / "compacted-0", config, clock)
    for i in range(4):
        append(log, [(b"k%d" % i, b"v")], clock)
        log.roll()
    assert filthiest_log({TP: log}, {TP: 3}, clock.milliseconds()) is None
    clock.advance(1_001)
    forced = filthiest_log({TP: log}, {TP: 3}, clock.milliseconds())
    assert forced is not None and forced.needs_compaction_now


def test_commit_refuses_when_the_log_changed(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    for i in range(6):
        append(log, [(b"k", b"v%d" % i)], clock)
        log.roll()
    before = rows(log)
    result = clean(plan(log_to_clean(TP, log, None, clock.milliseconds()), clock, BIG_MAP))
    log.maybe_increment_log_start_offset(2)
    log.delete_old_segments()
    with pytest.raises(CleaningAbortedError):
        commit(result)
    assert rows(log) == [r for r in before if r[0] >= 2]
    assert not list(log.directory.glob("*" + CLEANED_SUFFIX))


# --- crashes during the swap -------------------------------------------------------------------------------------


def crash_fixture(tmp_path: Path) -> tuple[Log, ManualClock, list[Row], list[Row]]:
    """A log of several segments, and what it holds before and after a cleaning (run on a copy)."""
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(segment_bytes=300), clock)
    for i in range(30):
        append(log, [(KEYS[i % 4], b"v%d" % i)], clock)
    log.roll()
    append(log, [(b"z", b"active")], clock)
    log.flush(log.log_end_offset)
    before = rows(log)
    copy_dir = tmp_path / "copy" / "compacted-0"
    shutil.copytree(log.directory, copy_dir)
    copy = Log.open(copy_dir, log.config, clock, had_clean_shutdown=True)
    copy.update_high_watermark(copy.log_end_offset)
    run_clean(copy, clock, None)
    after = rows(copy)
    copy.close()
    assert after != before
    return log, clock, before, after


def crashed_reopen(log: Log, clock: ManualClock) -> list[Row]:
    for segment in log.segments:
        segment.close_handlers()
    again = Log.open(log.directory, log.config, clock, had_clean_shutdown=False)
    names = [p.name for p in log.directory.iterdir()]
    assert not [n for n in names if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX, DELETED_SUFFIX))]
    again.update_high_watermark(again.log_end_offset)
    found = read_rows(again)
    assert found == rows(again)
    assert again.log_end_offset == 31
    again.close()
    return found


def cleaned_result(log: Log, clock: ManualClock):  # type: ignore[no-untyped-def]
    result = clean(plan(log_to_clean(TP, log, None, clock.milliseconds()), clock, BIG_MAP))
    assert len(result.groups) >= 2
    return result


def test_crash_after_cleaned_files_are_written_keeps_the_old_segments(tmp_path: Path) -> None:
    log, clock, before, _ = crash_fixture(tmp_path)
    cleaned_result(log, clock)
    assert list(log.directory.glob("*.log" + CLEANED_SUFFIX))
    assert crashed_reopen(log, clock) == before


def test_crash_while_renaming_to_swap_keeps_the_old_segments(tmp_path: Path) -> None:
    log, clock, before, _ = crash_fixture(tmp_path)
    result = cleaned_result(log, clock)
    highest = result.groups[-1][1]
    highest.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)  # highest first, then the crash
    assert crashed_reopen(log, clock) == before


def test_crash_inside_one_segment_rename_keeps_the_old_segments(tmp_path: Path) -> None:
    log, clock, before, _ = crash_fixture(tmp_path)
    result = cleaned_result(log, clock)
    only = result.groups[-1][1]
    only.log.rename_to(only.log.path.with_name(only.log.path.name.replace(CLEANED_SUFFIX, SWAP_SUFFIX)))
    assert crashed_reopen(log, clock) == before


def test_crash_after_every_swap_rename_gives_the_new_segments(tmp_path: Path) -> None:
    log, clock, _, after = crash_fixture(tmp_path)
    result = cleaned_result(log, clock)
    for _, segment in reversed(result.groups):
        segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
    assert crashed_reopen(log, clock) == after


def test_crash_while_old_segments_are_renamed_deleted_gives_the_new_segments(tmp_path: Path) -> None:
    log, clock, _, after = crash_fixture(tmp_path)
    result = cleaned_result(log, clock)
    for _, segment in reversed(result.groups):
        segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
    old = [source.segment for group, _ in result.groups for source in group]
    for segment in old[: len(old) // 2]:
        segment.change_file_suffixes("", DELETED_SUFFIX)
    assert crashed_reopen(log, clock) == after


def test_crash_while_dropping_the_swap_suffix_gives_the_new_segments(tmp_path: Path) -> None:
    log, clock, _, after = crash_fixture(tmp_path)
    result = cleaned_result(log, clock)
    for _, segment in reversed(result.groups):
        segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
    for group, _ in result.groups:
        for source in group:
            source.segment.change_file_suffixes("", DELETED_SUFFIX)
    first = result.groups[0][1]
    first.change_file_suffixes(SWAP_SUFFIX, "")
    second = result.groups[1][1]
    second.log.rename_to(second.log.path.with_name(second.log.path.name.replace(SWAP_SUFFIX, "")))
    assert crashed_reopen(log, clock) == after


# --- scheduling ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("threaded", [False, True])
def test_log_manager_cleans_on_its_schedule_and_checkpoints(tmp_path: Path, threaded: bool) -> None:
    clock = ManualClock()
    manager = LogManager(
        [tmp_path],
        LogConfig(),
        clock,
        cleaner_config=CleanerConfig(backoff_ms=1_000),
        cleaner_threaded=threaded,
    )
    manager.startup()
    overrides = compact_config().to_properties()
    overrides.pop("segment.index.bytes")
    (log,) = manager.create_topic(TP.topic, 1, {**overrides, "segment.bytes": "300"})
    plain = manager.get_or_create_log(TopicPartition("plain", 0))
    for i in range(40):
        append(log, [(KEYS[i % 2], b"v%d" % i)], clock)
        append(plain, [(KEYS[i % 2], b"v%d" % i)], clock)
    size = log.size
    plain_size = plain.size
    ran: list[str] = []
    for _ in range(500):
        ran += manager.schedule_due(clock.milliseconds())
        if "cleaner" in ran:
            break
        if threaded:
            import time

            time.sleep(0.01)
    assert "cleaner" in ran
    assert log.size < size / 3 and plain.size == plain_size
    end = manager.cleaner_checkpoints()[TP]
    assert end == log.active_segment.base_offset
    assert offset_checkpoint(tmp_path / CLEANER_OFFSET_CHECKPOINT).read_dict() == {TP: end}
    assert manager.schedule_due(clock.milliseconds()) == []  # backing off: nothing dirty
    manager.shutdown()
    again = LogManager([tmp_path], LogConfig(), clock, cleaner_threaded=threaded)
    again.startup()
    assert again.cleaner_checkpoints() == {TP: end}
    reloaded = again.get_log(TP)
    assert reloaded is not None
    assert [r[2] for r in rows(reloaded)][-2:] == [b"v38", b"v39"]
    again.shutdown()


def test_a_corrupt_log_is_marked_uncleanable_and_left_alone(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = LogManager([tmp_path], LogConfig(), clock, cleaner_threaded=False)
    manager.startup()
    bad, good = (manager.create_topic(name, 1, {"cleanup.policy": "compact"})[0] for name in ("bad", "good"))
    for log in (bad, good):
        for i in range(4):
            append(log, [(b"k", b"value-%d" % i)], clock)
        log.roll()
    first = bad.segments.first_segment()
    assert first is not None
    os.pwrite(first.log.fd, b"\xff", first.size - 2)  # inside a record value: only the CRC tells
    before, bad_size = rows(good), bad.size
    now = clock.milliseconds()
    assert [manager.clean_logs(now) for _ in range(3)] == [False, True, False]  # bad fails, good is cleaned
    assert list(manager.cleaner.uncleanable) == [TopicPartition("bad", 0)]
    assert manager.cleaner_checkpoints() == {TopicPartition("good", 0): 4}
    assert len(rows(good)) < len(before) and bad.size == bad_size
    assert not list(bad.directory.glob("*" + CLEANED_SUFFIX))
    manager.delete_topic("bad")
    assert not manager.cleaner.uncleanable
    manager.shutdown()


def test_deleting_a_log_stops_its_cleaning(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = LogManager([tmp_path], LogConfig(), clock)
    manager.startup()
    (log,) = manager.create_topic(TP.topic, 1, {"cleanup.policy": "compact", "segment.bytes": "300"})
    for i in range(200):
        append(log, [(KEYS[i % 3], b"v%d" % i)], clock)
    log.roll()
    manager.clean_logs(clock.milliseconds())
    assert manager.cleaner.busy
    manager.delete_topic(TP.topic)
    assert not manager.cleaner.busy
    assert manager.cleaner_checkpoints() == {}
    manager.shutdown()


def test_legacy_messages_are_compacted_too(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    wrapper = build_legacy_message_set(
        1,
        [Record(0, 5, b"a", b"1"), Record(1, 5, b"b", b"1"), Record(2, 5, b"c", b"1")],
        CompressionType.GZIP,
    )
    log.append_as_follower(wrapper)
    log.append_as_follower(build_legacy_message_set(1, [Record(3, 6, b"a", b"2"), Record(4, 6, b"c", None)]))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    run_clean(log, clock, None)
    assert rows(log) == [(1, b"b", b"1"), (3, b"a", b"2"), (4, b"c", None)]
    shallow = list(iter_batches(log.segments.first_segment().log.read(0, 10**6)))  # type: ignore[union-attr]
    assert [(b.magic, b.compression, b.last_offset) for b in shallow[:1]] == [
        (1, int(CompressionType.GZIP), 1)
    ]
    log = reopen(log, clock, clean_shutdown=False)
    assert read_rows(log) == [(1, b"b", b"1"), (3, b"a", b"2"), (4, b"c", None)]


def test_nothing_at_or_above_the_high_watermark_is_cleaned(tmp_path: Path) -> None:
    clock = ManualClock()
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    for i in range(6):
        append(log, [(b"k", b"v%d" % i)], clock)
        log.roll()
    log.update_high_watermark(3)
    assert cleanable_offsets(log, None, clock.milliseconds())[1] == 3
    assert run_clean(log, clock, None) == 3
    assert [r[0] for r in rows(log)] == [2, 3, 4, 5]


def test_a_full_disk_defers_a_cleaning_and_it_runs_once_the_disk_has_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cleaning frees space on a compacted topic: a full disk must not stop it for good (Kafka marks the log
    uncleanable until a restart). The cleaning is tried again later, and runs once writes succeed."""
    import errno

    clock = ManualClock()
    manager = LogManager([tmp_path], LogConfig(), clock, cleaner_threaded=False)
    manager.startup()
    log = manager.create_topic("c", 1, {"cleanup.policy": "compact"})[0]
    for i in range(6):
        append(log, [(b"k", b"value-%d" % i)], clock)
    log.roll()
    real_pwrite = os.pwrite

    def full(*args: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", full)
    assert not manager.clean_logs(clock.milliseconds())
    assert not manager.cleaner.uncleanable and TopicPartition("c", 0) in manager.cleaner.deferred
    monkeypatch.setattr(os, "pwrite", real_pwrite)
    assert not manager.clean_logs(clock.milliseconds() + 1)  # not at once: it waits its turn
    clock.advance(FULL_DISK_RETRY_MS + CleanerConfig().backoff_ms)
    assert manager.clean_logs(clock.milliseconds())
    assert [r[2] for r in rows(log)] == [b"value-5"] and not manager.cleaner.deferred
    manager.shutdown()
