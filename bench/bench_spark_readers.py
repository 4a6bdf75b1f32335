"""The Spark readers without Spark: nanoseconds per record for the Arrow decoder alone and for ``read_range``
(``format("samsa")``'s executor loop: Fetch requests to an embedded broker, then the decoder).

Run: ``.venv/bin/python bench/bench_spark_readers.py`` (about 20 s). One process, best of ``--runs`` (default 9),
so a figure is the least disturbed run; compare two trees by running this with each on ``PYTHONPATH`` in turn.

- ``arrow decoder``: 500,000 records (10-byte keys from 1,000, 100-byte random values) in 250 v2 batches of 2,000
  in one buffer, each handed to ``RecordBatchBuilder.add_view``, every RecordBatch cut and the rest flushed;
- ``read_range``: 400,000 such records produced to one partition, all read by ``read_range`` into RecordBatches.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable

from samsa.client import NewTopic, SyncClient, TopicPartition
from samsa.embedded import Broker
from samsa.records import Record, build_batch, iter_batches
from samsa.spark.arrow import RecordBatchBuilder
from samsa.spark.source import OffsetRange, read_range

PER_BATCH = 2000
KEYS = [f"key-{i:06d}".encode() for i in range(1000)]


def batch(first: int) -> bytes:
    records = [
        Record(first + i, 1_700_000_000_000 + first + i, KEYS[i % 1000], os.urandom(100))
        for i in range(PER_BATCH)
    ]
    return build_batch(records, base_offset=first)


def best_ns_per_record(fn: Callable[[], int], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        rows = fn()
        times.append((time.perf_counter() - start) / rows)
    return min(times) * 1e9


def arrow_decoder(runs: int, rows: int = 500_000) -> float:
    buffer = b"".join(batch(first) for first in range(0, rows, PER_BATCH))

    def decode() -> int:
        builder = RecordBatchBuilder("t", 0, False)
        decoded = sum(b.num_rows for view in iter_batches(buffer) for b in builder.add_view(view))
        return decoded + (builder.flush().num_rows if len(builder) else 0)

    return best_ns_per_record(decode, runs)


def broker_read_range(runs: int, rows: int = 400_000) -> float:
    with tempfile.TemporaryDirectory() as log_dir, Broker(log_dir) as broker:
        with SyncClient(broker.bootstrap_servers) as client:
            client.create_topics([NewTopic("t", 1, 1)])
            for first in range(0, rows, PER_BATCH):
                client.produce(TopicPartition("t", 0), batch(first))
        part = OffsetRange("t", 0, 0, rows, broker.bootstrap_servers, False, True, 120_000)
        return best_ns_per_record(lambda: sum(b.num_rows for b in read_range(part)), runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print(f"arrow decoder  {arrow_decoder(args.runs):6.0f} ns/record (best of {args.runs})")
    print(f"read_range     {broker_read_range(args.runs):6.0f} ns/record (best of {args.runs})")


if __name__ == "__main__":
    main()
