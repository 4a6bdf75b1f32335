"""Records to Arrow: the column-wise decoder agrees with samsa.records on every batch shape it accepts."""

from __future__ import annotations

import pytest

from samsa.records import CompressionType, Record, build_batch, iter_batches, iter_records
from samsa.spark.arrow import RecordBatchBuilder, arrow_schema, piece_from_batch


def rows_via_records(raw: bytes) -> list[tuple]:
    out = []
    for view in iter_batches(raw):
        for r in iter_records(view):
            out.append((r.key, r.value, r.offset, r.timestamp, view.timestamp_type))
    return out


def rows_via_columns(raw: bytes) -> list[tuple]:
    builder = RecordBatchBuilder("t", 3, include_headers=False, batch_rows=1 << 30)
    for view in iter_batches(raw):
        added = builder.add_view(view)
        assert added is not None
        list(added)
    batch = builder.flush()
    assert batch.schema.equals(arrow_schema(False))
    assert set(batch.column("topic").to_pylist()) == {"t"} and set(batch.column("partition").to_pylist()) == {
        3
    }
    micros = [ts.timestamp() for ts in batch.column("timestamp").to_pylist()]
    return [
        (k, v, o, round(us * 1000), tt)
        for k, v, o, us, tt in zip(
            batch.column("key").to_pylist(),
            batch.column("value").to_pylist(),
            batch.column("offset").to_pylist(),
            micros,
            batch.column("timestampType").to_pylist(),
            strict=True,
        )
    ]


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.ZSTD])
def test_columns_match_records(codec: CompressionType) -> None:
    raw = b""
    base = 0
    for n in range(5):
        records = [
            Record(
                base + i,
                1_700_000_000_000 + 37 * i * (n + 1) - (5000 if i % 4 == 0 else 0),
                None if i % 3 == 0 else f"key-{n}-{i}".encode() * (i % 40),
                None if i == 7 else b"" if i == 8 else bytes(range(256)) * (i % 3) + f"v{i}".encode(),
            )
            for i in range(150)
        ]
        raw += build_batch(records, base_offset=base, compression=codec)
        base += 150
    raw += build_batch(
        [Record(base, 5, b"k", b"v")], base_offset=base, timestamp_type=1, log_append_time=1_800_000_000_000
    )
    assert rows_via_columns(raw) == rows_via_records(raw)


def test_batches_with_headers_are_left_to_the_record_decoder() -> None:
    raw = build_batch([Record(0, 1, b"k", b"v", (("h", b"x"),))])
    view = next(iter_batches(raw))
    assert piece_from_batch(view, include_headers=True) is None
    builder = RecordBatchBuilder("t", 0, include_headers=True)
    list(builder.add(iter_records(view), view.timestamp_type))
    assert builder.flush().column("headers").to_pylist() == [[{"key": "h", "value": b"x"}]]
