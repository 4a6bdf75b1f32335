"""Storage benchmark: leader append throughput and read-slice latency of a ``Log`` on real files.

Appends producer-style batches (~1 KiB: 10 records of 100 bytes) to a fresh log in a temp directory, each copied
into a ``bytearray`` first as a request buffer would be, then reads single-batch slices at random offsets.
Prints MB/s, records/s and microseconds per read. Runs in a few seconds.

    .venv/bin/python bench/bench_storage.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from samsa.clock import SystemClock
from samsa.records import Record, build_batch
from samsa.storage.config import LogConfig
from samsa.storage.log import FetchIsolation, Log


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    batch = build_batch([Record(i, 1_700_000_000_000, None, b"v" * 100) for i in range(10)])
    config = LogConfig.from_properties({"segment.bytes": 64 * 1024 * 1024})
    with tempfile.TemporaryDirectory(prefix="samsa-bench-") as tmp:
        log = Log.open(Path(tmp) / "bench-0", config, SystemClock(seed=1), flush_on_roll=False)
        appended = 0
        started = time.perf_counter()
        deadline = started + args.seconds
        while time.perf_counter() < deadline:
            for _ in range(1000):
                log.append_as_leader(bytearray(batch))
            appended += 1000
        elapsed = time.perf_counter() - started
        total = appended * len(batch)
        print(f"append: {appended} batches of {len(batch)} B ({appended * 10} records) in {elapsed:.2f} s")
        print(
            f"  {total / elapsed / 1e6:.1f} MB/s, {appended * 10 / elapsed:,.0f} records/s, "
            f"{elapsed / appended * 1e6:.1f} us/append, {len(log.segments)} segments"
        )
        log.update_high_watermark(log.log_end_offset)
        rng = random.Random(2)
        reads = 20_000
        started = time.perf_counter()
        for _ in range(reads):
            info = log.read(
                rng.randrange(log.log_end_offset), 1, FetchIsolation.HIGH_WATERMARK, min_one_message=True
            )
            assert info.size > 0
        elapsed = time.perf_counter() - started
        print(f"read slice: {reads} random single-batch reads, {elapsed / reads * 1e6:.1f} us/read")
        log.close()


if __name__ == "__main__":
    main()
