"""Records to Arrow: the column-wise decoder agrees with samsa.records on every batch shape, and on damaged bytes
either raises what samsa.records raises or returns the same rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samsa.records import CompressionType, Record, build_batch, iter_batches, iter_records
from samsa.records.errors import RecordsError
from samsa.records.varint import decode_varint, decode_varlong
from samsa.spark.arrow import RecordBatchBuilder, _varints, arrow_schema, piece_from_batch


def rows_via_records(raw: bytes, include_headers: bool = False) -> list[tuple]:
    out = []
    for view in iter_batches(raw):
        for r in iter_records(view, verify_crc=False):
            if not -(2**63) <= r.offset < 2**63 or not -(2**63) <= r.timestamp * 1000 < 2**63:
                raise OverflowError("outside int64: the builder refuses it")
            headers = (
                [{"key": k, "value": v} for k, v in r.headers] if include_headers and r.headers else None
            )
            out.append((r.key, r.value, r.offset, r.timestamp * 1000, view.timestamp_type, headers))
    return out


def rows_via_columns(raw: bytes, include_headers: bool = False, batch_rows: int = 1 << 30) -> list[tuple]:
    builder = RecordBatchBuilder("t", 3, include_headers=include_headers, batch_rows=batch_rows)
    batches = []
    for view in iter_batches(raw):
        batches.extend(builder.add_view(view))
    batches.append(builder.flush())
    out: list[tuple] = []
    for batch in batches:
        assert batch.schema.equals(arrow_schema(include_headers))
        assert set(batch.column("topic").to_pylist()) <= {"t"}
        assert set(batch.column("partition").to_pylist()) <= {3}
        columns = [
            batch.column("key").to_pylist(),
            batch.column("value").to_pylist(),
            batch.column("offset").to_pylist(),
            batch.column("timestamp").cast("int64").to_pylist(),
            batch.column("timestampType").to_pylist(),
            batch.column("headers").to_pylist() if include_headers else [None] * batch.num_rows,
        ]
        out.extend(zip(*columns, strict=True))
    return out


@pytest.mark.parametrize("codec", list(CompressionType))
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
    raw += build_batch(
        [Record(base + 10, 6, None, b"x" * 20000)], compression=codec
    )  # a 3-byte length prefix
    assert rows_via_columns(raw) == rows_via_records(raw)
    assert rows_via_columns(raw, batch_rows=100) == rows_via_records(raw)


def test_batches_with_headers_are_left_to_the_record_decoder() -> None:
    raw = build_batch([Record(0, 1, b"k", b"v", (("h", b"x"),))])
    view = next(iter_batches(raw))
    assert piece_from_batch(view, include_headers=True) is None
    assert piece_from_batch(next(iter_batches(build_batch([Record(0, 1, b"k", b"v")]))), False) is not None
    builder = RecordBatchBuilder("t", 0, include_headers=True)
    builder.add_view(view)
    assert builder.flush().column("headers").to_pylist() == [[{"key": "h", "value": b"x"}]]


CODECS = st.sampled_from(list(CompressionType))
BLOBS = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=60, max_size=300))
HEADERS = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))), max_size=2)


@st.composite
def log_bytes(draw: st.DrawFn) -> bytes:
    """Several v2 batches: any codec, null/empty/long keys and values, headers, offset gaps, both timestamp types."""
    raw = b""
    offset = draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 5))):
        records = []
        first = offset
        base_ts = draw(st.integers(2**20, 2**45))
        headers_here = draw(st.integers(0, 3)) == 0  # most batches have none: the column decoder takes them
        for _ in range(draw(st.integers(0, 30))):
            with_headers = headers_here and draw(st.booleans())
            records.append(
                Record(
                    offset,
                    base_ts + draw(st.integers(-(2**20), 2**20)),
                    draw(BLOBS),
                    draw(st.one_of(BLOBS, st.just(b"v" * 9000))) if draw(st.booleans()) else draw(BLOBS),
                    tuple(draw(HEADERS)) if with_headers else (),
                )
            )
            offset += draw(st.sampled_from([1, 1, 1, 2, 70, 10_000]))
        log_append = draw(st.booleans())
        raw += build_batch(
            records,
            base_offset=first,
            compression=draw(CODECS),
            timestamp_type=1 if log_append else 0,
            log_append_time=draw(st.integers(0, 2**45)) if log_append else None,
        )
        offset += 1
    return raw


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=log_bytes(), include_headers=st.booleans(), batch_rows=st.integers(1, 80))
def test_columns_match_records_for_any_log(raw: bytes, include_headers: bool, batch_rows: int) -> None:
    assert rows_via_columns(raw, include_headers, batch_rows) == rows_via_records(raw, include_headers)


def outcome(read: object) -> tuple[str, object]:
    try:
        return "rows", read()  # type: ignore[operator]
    except RecordsError:  # not always the same one: the builder frames batches ahead of decoding them
        return "error", RecordsError
    except (ValueError, OverflowError):
        return "error", "out of range"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=log_bytes(), data=st.data())
def test_damaged_bytes_raise_what_the_record_decoder_raises(raw: bytes, data: st.DataObject) -> None:
    damaged = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        damaged[at] = data.draw(
            st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, damaged[at] ^ 1, damaged[at] ^ 0x80])
        )
    damaged_bytes = bytes(damaged)
    assert outcome(lambda: rows_via_columns(damaged_bytes)) == outcome(
        lambda: rows_via_records(damaged_bytes)
    )


@settings(max_examples=200, deadline=None)
@given(buf=st.binary(min_size=1, max_size=40), data=st.data())
def test_vector_varints_match_the_scalar_decoder(buf: bytes, data: st.DataObject) -> None:
    positions = data.draw(st.lists(st.integers(0, len(buf) - 1), min_size=1, max_size=8))
    u8 = np.frombuffer(buf, np.uint8)
    at = np.array(positions, np.int64)
    for width, scalar in ((5, decode_varint), (10, decode_varlong)):
        values, after, too_long = _varints(u8, at, len(buf) - 1, width)
        for i, pos in enumerate(positions):
            try:
                expected = scalar(buf, pos)
            except (
                RecordsError
            ) as exc:  # too long: flagged; runs off the end: the end-of-record check refuses it
                assert "longer than" not in str(exc) or (too_long is not None and too_long[i])
                continue
            assert too_long is None or not too_long[i]
            assert (int(values[i]), int(after[i])) == expected


def test_offsets_past_int64_raise_as_the_record_decoder_does() -> None:
    raw = bytearray(build_batch([Record(i, 1_700_000_000_000, b"k", b"v") for i in range(5)]))
    next(iter_batches(raw)).set_base_offset(2**63 - 3)
    damaged = bytes(raw)
    assert outcome(lambda: rows_via_columns(damaged)) == ("error", "out of range")
    assert outcome(lambda: rows_via_records(damaged)) == ("error", "out of range")
