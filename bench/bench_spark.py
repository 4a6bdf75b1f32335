"""Rows per second into Spark from ``format("samsa")`` (through the broker) and ``format("samsa-segments")`` (the
broker's log dir read directly), each as a ratio to a trivial Python data source that yields the same Arrow batches
from memory in the same session (the ceiling); and the demo pipeline's end-to-end latency.

Run: ``.venv/bin/python bench/bench_spark.py`` (about 3 minutes; ``--rows N`` default 1,000,000, ``--runs`` 3,
``--latency-seconds`` 40, 0 skips the demo, ``--json FILE``).

Setup: an embedded broker, topic ``bench`` with 2 partitions, ``rows`` records (10-byte keys from 1,000, 100-byte
incompressible values, CreateTime) produced in batches of 2,000. The same records are then read three ways in one
local[2] SparkSession, timing ``load().count()`` (Spark still moves every column out of Python: a Python source has
no column pruning): one warm-up, then the median of ``runs``:

- ``memory``: 2 partitions, each yielding one prebuilt RecordBatch of the source schema repeatedly (the ceiling);
- ``samsa``: Fetch requests to the broker, 2 tasks (one per partition);
- ``samsa-segments``: the broker's log dir, one task per segment.

Goals: samsa-segments >= 0.7 of the ceiling, samsa >= 0.5.

Latency: ``samsa demo --duration S --fresh`` in a subprocess; its summary line gives, per window, the time from
the window's last produced record to the window's record appearing in ``access-stats`` (which includes the
30 s watermark, i.e. 1.5 s at the demo's 20x event-time speed-up, and the 2 s trigger).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOPIC = "bench"
PARTITIONS = 2
GOALS = {"samsa-segments": 0.7, "samsa": 0.5}


def produce(bootstrap: str, rows: int) -> None:
    from samsa.client import SyncClient, TopicPartition
    from samsa.records import Record, build_batch

    keys = [f"key-{i:06d}".encode() for i in range(1000)]
    per_batch = 2000
    now = int(time.time() * 1000)
    with SyncClient(bootstrap) as client:
        for n, start in enumerate(range(0, rows, per_batch)):
            count = min(per_batch, rows - start)
            records = [
                Record(i, now + start + i, keys[(start + i) % 1000], os.urandom(100)) for i in range(count)
            ]
            client.produce(TopicPartition(TOPIC, n % PARTITIONS), build_batch(records))


def memory_source(rows: int) -> type:
    """A data source yielding prebuilt RecordBatches shaped like the topic's (defined here, shipped by value)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class MemoryReader(DataSourceReader):  # type: ignore[misc]
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(rows // PARTITIONS) for _ in range(PARTITIONS)]

        def read(self, partition: InputPartition) -> Iterator[Any]:
            import pyarrow as pa

            from samsa.spark.arrow import arrow_schema

            size = 16384
            keys = pa.array([f"key-{i % 1000:06d}".encode() for i in range(size)], pa.binary())
            values = pa.array([os.urandom(100) for _ in range(size)], pa.binary())
            schema = arrow_schema(False)
            batch = pa.RecordBatch.from_arrays(
                [
                    keys,
                    values,
                    pa.array([TOPIC] * size, pa.string()),
                    pa.array([0] * size, pa.int32()),
                    pa.array(range(size), pa.int64()),
                    pa.array([1_790_000_000_000_000 + i for i in range(size)], pa.int64()).cast(
                        pa.timestamp("us", tz="UTC")
                    ),
                    pa.array([0] * size, pa.int32()),
                ],
                schema=schema,
            )
            left = partition.value
            while left > 0:
                out = batch if left >= size else batch.slice(0, left)
                left -= out.num_rows
                yield out

    class MemorySource(DataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "bench-memory"

        def schema(self) -> str:
            from samsa.spark.arrow import spark_ddl

            return spark_ddl(False)

        def reader(self, schema: Any) -> DataSourceReader:
            return MemoryReader()

    return MemorySource


def timed(action: Any, runs: int) -> tuple[float, list[float], Any]:
    result = action()  # warm-up
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - began)
    return statistics.median(times), times, result


def throughput(rows: int, runs: int) -> dict[str, Any]:
    from samsa.embedded import Broker
    from samsa.spark.pipeline.run import spark_session

    spark = spark_session("local[2]", "samsa-bench")
    spark.dataSource.register(memory_source(rows))
    out: dict[str, Any] = {"rows": rows, "runs": runs}
    with Broker() as broker:
        broker.create_topic(TOPIC, PARTITIONS)
        began = time.perf_counter()
        produce(broker.bootstrap_servers, rows)
        out["produce_s"] = round(time.perf_counter() - began, 2)
        cases = {
            "memory": lambda: spark.read.format("bench-memory").load().count(),
            "samsa": lambda: (
                spark.read.format("samsa")
                .option("kafka.bootstrap.servers", broker.bootstrap_servers)
                .option("subscribe", TOPIC)
                .load()
                .count()
            ),
            "samsa-segments": lambda: (
                spark.read.format("samsa-segments")
                .option("subscribe", TOPIC)
                .load(str(broker.log_dir))
                .count()
            ),
        }
        for name, action in cases.items():
            median, times, count = timed(action, runs)
            assert count == rows, (name, count)
            out[name] = {
                "median_s": round(median, 3),
                "runs_s": [round(t, 3) for t in times],
                "rows_per_s": round(rows / median),
            }
            print(
                f"{name:15s} median {median:6.2f} s  {rows / median:12,.0f} rows/s  runs {[round(t, 2) for t in times]}"
            )
    spark.stop()
    ceiling = out["memory"]["rows_per_s"]
    for name, goal in GOALS.items():
        ratio = out[name]["rows_per_s"] / ceiling
        out[name]["ratio_to_memory"] = round(ratio, 3)
        print(f"{name:15s} ratio to the in-memory ceiling {ratio:.2f} (goal >= {goal})")
    return out


def latency(seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            str(Path(sys.executable).parent / "samsa"),
            "demo",
            "--duration",
            str(seconds),
            "--fresh",
            "--data-dir",
            str(Path(tmp) / "demo"),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    text = " ".join(done.stdout.split())
    match = re.search(r"latency over (\d+) windows: median ([\d.]+) s, p95 ([\d.]+) s, max ([\d.]+) s", text)
    if match is None:
        raise RuntimeError(f"no latency line in the demo's output:\n{done.stdout[-2000:]}")
    windows, median, p95, worst = match.groups()
    print(f"demo end-to-end latency over {windows} windows: median {median} s, p95 {p95} s, max {worst} s")
    return {"windows": int(windows), "median_s": float(median), "p95_s": float(p95), "max_s": float(worst)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-seconds", type=float, default=40.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = {"throughput": throughput(args.rows, args.runs)}
    if args.latency_seconds > 0:
        result["latency"] = latency(args.latency_seconds)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
