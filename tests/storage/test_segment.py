"""LogSegment: Kafka's LogSegmentTest items (spec 12.1), the index-entry rule (2.3) and FileRecords (12.8)."""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_helpers import append_v1, decode_all, open_segment, segment_records, v1, v2

from samsa.clock import ManualClock
from samsa.records import CorruptRecordError, Record, build_batch, build_legacy_message_set
from samsa.records.batch_view import RECORD_BATCH_OVERHEAD
from samsa.storage import file_records
from samsa.storage.config import LogConfig
from samsa.storage.errors import LogSegmentOffsetOverflowError
from samsa.storage.file_records import FileRecords
from samsa.storage.file_slice import LogOffsetMetadata
from samsa.storage.segment import LogSegment, RollParams, TimestampAndOffset

INT_MAX = 2**31 - 1


@pytest.mark.parametrize(
    ("base", "largest"),
    [(0, -(2**31)), (0, 2**31), (1, 0), (100, 10), (2**31, 0), (-(2**31), 0), (2**31, 2**32)],
)
def test_append_offset_overflow(tmp_path: Path, clock: ManualClock, base: int, largest: int) -> None:
    segment = open_segment(tmp_path, base, clock)
    with pytest.raises(LogSegmentOffsetOverflowError) as err:
        segment.append(largest, 0, largest, v1(0, 0))
    assert (err.value.base_offset, err.value.offset) == (base, largest)
    assert segment.size == 0


def test_read_on_empty_segment(tmp_path: Path, clock: ManualClock) -> None:
    assert open_segment(tmp_path, 40, clock).read(40, 300) is None


def test_read_before_first_offset(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock)
    append_v1(segment, range(50, 54))
    info = segment.read(41, 300)
    assert info is not None
    assert [r.offset for r in decode_all(info.read_bytes())] == [50, 51, 52, 53]


def test_read_after_last_and_from_gap(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock)
    append_v1(segment, [50, 51])
    assert segment.read(52, 200) is None
    append_v1(segment, [60, 61])
    info = segment.read(55, 200)
    assert info is not None and [r.offset for r in decode_all(info.read_bytes())] == [60, 61]


def test_read_when_no_max_position(tmp_path: Path, clock: ManualClock) -> None:
    """A zero-size read gives empty records with the metadata of the batch holding the offset."""
    segment = open_segment(tmp_path, 40, clock)
    append_v1(segment, [50, 51])
    for offset, position in ((48, 0), (50, 0), (51, 39)):
        info = segment.read(offset, 0)
        assert info is not None and info.size == 0
        assert info.fetch_offset_metadata == LogOffsetMetadata(offset, 40, position)
    for min_one in (True, False):
        assert segment.read(52, 100, None, min_one) is None
        assert segment.read(53, 100, None, min_one) is None


def test_read_with_max_position_and_min_one(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 0, clock)
    append_v1(segment, [0, 1, 2])
    info = segment.read(0, 1)
    assert info is not None and info.size == 1 and info.first_entry_incomplete
    info = segment.read(0, 1, min_one_message=True)
    assert info is not None and info.size == 39 and not info.first_entry_incomplete
    info = segment.read(0, 1000, max_position=78)
    assert info is not None and [r.offset for r in decode_all(info.read_bytes())] == [0, 1]
    with pytest.raises(ValueError):
        segment.read(0, -1)


def test_read_inside_a_batch_returns_the_whole_batch(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 0, clock)
    first, second = v2([0, 1]), v2([2, 3])
    segment.append(1, 10, 1, first)
    segment.append(3, 30, 3, second)
    info = segment.read(1, 1000)
    assert info is not None and info.fetch_offset_metadata.relative_position_in_segment == 0
    assert info.read_bytes() == first + second
    info = segment.read(3, 1000)
    assert info is not None and info.read_bytes() == second


def test_truncate(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock)
    offset = 40
    for _ in range(30):
        append_v1(segment, [offset, offset + 1])
        segment.truncate_to(offset + 1)
        assert [r.offset for r in segment_records(segment)][-1] == offset
        info = segment.read(offset, 10_000)
        assert info is not None and [r.offset for r in decode_all(info.read_bytes())] == [offset]
        offset += 1


def test_truncate_empty_segment(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock, index_bytes=1000)
    segment.close()
    reopened = open_segment(tmp_path, 40, clock, index_bytes=1000)
    assert reopened.offset_index.entries == 0 and reopened.time_index.entries == 0
    clock.advance(500)
    reopened.truncate_to(57)
    assert not reopened.offset_index.is_full() and not reopened.time_index.is_full()
    assert reopened.time_waited_for_roll(clock.milliseconds(), -1) == 0
    config = LogConfig()
    clock.advance(config.segment_ms + 1)
    params = RollParams(config.segment_ms, config.segment_bytes, -1, 100, 1024, clock.milliseconds())
    assert not reopened.should_roll(params)
    params = RollParams(
        config.segment_ms, config.segment_bytes, -1, 40 + INT_MAX + 200, 1024, clock.milliseconds()
    )
    assert reopened.should_roll(params)


def test_reload_largest_timestamp_and_next_offset_after_truncation(
    tmp_path: Path, clock: ManualClock
) -> None:
    size = len(v1(0, 0))
    segment = open_segment(tmp_path, 40, clock, interval=2 * size - 1)
    append_v1(segment, range(40, 70))
    assert segment.time_index.entries == 14
    segment.truncate_to(41)
    assert segment.time_index.entries == 0
    assert segment.largest_timestamp == 400
    assert segment.read_next_offset() == 41


def test_truncate_full(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock)
    append_v1(segment, [40, 41])
    clock.advance(1000)
    segment.truncate_to(0)
    assert segment.size == 0 and segment.read(0, 1024) is None
    assert segment.created_ms == clock.milliseconds()
    assert not segment.offset_index.is_full() and not segment.time_index.is_full()
    append_v1(segment, [42])
    assert [r.offset for r in segment_records(segment)] == [42]


def test_find_offset_by_timestamp(tmp_path: Path, clock: ManualClock) -> None:
    size = len(v1(0, 0))
    segment = open_segment(tmp_path, 40, clock, interval=2 * size - 1)
    append_v1(segment, range(40, 50))
    assert segment.largest_timestamp == 490
    assert [segment.time_index.entry(i) for i in range(segment.time_index.entries)] == [
        type(segment.time_index.entry(0))(ts, ts // 10) for ts in (420, 440, 460, 480)
    ]
    for target, expected in ((420, 42), (421, 43), (430, 43), (431, 44), (401, 41), (399, 40)):
        found = segment.find_offset_by_timestamp(target, 40)
        assert found is not None and found.offset == expected, target
    assert segment.find_offset_by_timestamp(491, 40) is None


def test_find_offset_by_timestamp_reports_v2_epoch(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 0, clock)
    segment.append(0, 10, 0, v2([0], [10], epoch=0))
    segment.append(1, 11, 1, v2([1], [11], epoch=1))
    assert segment.find_offset_by_timestamp(9, 0) == TimestampAndOffset(10, 0, 0)
    assert segment.find_offset_by_timestamp(10, 0) == TimestampAndOffset(10, 0, 0)
    assert segment.find_offset_by_timestamp(11, 0) == TimestampAndOffset(11, 1, 1)
    assert segment.find_offset_by_timestamp(12, 0) is None
    assert segment.find_offset_by_timestamp(10, 1) == TimestampAndOffset(11, 1, 1)


def test_next_offset_calculation(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock)
    assert segment.read_next_offset() == 40
    append_v1(segment, [50, 51, 52])
    assert segment.read_next_offset() == 53


def test_change_file_suffixes_does_not_create_indexes(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock)
    log_path = segment.log.path
    assert log_path.exists()
    assert not segment.offset_index.path.exists() and not segment.time_index.path.exists()
    segment.change_file_suffixes("", ".deleted")
    assert segment.log.path.name == "00000000000000000040.log.deleted" and segment.log.path.exists()
    assert segment.offset_index.path.name == "00000000000000000040.index.deleted"
    assert not segment.offset_index.path.exists() and not segment.time_index.path.exists()
    assert segment.has_suffix(".deleted")
    segment.offset_index.entries  # noqa: B018 - first access creates the file
    assert segment.offset_index.path.exists()
    segment.change_file_suffixes(".deleted", "")
    assert segment.log.path == log_path and segment.offset_index.path.name == "00000000000000000040.index"


def test_recovery_fixes_corrupt_index(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 0, clock, index_bytes=8000)
    append_v1(segment, range(100))
    expected = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    rng = random.Random(3)
    segment.offset_index.flush()
    segment.offset_index.close_handler()
    segment.offset_index.path.write_bytes(
        bytes(rng.getrandbits(8) for _ in range(segment.offset_index.path.stat().st_size))
    )
    assert segment.recover() == 0
    assert [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)] == expected
    for i in range(100):
        info = segment.read(i, 1, min_one_message=True)
        assert info is not None and decode_all(info.read_bytes())[0].offset == i


def test_recovery_fixes_corrupt_time_index(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 0, clock, index_bytes=12_000)
    append_v1(segment, range(100))
    segment.time_index.flush()
    segment.time_index.close_handler()
    segment.time_index.path.write_bytes(os.urandom(segment.time_index.path.stat().st_size))
    segment.recover()
    for i in range(100):
        assert segment.find_offset_by_timestamp(i * 10, 0) == TimestampAndOffset(i * 10, i, None)
        found = segment.find_offset_by_timestamp(i * 10 + 1, 0)
        assert (found.offset if found else 100) == i + 1


def test_recovery_with_corrupt_message(tmp_path: Path, clock: ManualClock) -> None:
    rng = random.Random(11)
    for trial in range(10):
        directory = tmp_path / str(trial)
        directory.mkdir()
        segment = open_segment(directory, 0, clock, index_bytes=12_000)
        append_v1(segment, range(100))
        k = rng.randrange(100)
        start = next(pos for pos, batch in segment.log.batches() if batch.last_offset == k)
        cut = start + rng.randrange(39)
        segment.log.truncate_to(cut)
        segment.log.append(os.urandom(rng.randrange(1, 200)))
        segment.recover()
        assert [r.offset for r in segment_records(segment)] == list(range(k))


def test_recovery_rebuilds_epochs(tmp_path: Path, clock: ManualClock) -> None:
    class Sink:
        def __init__(self) -> None:
            self.entries: list[tuple[int, int]] = []

        def latest_epoch(self) -> int | None:
            return self.entries[-1][0] if self.entries else None

        def assign(self, epoch: int, start_offset: int, best_effort: bool = False) -> None:
            self.entries.append((epoch, start_offset))

    segment = open_segment(tmp_path, 100, clock)
    for offsets, epoch in (([104, 105], 0), ([106, 107], 1), ([108, 109], 1), ([110, 111], 2)):
        segment.append(offsets[-1], 0, offsets[-1], v2(offsets, epoch=epoch))
    sink = Sink()
    segment.recover(sink)
    assert sink.entries == [(0, 104), (1, 106), (2, 110)]


def test_recovery_on_a_full_disk_keeps_the_epochs_it_cannot_write(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart after kill -9 on a full disk: the leader-epoch checkpoint cannot be written, yet the log opens
    (the epochs are kept in memory and found again at the next load)."""
    import errno

    from samsa.storage.checkpoint import CheckpointFile
    from samsa.storage.log import Log

    segment = open_segment(tmp_path, 0, clock)
    for offsets, epoch in (([0, 1], 0), ([2, 3], 3)):
        segment.append(offsets[-1], 0, offsets[-1], v2(offsets, epoch=epoch))
    segment.close()

    def full(self: object, entries: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(CheckpointFile, "write", full)
    log = Log.open(tmp_path, LogConfig(), clock, had_clean_shutdown=False)
    assert log.log_end_offset == 4
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries()] == [(0, 0), (3, 2)]
    log.close()


def test_preallocated_segment_trimmed_on_close(tmp_path: Path, clock: ManualClock) -> None:
    config = LogConfig.from_properties({"preallocate": "true"})
    segment = LogSegment.open(tmp_path, 40, config, clock, init_file_size=512 * 1024, preallocate=True)
    append_v1(segment, [40, 41])
    assert segment.log.file_length() == 512 * 1024 and segment.size == 78
    info = segment.read(41, 100)
    assert info is not None and [r.offset for r in decode_all(info.read_bytes())] == [41]
    segment.close()
    assert (tmp_path / "00000000000000000040.log").stat().st_size == 78
    reopened = LogSegment.open(tmp_path, 40, config, clock)
    assert reopened.size == 78 and reopened.read_next_offset() == 42


def test_truncate_even_if_offset_points_to_a_gap(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock)
    append_v1(segment, [40, 43])
    segment.truncate_to(41)
    assert [r.offset for r in segment_records(segment)] == [40]


def test_first_batch_timestamp(tmp_path: Path, clock: ManualClock) -> None:
    segment = open_segment(tmp_path, 40, clock)
    assert segment.first_batch_timestamp() == 2**63 - 1
    segment.append(40, 1000, 40, v1(40, 1000))
    assert segment.first_batch_timestamp() == 1000
    segment.close()
    assert open_segment(tmp_path, 40, clock).first_batch_timestamp() == 1000


def test_index_entry_rule(tmp_path: Path, clock: ManualClock) -> None:
    """First append never indexed; an entry keyed by the set's *last* offset at the set's start position."""
    segment = open_segment(tmp_path, 0, clock, interval=100)
    sizes = []
    offset = 0
    for _ in range(10):
        batch = v2(list(range(offset, offset + 3)))
        sizes.append((offset + 2, segment.size, len(batch)))
        segment.append(offset + 2, 0, offset + 2, batch)
        offset += 3
    expected = []
    since = 0
    for last, position, size in sizes:
        if since > 100:
            expected.append((last, position))
            since = 0
        since += size
    got = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    assert [(e.offset, e.position) for e in got] == expected and expected


def test_seed_facts_second_segment(tmp_path: Path, clock: ManualClock) -> None:
    """Offset 368776 lives in the segment at 368769 (segments 0, 368769, 737337)."""
    from samsa.storage.segments import LogSegments

    segments = LogSegments()
    config = LogConfig.from_properties({"index.interval.bytes": 4096})
    for base in (0, 368769, 737337):
        segments.add(LogSegment.open(tmp_path, base, config, clock))
    second = segments.floor_segment(368776)
    assert second is not None and second.base_offset == 368769
    assert second.log.path.name == "00000000000000368769.log"
    # about one index entry per 4096 bytes appended
    offset = 368769
    for _ in range(400):
        batch = build_batch([Record(offset + i, 0, None, b"x" * 90) for i in range(10)])
        second.append(offset + 9, 0, offset + 9, batch)
        offset += 10
    entries = second.offset_index.entries
    batch_size = len(batch)
    assert second.size // (4096 + batch_size) <= entries <= second.size // 4096
    assert second.translate_offset(368776) is not None
    found = second.translate_offset(368776)
    assert found is not None and found.position == 0 and found.offset == 368778


def test_file_records_rules(tmp_path: Path) -> None:
    records = FileRecords.open(tmp_path / "f.log")
    data = v1(0, 0) + v1(1, 10)
    records.append(data)
    assert records.size == records.file_length() == len(data)
    with pytest.raises(ValueError):
        records.slice(len(data) + 1, 1)
    assert records.slice(10, 10**6).size == len(data) - 10
    os.pwrite(records.fd, b"\0" * 6, records.size)  # bytes beyond the tracked size are ignored
    assert [b.last_offset for _, b in records.batches()] == [0, 1]
    with pytest.raises(ValueError):
        records.truncate_to(len(data) + 1)
    assert records.truncate_to(39) == 39
    assert [b.last_offset for _, b in records.batches()] == [0]


@settings(max_examples=150, deadline=None)
@given(
    shapes=st.lists(
        st.tuples(st.sampled_from([0, 1, 2]), st.integers(1, 5), st.integers(0, 30) | st.integers(0, 6000)),
        max_size=12,
    ),
    torn=st.integers(0, 60),
    damage=st.sampled_from([None, 5, 30]),
    chunk=st.integers(RECORD_BATCH_OVERHEAD, 200) | st.just(8192),
    data=st.data(),
)
def test_header_scans_against_a_model(
    tmp_path_factory: pytest.TempPathFactory,
    shapes: list[tuple[int, int, int]],
    torn: int,
    damage: int | None,
    chunk: int,
    data: st.DataObject,
) -> None:
    """``headers`` and ``search_for_offset`` (a fetch's scan from its index entry) read the header chunk by
    chunk: across v2 batches and v0/v1 messages of every size, headers cut by a chunk's end and a torn trailing
    batch, they see the batches a whole read sees, and find the first batch whose last offset reaches a target;
    a size field no batch can have (below a message's least, or below a v2 header) is an error when reached."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(file_records, "_HEADER_CHUNK", chunk)
        records = FileRecords.open(tmp_path_factory.mktemp("scan") / "f.log")
        model: list[tuple[int, int, int]] = []  # (position, last offset, size) per batch
        offset = 0
        for magic, count, size in shapes:
            if magic == 2:
                raw = build_batch([Record(offset + i, 5, None, b"x" * (size // count)) for i in range(count)])
                last = offset + count - 1
            else:  # one message, its own batch
                raw = build_legacy_message_set(magic, [Record(offset, 5, None, b"y" * size)])
                last = offset
            model.append((records.append(raw), last, len(raw)))
            offset = last + 1 + count % 3  # gaps, as compaction leaves them
        if damage is not None:  # a header whose size field says 5 bytes, or 30 of a v2 batch
            records.append(struct.pack(">qi4xb", offset, damage, 2) + bytes(60))
        elif torn:
            records.append(
                build_batch([Record(offset, 5, None, b"z" * 100)])[:torn]
            )  # a torn tail: not a batch
        if damage is None:
            whole = [(position, batch.last_offset) for position, batch in records.batches()]
            assert whole == [(position, last) for position, last, _ in model]
            scanned = [
                (position, view.last_offset, view.size_in_bytes) for position, view in records.headers()
            ]
            assert scanned == model
        else:
            with pytest.raises(CorruptRecordError):
                list(records.headers())
        start = data.draw(st.sampled_from([0] + [position for position, _, _ in model]))
        target = data.draw(st.integers(-1, offset + 2))
        expected = next(((last, p, size) for p, last, size in model if p >= start and last >= target), None)
        if expected is None and damage is not None:
            with pytest.raises(CorruptRecordError):
                records.search_for_offset(target, start)
        else:
            assert records.search_for_offset(target, start) == expected


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(
        st.tuples(st.integers(1, 4), st.integers(0, 80), st.integers(0, 3), st.integers(-5, 30)),
        min_size=1,
        max_size=30,
    ),
    interval=st.integers(0, 400),
    data=st.data(),
)
def test_segment_against_a_model(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[tuple[int, int, int, int]],
    interval: int,
    data: st.DataObject,
) -> None:
    """Reads, timestamp lookups and truncation match a list of records; recovery rebuilds the same indexes."""
    directory = tmp_path_factory.mktemp("seg")
    segment = open_segment(directory, 100, ManualClock(), interval=interval, index_bytes=4000)
    model: list[tuple[int, int, int]] = []  # (offset, timestamp, batch index)
    offset, ts = 100, 1000
    for batch_no, (n, size, gap, dts) in enumerate(batches):
        offset += gap
        records = [Record(offset + i, max(0, ts + dts + i), None, b"x" * size) for i in range(n)]
        raw = build_batch(records)
        max_ts = max(r.timestamp for r in records)
        shallow = records[-1].offset
        segment.append(records[-1].offset, max_ts, shallow, raw)
        model.extend((r.offset, r.timestamp, batch_no) for r in records)
        offset += n
        ts += 10
    offsets = [m[0] for m in model]
    probe = data.draw(st.integers(95, offset + 5))
    info = segment.read(probe, 10**6)
    expected_from = [o for o in offsets if o >= probe]
    if not expected_from:
        assert info is None
    else:
        got = [r.offset for r in decode_all(info.read_bytes()) if r.offset >= probe] if info else []
        assert got == expected_from
    target = data.draw(st.integers(0, 1500))
    matches = [(t, o) for o, t, _ in model if t >= target]
    found = segment.find_offset_by_timestamp(target, 100)
    assert (found.timestamp, found.offset) == matches[0] if matches else found is None
    entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    times = [segment.time_index.entry(i) for i in range(segment.time_index.entries)]
    segment.recover()
    assert [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)] == entries
    rebuilt = [segment.time_index.entry(i) for i in range(segment.time_index.entries)]
    assert rebuilt[: len(times)] == times and len(rebuilt) - len(times) <= 1
    cut = data.draw(st.integers(100, offset + 2))
    segment.truncate_to(cut)
    last_of_batch: dict[int, int] = {}
    for o, _, b in model:
        last_of_batch[b] = o
    survivors = [o for o, _, b in model if last_of_batch[b] < cut]
    assert [r.offset for r in segment_records(segment)] == survivors
    assert segment.read_next_offset() == (survivors[-1] + 1 if survivors else 100)


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            # an append of 1-3 batches (a follower's append holds several), v2 or a compressed legacy wrapper
            st.tuples(
                st.just("append"),
                st.lists(
                    st.tuples(st.integers(1, 4), st.integers(0, 2), st.booleans()), min_size=1, max_size=3
                ),
            ),
            st.tuples(st.just("truncate"), st.integers(0, 40)),  # back by this many offsets from the end
            st.tuples(st.just("rollback"), st.integers(1, 3)),  # appends of 1-3 batches, then undone
        ),
        min_size=1,
        max_size=60,
    ),
    interval=st.sampled_from([0, 150, 400, 4096]),
)
def test_offset_lookups_from_recent_appends_agree_with_a_scan_from_the_start(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, object]], interval: int
) -> None:
    """``translate_offset`` starts its scan at a recent append when that is past the index's floor entry: for
    every offset it finds what a scan of the whole file finds, through multi-batch and legacy appends, truncation
    and rolled-back appends (which must drop the positions they remembered)."""
    directory = tmp_path_factory.mktemp("tail")
    segment = open_segment(directory, 100, ManualClock(), interval=interval, index_bytes=4000)
    next_offset = 100

    def batches(spec: list[tuple[int, int, bool]]) -> tuple[bytes, int]:
        nonlocal next_offset
        out = b""
        for n, gap, legacy in spec:
            first = next_offset + gap
            records = [Record(first + i, 1000 + first + i, None, b"v" * 20) for i in range(n)]
            out += build_legacy_message_set(1, records, compression=1) if legacy else build_batch(records)
            next_offset = first + n
        return out, next_offset - 1

    for kind, arg in steps:
        if kind == "append":
            raw, last = batches(arg)  # type: ignore[arg-type]
            segment.append(last, 1000 + last, last, raw)
        elif kind == "truncate":
            cut = max(100, next_offset - int(arg))  # type: ignore[call-overload]
            segment.truncate_to(cut)
            next_offset = segment.read_next_offset()
        else:
            mark, before = segment.append_mark(), next_offset
            for _ in range(int(arg)):  # type: ignore[call-overload]
                raw, last = batches([(2, 0, False)])
                segment.append(last, 1000 + last, last, raw)
            segment.rollback(mark)
            next_offset = before
        for offset in range(95, next_offset + 3):
            expected = segment.log.search_for_offset(offset, 0)
            found = segment.translate_offset(offset)
            assert (None if found is None else (found.offset, found.position, found.size)) == expected, offset
