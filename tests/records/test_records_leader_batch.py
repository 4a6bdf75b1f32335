"""``read_v2_header``, ``V2BatchView`` and ``stamp_v2_batch``: the produce path's one header read and stamp, against
BatchView (which reads the same fields one property at a time);
``keyless_records``, a compacted topic's key check, against the full decoder and with its inflation bound."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.records import (
    CompressionType,
    InflatedTooLargeError,
    InvalidRecordError,
    Record,
    build_batch,
    decode_batch,
)
from samsa.records.batch import keyless_records
from samsa.records.batch_view import BatchView, V2BatchView, read_v2_header, stamp_v2_batch


def batch(count: int = 3, producer_id: int = -1) -> bytearray:
    records = [Record(i, 1_700_000_000_000 + 7 * i, b"k%d" % i, b"v" * i) for i in range(count)]
    return bytearray(build_batch(records, producer_id=producer_id, producer_epoch=0, base_sequence=0))


_FIELDS = (
    "size_field",
    "magic",
    "attributes",
    "max_timestamp",
    "stored_crc",
    "last_offset_delta",
    "base_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "last_sequence",
    "records_count",
    "offset_field",
    "last_offset",
    "is_control",
    "is_transactional",
    "compression",
)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40), st.sampled_from([-1, 0, 12345]))
def test_the_header_is_what_batch_views_read(count: int, producer_id: int) -> None:
    raw = batch(count, producer_id)
    view = BatchView(memoryview(raw), 0)
    header = read_v2_header(raw)
    assert header is not None
    fast = V2BatchView(memoryview(raw), 0, header)
    assert [getattr(fast, name) for name in _FIELDS] == [getattr(view, name) for name in _FIELDS]


def test_a_header_needs_61_bytes() -> None:
    raw = batch()
    assert read_v2_header(raw[:60]) is None
    assert read_v2_header(raw[:61]) is not None


def test_stamping_sets_the_base_offset_and_epoch_and_keeps_the_crc_valid() -> None:
    raw = batch(5)
    header = read_v2_header(raw)
    assert header is not None
    stamp_v2_batch(raw, 0, header.size, 1_000_000, 7)
    view = BatchView(memoryview(raw), 0)
    assert (view.base_offset, view.partition_leader_epoch, view.size_field) == (1_000_000, 7, header.size)
    assert view.last_offset == 1_000_004
    assert V2BatchView(memoryview(raw), 0, header).last_offset == 1_000_004  # the offset read after the stamp
    assert view.is_valid()


# --- keyless_records: a compacted topic's key check, without a record object each ---------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.none() | st.binary(max_size=5), st.binary(max_size=40)), min_size=1, max_size=30),
    st.sampled_from(list(CompressionType)),
)
def test_keyless_records_are_the_decoded_records_without_a_key(
    records: list[tuple[bytes | None, bytes]], codec: CompressionType
) -> None:
    raw = build_batch(
        [Record(i, 1_700_000_000_000, key, value) for i, (key, value) in enumerate(records)],
        compression=codec,
    )
    expected = [i for i, record in enumerate(decode_batch(raw).records) if record.key is None]
    assert keyless_records(raw) == expected
    assert keyless_records(raw, max_inflated=1 << 20) == expected


def test_keyless_records_refuses_what_inflates_past_the_bound_and_a_malformed_batch() -> None:
    value = bytes(1 << 20)
    raw = build_batch([Record(i, 0, b"k", value) for i in range(4)], compression=CompressionType.GZIP)
    assert len(raw) < 20_000
    assert keyless_records(raw, max_inflated=5 << 20) == []
    with pytest.raises(InflatedTooLargeError):
        keyless_records(raw, max_inflated=1 << 20)
    short = bytearray(build_batch([Record(0, 0, b"k", b"v")]))
    struct.pack_into(">i", short, 57, 2)  # recordsCount 2, one record present
    with pytest.raises(InvalidRecordError):
        keyless_records(short)
