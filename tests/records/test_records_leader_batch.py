"""``lone_v2_batch`` and ``stamp_v2_batch``: the produce path's one-batch check and stamp, against BatchView (which
reads the same fields one property at a time) and against every way a buffer can fail to be one valid v2 batch;
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
from samsa.records.view import BatchView, lone_v2_batch, stamp_v2_batch


def batch(count: int = 3, producer_id: int = -1) -> bytearray:
    records = [Record(i, 1_700_000_000_000 + 7 * i, b"k%d" % i, b"v" * i) for i in range(count)]
    return bytearray(build_batch(records, producer_id=producer_id, producer_epoch=0, base_sequence=0))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40), st.sampled_from([-1, 0, 12345]))
def test_the_fields_are_batch_views(count: int, producer_id: int) -> None:
    raw = batch(count, producer_id)
    view = BatchView(memoryview(raw), 0)
    assert lone_v2_batch(raw, len(raw)) == (
        view.size_field,
        view.last_offset_delta,
        view.max_timestamp,
        view.producer_id,
    )


def test_anything_but_one_valid_batch_is_none() -> None:
    raw = batch()
    assert lone_v2_batch(raw, len(raw)) is not None
    assert lone_v2_batch(raw, len(raw) - 1) is None  # above the size allowed
    assert lone_v2_batch(raw + raw, 2 * len(raw)) is None  # two batches
    assert lone_v2_batch(raw + b"\0", len(raw) + 1) is None  # trailing bytes
    assert lone_v2_batch(raw[:-1], len(raw)) is None  # cut short
    assert lone_v2_batch(raw[:60], len(raw)) is None  # shorter than a header
    for position in (16, 30, len(raw) - 1):  # magic; a CRC-covered header field; the last record byte
        damaged = bytearray(raw)
        damaged[position] ^= 0x01
        assert lone_v2_batch(damaged, len(raw)) is None, position
    negative_delta = bytearray(raw)
    struct.pack_into(">i", negative_delta, 23, -1)
    assert lone_v2_batch(negative_delta, len(raw)) is None


def test_stamping_sets_the_base_offset_and_epoch_and_keeps_the_crc_valid() -> None:
    raw = batch(5)
    length = BatchView(memoryview(raw), 0).size_field
    stamp_v2_batch(raw, 0, length, 1_000_000, 7)
    view = BatchView(memoryview(raw), 0)
    assert (view.base_offset, view.partition_leader_epoch, view.size_field) == (1_000_000, 7, length)
    assert view.last_offset == 1_000_004
    assert view.is_valid()
    assert lone_v2_batch(raw, len(raw)) is not None


def test_a_valid_batch_is_stamped_in_the_same_call_and_an_invalid_one_is_left_alone() -> None:
    raw = batch(4)
    expected = lone_v2_batch(bytearray(raw), len(raw))
    assert lone_v2_batch(raw, len(raw), 2_000_000, 9) == expected
    view = BatchView(memoryview(raw), 0)
    assert (view.base_offset, view.partition_leader_epoch, view.last_offset) == (2_000_000, 9, 2_000_003)
    assert view.is_valid()
    damaged = bytearray(raw)
    damaged[-1] ^= 0x01
    before = bytes(damaged)
    assert lone_v2_batch(damaged, len(raw), 5, 1) is None
    assert damaged == before


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
