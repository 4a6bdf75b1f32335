"""Build record batches to produce and read the records of fetched bytes, over :mod:`samsa.records`.

``build_batch`` writes one v2 batch (offsets from 0, the broker assigns the real ones). ``iter_consumer_records``
walks the raw ``records`` bytes of a fetch response: v2 batches in any codec and legacy v0/v1 messages, skipping
control batches and a partial batch at the end (normal: a fetch is cut at a byte limit).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from samsa import records as rec
from samsa.records import CompressionType, ControlRecordType

Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class ProducerRecord:
    """One record to produce; ``timestamp_ms`` None means the time the batch is built."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """One fetched record, with its absolute offset and the timestamp (and its type) a consumer sees."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime, -1 none (magic 0)
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


def compression_type(compression: str | int) -> CompressionType:
    """A codec from Kafka's name ("none", "gzip", "snappy", "lz4", "zstd") or its id."""
    if isinstance(compression, str):
        return CompressionType.for_name(compression)
    return CompressionType.from_id(compression)


def build_batch(records: Sequence[ProducerRecord], compression: str | int = "none") -> bytes:
    """One v2 batch holding ``records`` (CreateTime; relative offsets 0..n-1), ready for ``produce``."""
    now = int(time.time() * 1000)
    items = [
        rec.Record(
            index,
            now if r.timestamp_ms is None else r.timestamp_ms,
            r.key,
            r.value,
            tuple(r.headers),
        )
        for index, r in enumerate(records)
    ]
    return rec.build_batch(items, base_offset=0, compression=compression_type(compression))


def iter_consumer_records(
    raw: bytes | bytearray | memoryview,
    topic: str,
    partition: int,
    *,
    start_offset: int = 0,
    aborted_transactions: Sequence[tuple[int, int]] | None = None,
) -> Iterator[ConsumerRecord]:
    """The records in fetched bytes with offset >= ``start_offset``; control batches are skipped.

    With ``aborted_transactions`` (the (producer_id, first_offset) pairs of a read_committed fetch) the batches
    of aborted transactions are skipped too, as Kafka's consumer does. Raises
    :class:`samsa.records.RecordsError` subclasses for corrupt data.
    """
    pending = sorted(aborted_transactions or (), key=lambda entry: entry[1])
    aborting: set[int] = set()
    for view in rec.iter_batches(raw):
        if view.magic >= 2:
            batch = rec.decode_batch(view)
            while pending and pending[0][1] <= batch.last_offset:
                aborting.add(pending.pop(0)[0])
            if batch.is_control:
                if any(c.control_type is ControlRecordType.ABORT for c in batch.control_records):
                    aborting.discard(batch.producer_id)
                continue
            if batch.is_transactional and batch.producer_id in aborting:
                continue
            ts_type = int(batch.timestamp_type)
            items: Sequence[rec.Record] = batch.records
        else:
            items = rec.decode_legacy(view)
            ts_type = view.timestamp_type
        for r in items:
            if r.offset >= start_offset:
                yield ConsumerRecord(
                    topic, partition, r.offset, r.timestamp, ts_type, r.key, r.value, tuple(r.headers)
                )


def next_fetch_offset(raw: bytes | bytearray | memoryview, position: int) -> int:
    """Where the next fetch should start after ``raw`` fetched at ``position``.

    The offset after the last complete batch (control batches and records removed by compaction included), or
    ``position`` when ``raw`` holds no complete batch.
    """
    end = position
    for view in rec.iter_batches(raw):
        end = max(end, view.next_offset)
    return end
