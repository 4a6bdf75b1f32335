"""OffsetIndex and TimeIndex: Kafka's OffsetIndexTest / TimeIndexTest items (spec 12.2, 12.3) and a model test."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.storage.errors import (
    CorruptIndexError,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
)
from samsa.storage.index import OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset

BASE = 45


def offset_index(tmp_path: Path, entries: int = 30, name: str = "a.index") -> OffsetIndex:
    return OffsetIndex(tmp_path / name, BASE, entries * 8)


def time_index(tmp_path: Path, entries: int = 30, name: str = "a.timeindex") -> TimeIndex:
    return TimeIndex(tmp_path / name, BASE, entries * 12)


# --- offset index --------------------------------------------------------------------------------------


def test_lazy_creation_and_preallocation(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", BASE, 100)
    assert not index.path.exists() and not index.is_loaded
    assert index.entries == 0
    assert index.path.stat().st_size == 96  # rounded down to whole 8-byte entries
    assert index.max_entries == 12
    tindex = TimeIndex(tmp_path / "x.timeindex", BASE, 100)
    assert tindex.max_entries == 8 and tindex.path.stat().st_size == 96


def test_invalid_max_size(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        OffsetIndex(tmp_path / "x.index", 0, 7)


def test_random_lookup(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    pairs = [(BASE + 3 * i + 1, 10 * i) for i in range(30)]
    for off, pos in pairs:
        index.append(off, pos)
    for off, pos in pairs:
        assert index.lookup(off) == OffsetPosition(off, pos)
        assert index.lookup(off + 1) == OffsetPosition(off, pos)  # floor
    assert index.lookup(BASE) == OffsetPosition(BASE, 0)  # below the first entry


def test_lookup_extremes(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    assert index.lookup(BASE) == OffsetPosition(BASE, 0)
    for i in range(30):
        index.append(BASE + i + 1, i)
    assert index.lookup(BASE + 1) == OffsetPosition(BASE + 1, 0)
    assert index.lookup(BASE + 30) == OffsetPosition(BASE + 30, 29)
    assert index.lookup(10**9) == OffsetPosition(BASE + 30, 29)


def test_entry_and_entry_overflow(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    with pytest.raises(IndexError):
        index.entry(0)
    index.append(BASE + 1, 5)
    index.append(BASE + 2, 9)
    assert index.entry(1) == OffsetPosition(BASE + 2, 9)
    with pytest.raises(IndexError):
        index.entry(2)


def test_append_too_many_and_out_of_order(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    for i in range(30):
        index.append(BASE + i + 1, i)
    assert index.is_full()
    with pytest.raises(IndexFullError) as full:
        index.append(BASE + 100, 100)
    assert (full.value.entries, full.value.max_entries) == (30, 30)
    other = offset_index(tmp_path, name="b.index")
    other.append(51, 0)
    with pytest.raises(InvalidOffsetError) as bad:
        other.append(50, 1)
    assert (bad.value.offset, bad.value.last_offset) == (50, 51)
    with pytest.raises(InvalidOffsetError):
        other.append(51, 1)


def test_offset_overflow(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    with pytest.raises(IndexOffsetOverflowError):
        index.append(BASE + 2**31, 0)
    with pytest.raises(IndexOffsetOverflowError):
        index.append(BASE - 1, 0)
    assert index.can_append_offset(BASE + 2**31 - 1) and not index.can_append_offset(BASE - 1)


def test_fetch_upper_bound_offset(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    first, second, third, fourth = (
        OffsetPosition(BASE, 0),
        OffsetPosition(BASE + 1, 10),
        OffsetPosition(BASE + 2, 23),
        OffsetPosition(BASE + 3, 37),
    )
    for entry in (first, second, third, fourth):
        index.append(entry.offset, entry.position)
    assert index.fetch_upper_bound_offset(first, 5) == second
    assert index.fetch_upper_bound_offset(first, 10) == second
    assert index.fetch_upper_bound_offset(first, 22) == third
    assert index.fetch_upper_bound_offset(first, 23) == third
    assert index.fetch_upper_bound_offset(second, 24) == fourth
    assert index.fetch_upper_bound_offset(fourth, 1) is None
    assert index.fetch_upper_bound_offset(first, 38) is None


def test_reopen_keeps_entries_and_is_full(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    index.append(BASE + 5, 10)
    index.append(BASE + 9, 20)
    index.close()
    again = offset_index(tmp_path)
    assert again.entries == 2 and again.last_offset == BASE + 9
    assert again.lookup(BASE + 6) == OffsetPosition(BASE + 5, 10)
    assert again.path.stat().st_size == 16
    with pytest.raises(IndexFullError):  # trimmed on close
        again.append(BASE + 10, 30)


def test_truncate_rules(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "t.index", 0, 10 * 8)
    for i in range(10):
        index.append(i, i)
    index.truncate_to(12)  # past the end: no-op
    assert index.entries == 10
    index.truncate_to(10)
    assert index.entries == 10
    index.truncate_to(9)  # drops the exact match
    assert index.entries == 9 and index.last_offset == 8
    index.truncate_to(5)
    assert index.entries == 5 and index.lookup(10) == OffsetPosition(4, 4)
    index.append(7, 7)
    assert index.entries == 6
    index.truncate()
    assert index.entries == 0 and index.last_offset == 0
    index.append(3, 3)
    assert index.lookup(5) == OffsetPosition(3, 3)


def test_sanity_check(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    index.append(BASE, 0)  # a last offset equal to the base is fine
    index.sanity_check()
    index.close()
    path = tmp_path / "a.index"
    path.write_bytes(struct.pack(">ii", -5, 0) + b"\0\0\0")
    corrupt = offset_index(tmp_path)
    with pytest.raises(CorruptIndexError):
        corrupt.sanity_check()


def test_resize_trim_reset(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    index.append(BASE + 1, 1)
    assert index.resize(30 * 8) is False
    assert index.resize(100) is True and index.max_entries == 12
    assert index.trim_to_valid_size() and index.max_entries == 1 and index.is_full()
    index.reset()
    assert index.entries == 0 and index.max_entries == 30


def test_rename_without_creating(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    index.rename_to(tmp_path / "a.index.deleted")
    assert not (tmp_path / "a.index.deleted").exists()
    assert index.entries == 0
    assert (tmp_path / "a.index.deleted").exists()
    assert index.delete_if_exists() and not (tmp_path / "a.index.deleted").exists()


@settings(max_examples=100, deadline=None)
@given(
    gaps=st.lists(st.integers(1, 1000), min_size=0, max_size=60),
    probes=st.lists(st.integers(-10, 70_000), max_size=30),
    cut=st.integers(0, 70_000),
)
def test_offset_index_matches_a_sorted_list(
    tmp_path_factory: pytest.TempPathFactory, gaps: list[int], probes: list[int], cut: int
) -> None:
    directory = tmp_path_factory.mktemp("idx")
    index = OffsetIndex(directory / "m.index", 100, 64 * 8)
    model: list[tuple[int, int]] = []
    offset = 100
    for i, gap in enumerate(gaps):
        offset += gap
        index.append(offset, i * 7)
        model.append((offset, i * 7))

    def floor(target: int) -> OffsetPosition:
        found = [p for p in model if p[0] <= target]
        return OffsetPosition(*found[-1]) if found else OffsetPosition(100, 0)

    for probe in probes:
        assert index.lookup(probe) == floor(probe)
    index.truncate_to(cut)
    model = [p for p in model if p[0] < cut]
    assert index.entries == len(model)
    index.close()
    reopened = OffsetIndex(directory / "m.index", 100, 64 * 8)
    assert [reopened.entry(i) for i in range(reopened.entries)] == [OffsetPosition(*p) for p in model]


# --- time index ----------------------------------------------------------------------------------------


def filled_time_index(tmp_path: Path, n: int, name: str = "a.timeindex") -> TimeIndex:
    index = time_index(tmp_path, name=name)
    for i in range(1, n + 1):
        index.maybe_append(i * 10, BASE + i * 10)
    return index


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(1, 500), st.integers(0, 40)), min_size=0, max_size=60),
    probes=st.lists(st.integers(-5, 30_000), max_size=30),
    cut=st.integers(BASE - 5, BASE + 3_000),
)
def test_time_index_matches_a_sorted_list(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[int, int]], probes: list[int], cut: int
) -> None:
    """Lookups by timestamp and truncation by offset (both a binary search over the entries) against a list."""
    directory = tmp_path_factory.mktemp("tidx")
    index = TimeIndex(directory / "m.timeindex", BASE, 70 * 12)
    model: list[tuple[int, int]] = []
    timestamp, offset = 0, BASE
    for ts_gap, offset_gap in steps:
        timestamp += ts_gap
        offset += offset_gap
        index.maybe_append(timestamp, offset)
        model.append((timestamp, offset))

    def floor(target: int) -> TimestampOffset:
        found = [e for e in model if e[0] <= target]
        return TimestampOffset(*found[-1]) if found else TimestampOffset(-1, BASE)

    for probe in probes:
        assert index.lookup(probe) == floor(probe)
    index.truncate_to(cut)
    model = [e for e in model if e[1] < cut]
    assert [index.entry(i) for i in range(index.entries)] == [TimestampOffset(*e) for e in model]


def test_time_lookup(tmp_path: Path) -> None:
    index = time_index(tmp_path)
    assert index.lookup(100) == TimestampOffset(-1, BASE)
    for i in range(1, 29):
        index.maybe_append(i * 10, BASE + i * 10)
    assert index.lookup(5) == TimestampOffset(-1, BASE)
    assert index.lookup(25) == TimestampOffset(20, 65)
    assert index.lookup(30) == TimestampOffset(30, 75)


def test_time_entry(tmp_path: Path) -> None:
    index = time_index(tmp_path)
    with pytest.raises(IndexError):
        index.entry(0)
    for i in range(1, 5):
        index.maybe_append(i * 10, BASE + i * 10)
    assert [index.entry(i) for i in range(4)] == [
        TimestampOffset(10, 55),
        TimestampOffset(20, 65),
        TimestampOffset(30, 75),
        TimestampOffset(40, 85),
    ]


def test_preallocated_file_left_by_a_crash_reads_as_full_of_entries(tmp_path: Path) -> None:
    index = offset_index(tmp_path)
    index.append(BASE + 1, 0)
    index.flush()
    index.close_handler()  # no trim: as after a crash
    again = offset_index(tmp_path)
    assert again.entries == 30 and again.is_full()


def test_time_truncate(tmp_path: Path) -> None:
    index = filled_time_index(tmp_path, 10)
    index.truncate_to(BASE + 10)  # the first entry's offset
    assert index.entries == 0
    index = filled_time_index(tmp_path, 10, name="b.timeindex")
    index.truncate_to(BASE + 37)
    assert index.entries == 3 and index.last_entry == TimestampOffset(30, 75)
    index.truncate()
    assert index.entries == 0 and index.last_entry == TimestampOffset(-1, BASE)


def test_time_append_rules(tmp_path: Path) -> None:
    index = filled_time_index(tmp_path, 29)
    assert index.is_full()  # one slot kept back
    with pytest.raises(IndexFullError):
        index.maybe_append(10_000, BASE + 1000)
    with pytest.raises(InvalidOffsetError):
        index.maybe_append(10_000, BASE + 1, skip_full_check=True)
    index.maybe_append(10_000, BASE + 1000, skip_full_check=True)
    assert index.entries == 30 and index.last_entry == TimestampOffset(10_000, BASE + 1000)
    other = TimeIndex(tmp_path / "b.timeindex", BASE, 360)
    other.maybe_append(50, BASE + 5)
    other.maybe_append(50, BASE + 6)  # same timestamp: ignored
    assert other.entries == 1
    with pytest.raises(ValueError):
        other.maybe_append(40, BASE + 7)


def test_time_first_entry_needs_non_negative_timestamp(tmp_path: Path) -> None:
    index = time_index(tmp_path)
    index.maybe_append(-1, BASE + 1)
    assert index.entries == 0
    index.maybe_append(0, BASE + 1)
    assert index.entries == 1


def test_time_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "a.timeindex"
    path.write_bytes(struct.pack(">qi", 100, 5) + struct.pack(">qi", 50, 6))
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, BASE, 360).sanity_check()
    path.write_bytes(struct.pack(">qi", 100, -5))
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, BASE, 360).sanity_check()
    path.write_bytes(struct.pack(">qi", 100, 5) + b"\0")
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, BASE, 360).sanity_check()
    path.write_bytes(struct.pack(">qi", 100, 5))
    TimeIndex(path, BASE, 360).sanity_check()


def test_time_is_full_last_entry_resize(tmp_path: Path) -> None:
    index = time_index(tmp_path)
    assert index.last_entry == TimestampOffset(-1, BASE)
    index.maybe_append(1, BASE + 1)
    assert index.last_entry == TimestampOffset(1, BASE + 1)
    assert index.resize(index.length) is False
    assert index.resize(index.length + 12) is True
    assert index.entry_size == 12
    raw = (tmp_path / "a.timeindex").read_bytes()[:12]
    assert struct.unpack(">qi", raw) == (1, 1)


# --- all entries at once ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reopened", [False, True], ids=["written", "read-only reopen"])
def test_all_entries_at_once_are_the_entries_one_by_one(tmp_path: Path, reopened: bool) -> None:
    index, tindex = offset_index(tmp_path), time_index(tmp_path)
    for n in range(20):
        index.append(BASE + 3 * n, 100 * n)
        tindex.maybe_append(1_000 + 7 * n, BASE + 3 * n)
    if reopened:
        for written in (index, tindex):
            written.close()  # writes what is pending, trims the file
        index = OffsetIndex(index.path, BASE, writable=False)
        tindex = TimeIndex(tindex.path, BASE, writable=False)
    assert index.offset_positions() == [
        (e.offset, e.position) for e in map(index.entry, range(index.entries))
    ]
    assert index.offset_positions()[-1] == (BASE + 57, 1900)
    assert tindex.timestamp_offsets() == [
        (e.timestamp, e.offset) for e in map(tindex.entry, range(tindex.entries))
    ]
    assert tindex.timestamp_offsets()[0] == (1_000, BASE) and len(tindex.timestamp_offsets()) == 20
    assert OffsetIndex(tmp_path / "none.index", BASE, writable=False).offset_positions() == []
