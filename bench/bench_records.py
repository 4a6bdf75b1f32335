"""Record codec figures for 100-byte records: encode, decode, and validate-vs-decode of a 1 MiB batch.

Run: ``.venv/bin/python bench/bench_records.py`` (about 10 s). Best of several runs, one process, one core.
Validation is what the produce path does (sizes + CRC-32C in C); a full decode is what dump-log and Spark do.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from samsa.records import BatchView, CompressionType, Record, build_batch, decode_batch, iter_batches

VALUE_SIZE = 100
BATCH_BYTES = 1 << 20


def best(fn: Callable[[], object], budget: float = 0.8, at_least: int = 3) -> float:
    """Best wall time of ``fn`` over repeated runs within about ``budget`` seconds."""
    times = []
    deadline = time.perf_counter() + budget
    while len(times) < at_least or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    count = BATCH_BYTES // (VALUE_SIZE + 8)
    # printable values, different in every record, that codecs shrink by about half
    records = [
        Record(i, 1_700_000_000_000 + i, None, os.urandom(VALUE_SIZE // 2).hex().encode())
        for i in range(count)
    ]
    print(f"{count} records of {VALUE_SIZE} bytes per batch\n")
    print(
        f"{'codec':8} {'bytes':>9} {'encode µs/rec':>14} {'decode µs/rec':>14} {'encode MB/s':>12} {'decode MB/s':>12}"
    )
    plain = b""
    for codec in CompressionType:
        raw = build_batch(records, compression=codec)
        plain = plain or raw
        encode = best(lambda codec=codec: build_batch(records, compression=codec))
        decode = best(lambda raw=raw: decode_batch(raw))
        payload_mb = count * VALUE_SIZE / 1e6
        print(
            f"{codec.kafka_name:8} {len(raw):>9} {encode / count * 1e6:>14.2f} {decode / count * 1e6:>14.2f} "
            f"{payload_mb / encode:>12.1f} {payload_mb / decode:>12.1f}"
        )
    view = BatchView(memoryview(plain), 0)
    validate = best(view.ensure_valid)
    shallow = best(lambda: sum(v.last_offset for v in iter_batches(plain)))
    decode = best(lambda: decode_batch(plain, verify_crc=False))
    print(
        f"\nvalidate 1 MiB batch (sizes + CRC-32C in C): {validate * 1e3:.3f} ms "
        f"({len(plain) / validate / 1e9:.2f} GB/s); shallow header walk {shallow * 1e6:.1f} µs"
    )
    print(f"full decode of the same batch:                {decode * 1e3:.1f} ms")
    print(f"full decode / validate:                       {decode / validate:.0f}x")


if __name__ == "__main__":
    main()
