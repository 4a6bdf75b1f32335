"""Log directories written through LogManager, and the rows a reader must return for them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from samsa.clock import ManualClock
from samsa.records import Record, build_batch
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager

START_MS = 1_763_800_000_000
CLUSTER_ID = "c2Ftc2Etc3BhcmstMDAwMA"


@dataclass(frozen=True)
class Row:
    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...]


def write_log_dir(
    root: Path,
    topic: str,
    partitions: int,
    batches_per_partition: int,
    *,
    records_per_batch: int = 5,
    segment_bytes: int = 8192,
    index_interval_bytes: int = 512,
    step_ms: int = 1000,
) -> list[Row]:
    """Batches with increasing CreateTime timestamps (``step_ms`` apart); returns every record as a Row."""
    clock = ManualClock(START_MS, seed=3)
    config = LogConfig.from_properties(
        {"segment.bytes": segment_bytes, "index.interval.bytes": index_interval_bytes}
    )
    manager = LogManager([root], config, clock, node_id=0, cluster_id=CLUSTER_ID)
    manager.startup()
    rows: list[Row] = []
    try:
        logs = manager.create_topic(topic, partitions)
        for n in range(batches_per_partition):
            for p, log in enumerate(logs):
                ts = START_MS + n * step_ms
                records = []
                for i in range(records_per_batch):
                    key = None if i == 0 else f"k{p}-{n}-{i}".encode()
                    headers = (("h", f"{n}".encode()), ("null", None)) if i == 1 else ()
                    value = f"value {p} {n} {i} ".encode() * 3
                    records.append(Record(i, ts + i, key, value, headers))
                info = log.append_as_leader(build_batch(records))
                first = info.first_offset if hasattr(info, "first_offset") else None
                base = log.log_end_offset - records_per_batch if first is None else first
                for i, r in enumerate(records):
                    rows.append(Row(r.key, r.value, topic, p, base + i, r.timestamp, r.headers))
            clock.advance(step_ms)
        for log in logs:
            log.update_high_watermark(log.log_end_offset)
    finally:
        manager.shutdown()
    return rows
