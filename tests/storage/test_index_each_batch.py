"""Index entries of an append of several batches (a follower's fetched data, a legacy message set appended whole):
Kafka walks the batches and gives the batch that crosses ``index.interval.bytes`` an entry with its own last offset
at its own position. The oracle is the file: the batch at each entry's position ends at the entry's offset (what
``kafka-dump-log --verify-index-only`` checks; tests/apache_kafka runs Kafka's own tool on the same case)."""

from __future__ import annotations

from pathlib import Path

from samsa.clock import ManualClock
from samsa.records import Record, build_batch, build_legacy_message_set, iter_batches
from samsa.storage import Log, LogConfig


def entries_end_their_batches(log: Log) -> int:
    """How many offset index entries the log has; each is asserted to name the last offset of the batch at it."""
    checked = 0
    for segment in log.segments:
        data = segment.log.path.read_bytes()
        ends = {batch.position: batch.last_offset for batch in iter_batches(data)}
        for n in range(segment.offset_index.entries):
            entry = segment.offset_index.entry(n)
            assert ends[entry.position] == entry.offset, (n, entry)
            checked += 1
    return checked


def test_follower_appends_of_several_v2_batches(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig.from_properties({"index.interval.bytes": 1024}), ManualClock())
    offset = 0
    for _ in range(20):
        fetched = b""
        for _ in range(5):
            fetched += build_batch([Record(offset + i, 1000 + offset, None, b"x" * 100) for i in range(3)],
                                   base_offset=offset)  # fmt: skip
            offset += 3
        log.append_as_follower(fetched)
    try:
        assert entries_end_their_batches(log) >= 15
        assert log.segments.active_segment.time_index.entries >= 15
    finally:
        log.close()


def test_an_uncompressed_legacy_set_appended_whole(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig.from_properties({"index.interval.bytes": 256}), ManualClock())
    for n in range(10):
        items = [Record(n * 20 + i, 1000 + n, b"k", b"v" * 50) for i in range(20)]
        log.append_as_follower(build_legacy_message_set(1, items, base_offset=n * 20))
    try:
        assert entries_end_their_batches(log) >= 20
    finally:
        log.close()
