"""LogSegments, the ordered map: Kafka's LogSegmentsTest items (spec 12.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from samsa.clock import ManualClock
from samsa.storage.config import LogConfig
from samsa.storage.segment import LogSegment
from samsa.storage.segments import LogSegments


def _segments(tmp_path: Path, clock: ManualClock, bases: list[int]) -> tuple[LogSegments, list[LogSegment]]:
    segments = LogSegments()
    made = [LogSegment.open(tmp_path, b, LogConfig(), clock) for b in bases]
    for s in made:
        segments.add(s)
    return segments, made


def test_basic_operations(tmp_path: Path, clock: ManualClock) -> None:
    segments, (s1, s2) = _segments(tmp_path, clock, [1, 2])
    assert len(segments) == 2 and segments.contains(1) and segments.get(2) is s2
    replacement = LogSegment.open(tmp_path / ".." / tmp_path.name, 1, LogConfig(), clock)
    assert segments.add(replacement) is s1 and segments.get(1) is replacement and len(segments) == 2
    assert segments.remove(1) is replacement and not segments.contains(1) and len(segments) == 1
    segments.clear()
    assert segments.is_empty() and segments.last_segment() is None


def test_segment_access(tmp_path: Path, clock: ManualClock) -> None:
    segments, (s1, s2, s3, s4) = _segments(tmp_path, clock, [1, 2, 3, 4])
    assert segments.first_segment() is s1 and segments.last_segment() is s4 and segments.active_segment is s4
    assert segments.values(1, 1) == []
    assert segments.values(1, 3) == [s1, s2]
    assert segments.values(2, 100) == [s2, s3, s4]
    assert segments.values(0, 2) == [s1]
    with pytest.raises(ValueError):
        segments.values(2, 1)
    assert segments.non_active_from(2) == [s2, s3]
    assert segments.values(3) == [s3, s4]


def test_closest_match_and_higher(tmp_path: Path, clock: ManualClock) -> None:
    segments, (s1, s5, s10) = _segments(tmp_path, clock, [1, 5, 10])
    assert segments.floor_segment(0) is None
    assert (
        segments.floor_segment(1) is s1
        and segments.floor_segment(7) is s5
        and segments.floor_segment(99) is s10
    )
    assert segments.lower_segment(5) is s1 and segments.lower_segment(1) is None
    assert segments.higher_segment(5) is s10 and segments.higher_segment(10) is None
    assert segments.higher_segments(0) == [s1, s5, s10] and segments.higher_segments(5) == [s10]


def test_log_segments_call_semantics(tmp_path: Path, clock: ManualClock) -> None:
    segments, (s0, s10, s20) = _segments(tmp_path, clock, [0, 10, 20])
    assert segments.values(0, 21) == [s0, s10, s20]
    assert segments.values(13, 17) == [s10]
    with pytest.raises(ValueError):
        segments.values(10, 0)


def test_size_is_a_python_int(tmp_path: Path, clock: ManualClock) -> None:
    segments, made = _segments(tmp_path, clock, [0])
    made[0].log.size = 2**31 + 5
    other = LogSegment.open(tmp_path, 100, LogConfig(), clock)
    other.log.size = 2**31
    segments.add(other)
    assert segments.size_in_bytes() == 2**32 + 5
