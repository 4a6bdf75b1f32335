"""Helpers for the storage-core tests: batches built with ``samsa.records``, segments and logs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from samsa.clock import ManualClock
from samsa.records import Record, build_batch, build_legacy_message_set, iter_batches, iter_records
from samsa.storage.config import LogConfig
from samsa.storage.log import Log
from samsa.storage.segment import LogSegment


def v2(
    offsets: Sequence[int],
    timestamps: Sequence[int] | None = None,
    values: Sequence[bytes | None] | None = None,
    epoch: int = 0,
) -> bytes:
    """One v2 batch holding a record at each of ``offsets`` (keyless)."""
    ts = timestamps if timestamps is not None else [o * 10 for o in offsets]
    vals = values if values is not None else [f"v{o}".encode() for o in offsets]
    return build_batch(
        [Record(o, t, None, v) for o, t, v in zip(offsets, ts, vals, strict=True)],
        partition_leader_epoch=epoch,
    )


def v1(offset: int, timestamp: int, value: bytes | None = b"hello") -> bytes:
    """One uncompressed v1 message (its own batch)."""
    return build_legacy_message_set(1, [Record(offset, timestamp, None, value)])


def values(n: int, size: int = 10, tag: str = "") -> list[bytes]:
    return [f"{tag}{i:0{size}d}".encode()[-size:] if size else b"" for i in range(n)]


def leader_batch(count: int, timestamp: int = 0, size: int = 10) -> bytes:
    """A producer-style v2 batch (base offset 0) of ``count`` records."""
    return build_batch([Record(i, timestamp, None, b"x" * size) for i in range(count)])


def decode_all(data: bytes) -> list[Record]:
    return [r for batch in iter_batches(data) for r in iter_records(batch)]


def segment_records(segment: LogSegment) -> list[Record]:
    return decode_all(segment.log.read(0, segment.size))


def log_records(log: Log) -> list[Record]:
    out: list[Record] = []
    for segment in log.segments:
        out.extend(segment_records(segment))
    return out


def small_config(**props: int | str) -> LogConfig:
    base: dict[str, int | str] = {"segment.index.bytes": 1024 * 8}
    base.update({k.replace("_", "."): v for k, v in props.items()})
    return LogConfig.from_properties(base)


def open_segment(
    directory: Path, base: int, clock: ManualClock, interval: int = 10, index_bytes: int = 1000
) -> LogSegment:
    config = LogConfig.from_properties({"index.interval.bytes": interval, "segment.index.bytes": index_bytes})
    return LogSegment.open(directory, base, config, clock)


def append_v1(segment: LogSegment, offsets: Iterable[int], value: bytes = b"hello") -> None:
    for o in offsets:
        segment.append(o, o * 10, o, v1(o, o * 10, value))
