"""An embedded broker for the Spark tests, and records produced to it with known offsets and timestamps."""

from __future__ import annotations

from dataclasses import dataclass

from samsa.client import SyncClient, TopicPartition
from samsa.records import Record, build_batch

BASE_MS = 1_790_000_000_000


@dataclass(frozen=True)
class Sent:
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes | None], ...]


def produce(
    bootstrap: str,
    topic: str,
    partitions: int,
    per_partition: int,
    *,
    batch: int = 10,
    tag: str = "",
    base_ms: int = BASE_MS,
) -> list[Sent]:
    """``per_partition`` records into each partition, in batches; timestamps ``base_ms + 1000 * n``."""
    sent: list[Sent] = []
    with SyncClient(bootstrap) as client:
        for p in range(partitions):
            for start in range(0, per_partition, batch):
                records = []
                for n in range(start, min(per_partition, start + batch)):
                    key = None if n % 7 == 0 else f"key-{p}-{n}".encode()
                    headers = (("trace", f"{tag}{n}".encode()), ("empty", None)) if n % 3 == 0 else ()
                    records.append(
                        Record(n - start, base_ms + 1000 * n, key, f"{tag}value-{p}-{n}".encode(), headers)
                    )
                base, _ = client.produce(TopicPartition(topic, p), build_batch(records))
                for i, r in enumerate(records):
                    sent.append(Sent(p, base + i, r.timestamp, r.key, r.value or b"", r.headers))
    return sent
