"""Write the known byte vectors (see the package doc) with kafka-python's record builders.

Run from the project root: ``.venv/bin/python -m tests.vectors.generate``.
"""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from tests.vectors import VECTORS

BATCH_SIZE = 1 << 20


def batch_v2() -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=BATCH_SIZE,
    )
    builder.append(0, timestamp=1000, key=None, value=b"a", headers=[])
    return bytes(builder.build())


def legacy(magic: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=BATCH_SIZE)
    builder.append(0, timestamp=1000 if magic else None, key=None, value=b"hello")
    return bytes(builder.build())


def vectors() -> dict[str, bytes]:
    """File name -> bytes, as kafka-python writes them."""
    return {"batch.bin": batch_v2(), "v1.bin": legacy(1), "v0.bin": legacy(0)}


def main() -> None:
    for name, data in vectors().items():
        (VECTORS / name).write_bytes(data)
        print(f"{VECTORS / name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
