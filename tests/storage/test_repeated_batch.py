"""A batch repeated on disk after a clean stop: it passes its CRC (which does not cover the base offset) and its
offsets follow on, but it repeats the previous batch's producer id, epoch and sequences.

A clean stop writes a producer snapshot at the log end, and the broker refuses such a batch on append, so it was
copied in from outside; Kafka loads it and its records are read twice. Samsa cuts it (kept in a ``*.salvage``
file beside the segment), says so at ERROR with the path and offsets, and the log continues after it.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import pytest
from storage_helpers import decode_all, small_config

from samsa.clock import ManualClock
from samsa.records import Record, build_batch
from samsa.storage.log import FetchIsolation, Log

CONFIG = small_config(segment_bytes=10_000_000)
PRODUCER_ID = 7
RECORDS = 1000


def idempotent_batch(first_sequence: int, count: int, tag: str, producer_id: int = PRODUCER_ID) -> bytes:
    return build_batch(
        [Record(i, 1000 + i, None, f"{tag}-{i}".encode()) for i in range(count)],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=first_sequence,
    )


def build(directory: Path) -> bytes:
    """A cleanly stopped log of two idempotent batches of producer 7 (sequences 0-999 and 1000-1999); returns
    the bytes of the second as stored."""
    log = Log.open(directory, CONFIG, ManualClock(), flush_on_roll=False)
    log.append_as_leader(idempotent_batch(0, RECORDS, "a"))
    log.append_as_leader(idempotent_batch(RECORDS, RECORDS, "b"))
    log.close()
    data = (directory / "00000000000000000000.log").read_bytes()
    first_size = 12 + struct.unpack_from(">i", data, 8)[0]
    return data[first_size:]


def reopen(directory: Path) -> Log:
    return Log.open(directory, CONFIG, ManualClock(), had_clean_shutdown=True, flush_on_roll=False)


def values(log: Log) -> list[bytes | None]:
    out: list[bytes | None] = []
    offset = 0
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20, FetchIsolation.LOG_END, min_one_message=True).records.read_bytes()
        records = [r for r in decode_all(data) if r.offset >= offset]
        if not records:
            break
        out += [r.value for r in records]
        offset = records[-1].offset + 1
    return out


def append_copy(directory: Path, stored: bytes, base_offset: int) -> None:
    """Append ``stored`` (one batch) to the segment with only its base offset changed: its CRC still matches."""
    copy = struct.pack(">q", base_offset) + stored[8:]
    with open(directory / "00000000000000000000.log", "ab") as f:
        f.write(copy)


def test_a_batch_repeating_the_last_ones_sequences_is_cut_not_read_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "t-0"
    stored = build(directory)
    append_copy(directory, stored, 2 * RECORDS)
    caplog.set_level(logging.WARNING)
    log = reopen(directory)
    try:
        read = values(log)
        assert len(read) == 2 * RECORDS, "the repeated batch's records are read twice"
        assert read[-1] == f"b-{RECORDS - 1}".encode()
        assert log.log_end_offset == 3 * RECORDS  # its offsets are not handed out again
        kept = list(directory.glob("*.repeated-at-*.salvage"))
        assert len(kept) == 1 and kept[0].read_bytes() == struct.pack(">q", 2 * RECORDS) + stored[8:]
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert any(
            "00000000000000000000.log" in m and f"offsets {2 * RECORDS} to {3 * RECORDS - 1}" in m
            for m in errors
        ), errors
        # the producer goes on from its real last sequence
        log.append_as_leader(idempotent_batch(2 * RECORDS, 1, "c"))
        assert values(log)[-1] == b"c-0"
    finally:
        log.close()


def test_a_new_batch_of_the_same_producer_after_the_snapshot_is_kept(tmp_path: Path) -> None:
    """Sequences that follow on (not a repeat) are loaded as they are: only a repeat is cut."""
    directory = tmp_path / "t-0"
    build(directory)
    following = idempotent_batch(2 * RECORDS, 10, "d")
    append_copy(directory, following, 2 * RECORDS)
    other = idempotent_batch(0, 10, "e", producer_id=8)  # another producer's sequences 0-9: not a repeat
    append_copy(directory, other, 2 * RECORDS + 10)
    log = reopen(directory)
    try:
        assert len(values(log)) == 2 * RECORDS + 20
        assert not list(directory.glob("*.salvage"))
    finally:
        log.close()
