"""Record batch v2: the spec's bytes, round trips against a model, Kafka's validations, in-place rewrites."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records_strategies import MAX_TS, record_lists, v2_batch

from samsa.records import (
    BatchView,
    CompressionType,
    ControlRecordType,
    CorruptRecordError,
    EndTransactionMarker,
    InvalidRecordError,
    Record,
    TimestampType,
    UnsupportedCompressionError,
    build_batch,
    build_end_txn_marker_batch,
    decode_batch,
    iter_batches,
    set_max_timestamp,
)
from samsa.records.varint import encode_varint

SPEC_BATCH = bytes.fromhex(
    "0000000000000000" "00000039" "00000000" "02" "ebf1884b" "0000" "00000000"
    "00000000000003e8" "00000000000003e8" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
    "0e00000001026100"
)  # fmt: skip
CODECS = list(CompressionType)


def record(
    offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None, tail: bytes = b"\x00"
) -> bytes:
    """A record's bytes, built field by field; ``tail`` is the headers section (default: no headers)."""
    body = b"\x00" + encode_varint(timestamp_delta) + encode_varint(offset_delta)
    body += b"\x01" if key is None else encode_varint(len(key)) + key
    body += b"\x01" if value is None else encode_varint(len(value)) + value
    body += tail
    return encode_varint(len(body)) + body


# --- the spec's worked example --------------------------------------------------------------------------


def test_the_spec_batch_is_built_byte_for_byte() -> None:
    built = build_batch([Record(0, 1000, None, b"a")], partition_leader_epoch=0)
    assert built == SPEC_BATCH
    assert len(built) == 69
    assert built[17:21].hex() == "ebf1884b"


def test_the_spec_batch_decodes() -> None:
    batch = decode_batch(SPEC_BATCH)
    assert (batch.base_offset, batch.batch_length, batch.partition_leader_epoch, batch.magic) == (0, 57, 0, 2)
    assert batch.crc == 0xEBF1884B
    assert (batch.base_timestamp, batch.max_timestamp, batch.last_offset_delta) == (1000, 1000, 0)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.compression is CompressionType.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control
    assert batch.records == (Record(0, 1000, None, b"a", ()),)
    assert batch.size_in_bytes == 69 and batch.next_offset == 1


# --- round trips against the model -------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    records=record_lists(),
    codec=st.sampled_from(CODECS),
    log_append=st.booleans(),
    append_time=st.integers(0, MAX_TS),
    producer=st.tuples(st.integers(-1, 2**63 - 1), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1)),
    transactional=st.booleans(),
    leader_epoch=st.integers(-1, 2**31 - 1),
    base_shift=st.integers(0, 5),
)
def test_batch_round_trip(
    records: list[Record],
    codec: CompressionType,
    log_append: bool,
    append_time: int,
    producer: tuple[int, int, int],
    transactional: bool,
    leader_epoch: int,
    base_shift: int,
) -> None:
    base_offset = max(0, records[0].offset - base_shift)
    raw = build_batch(
        records,
        base_offset=base_offset,
        compression=codec,
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        log_append_time=append_time,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        is_transactional=transactional,
        partition_leader_epoch=leader_epoch,
    )
    view = BatchView(memoryview(raw), 0)
    assert view.is_valid() and view.size_in_bytes == len(raw)
    batch = decode_batch(raw)
    expected = [
        Record(r.offset, append_time if log_append else r.timestamp, r.key, r.value, r.headers)
        for r in records
    ]
    assert list(batch.records) == expected
    assert batch.base_offset == view.base_offset == base_offset
    assert batch.last_offset == view.last_offset == records[-1].offset
    assert batch.base_timestamp == (append_time if log_append else records[0].timestamp)
    assert batch.max_timestamp == view.max_timestamp == max(r.timestamp for r in expected)
    assert batch.compression is codec and view.compression == codec
    assert batch.timestamp_type == view.timestamp_type == (1 if log_append else 0)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.is_transactional is transactional and not batch.is_control
    assert batch.partition_leader_epoch == leader_epoch
    assert batch.records_count == view.records_count == len(records)
    assert batch.last_sequence == view.last_sequence


@settings(max_examples=25, deadline=None)
@given(records=record_lists(big=True, headers=False), codec=st.sampled_from(CODECS))
def test_large_values_round_trip(records: list[Record], codec: CompressionType) -> None:
    assert list(decode_batch(build_batch(records, compression=codec)).records) == records


def test_bare_values_take_consecutive_offsets_from_the_base() -> None:
    batch = decode_batch(build_batch([b"a", None, b""], base_offset=7, timestamp=55))
    assert batch.records == (
        Record(7, 55, None, b"a"),
        Record(8, 55, None, None),
        Record(9, 55, None, b""),
    )
    assert (batch.base_offset, batch.last_offset_delta) == (7, 2)


def test_an_empty_batch_is_a_header_with_no_timestamps() -> None:
    raw = build_batch([], base_offset=3)
    assert len(raw) == 61
    batch = decode_batch(raw)
    assert batch.records == () and (batch.base_timestamp, batch.max_timestamp) == (-1, -1)


def test_builder_refuses_what_kafka_refuses() -> None:
    with pytest.raises(ValueError, match="does not follow"):
        build_batch([Record(5, 0, None, None), Record(5, 0, None, None)])
    with pytest.raises(ValueError, match="below the base offset 2"):
        build_batch([Record(1, 0, None, None)], base_offset=2)
    with pytest.raises(ValueError, match="negative timestamp"):
        build_batch([Record(0, -2, None, None)])
    with pytest.raises(ValueError, match="too far"):
        build_batch([Record(2**31, 0, None, None)], base_offset=0)
    with pytest.raises(ValueError, match="NO_TIMESTAMP_TYPE"):
        build_batch([b"x"], timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)
    with pytest.raises(ValueError, match="out of range"):
        build_batch([b"x"], producer_epoch=2**15)
    with pytest.raises(UnsupportedCompressionError):
        build_batch([b"x"], compression=5)


def test_sequence_numbers_wrap_after_int_max() -> None:
    raw = build_batch([b"a", b"b", b"c"], producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    assert decode_batch(raw).last_sequence == 0
    assert BatchView(memoryview(raw), 0).last_sequence == 0


# --- validation --------------------------------------------------------------------------------------------


def test_leftover_bytes_after_the_declared_records() -> None:
    raw = v2_batch(record(0, 0, None, b"a") + record(1, 0, None, b"b"), 1)
    with pytest.raises(InvalidRecordError, match="records still remaining"):
        decode_batch(raw)


def test_more_records_declared_than_present() -> None:
    raw = v2_batch(record(0, 0, None, b"a"), 2)
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        decode_batch(raw)


def test_negative_record_count() -> None:
    with pytest.raises(InvalidRecordError, match="invalid record count -1"):
        decode_batch(v2_batch(b"", -1))


def test_record_length_past_the_batch() -> None:
    body = record(0, 0, None, b"abc")
    assert body[0] == 2 * 9  # zig-zag of the 9-byte body
    with pytest.raises(
        InvalidRecordError,
        match="Invalid record size: expected 12 bytes in record payload, but "
        "instead the buffer has only 9 remaining bytes",
    ):
        decode_batch(v2_batch(encode_varint(12) + body[1:], 1))


def test_record_length_disagreeing_with_its_fields() -> None:
    good = record(0, 0, None, b"abc")  # a 9-byte body
    raw = v2_batch(encode_varint(8) + good[1:], 1)  # declares 8
    with pytest.raises(
        InvalidRecordError, match="expected to read 8 bytes in record payload, but instead read 9"
    ):
        decode_batch(raw)


def test_varint_too_long_inside_a_record() -> None:
    body = b"\x00" + b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00" + b"\x00\x01\x01\x00"
    with pytest.raises(InvalidRecordError, match="invalid record structure"):
        decode_batch(v2_batch(encode_varint(len(body)) + body, 1))


def test_negative_header_key_length() -> None:
    raw = v2_batch(record(0, 0, None, None, tail=encode_varint(1) + encode_varint(-1) + b"\x01"), 1)
    with pytest.raises(InvalidRecordError, match="Invalid negative header key size -1"):
        decode_batch(raw)


def test_negative_and_oversized_header_counts() -> None:
    with pytest.raises(InvalidRecordError, match="invalid number of record headers -1"):
        decode_batch(v2_batch(record(0, 0, None, None, tail=encode_varint(-1)), 1))
    with pytest.raises(InvalidRecordError, match="invalid number of record headers 50"):
        decode_batch(v2_batch(record(0, 0, None, None, tail=encode_varint(50) + b"\x00\x01"), 1))


def test_headers_decode_with_null_values() -> None:
    tail = encode_varint(2) + encode_varint(1) + b"k" + b"\x01" + encode_varint(2) + "é".encode() + b"\x02v"
    batch = decode_batch(v2_batch(record(0, 0, b"", None, tail=tail), 1))
    assert batch.records[0].headers == (("k", None), ("é", b"v"))


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids(codec_id: int) -> None:
    with pytest.raises(UnsupportedCompressionError, match=f"Unknown compression type id: {codec_id}"):
        decode_batch(v2_batch(record(0, 0, None, None), 1, attributes=codec_id))


def test_undecompressable_payload() -> None:
    with pytest.raises(CorruptRecordError, match="failed to decompress gzip"):
        decode_batch(v2_batch(b"not gzip at all", 1, attributes=1))


def test_size_below_the_header_and_truncated_buffers() -> None:
    raw = bytearray(SPEC_BATCH)
    struct.pack_into(">i", raw, 8, 40)
    with pytest.raises(CorruptRecordError, match="minimum allowed overhead"):
        decode_batch(bytes(raw[:52]))
    with pytest.raises(CorruptRecordError, match="cut short"):
        decode_batch(SPEC_BATCH[:-1])
    with pytest.raises(CorruptRecordError, match="cut short"):
        decode_batch(SPEC_BATCH[:5])


def test_a_legacy_message_is_not_a_v2_batch() -> None:
    raw = bytearray(SPEC_BATCH)
    raw[16] = 1
    with pytest.raises(InvalidRecordError, match="magic 1"):
        decode_batch(bytes(raw))


def test_crc_mismatch_names_both_values() -> None:
    raw = bytearray(SPEC_BATCH)
    raw[-2] ^= 1  # the value "a" becomes "`"
    with pytest.raises(CorruptRecordError, match=r"stored crc = 3958474827, computed crc = \d+"):
        decode_batch(bytes(raw))
    assert decode_batch(bytes(raw), verify_crc=False).records[0].value == b"`"


# --- corruption ----------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_flipping_a_crc_covered_byte_is_detected(data: st.DataObject) -> None:
    records = data.draw(record_lists(), label="records")
    raw = bytearray(build_batch(records, compression=data.draw(st.sampled_from(CODECS))))
    index = data.draw(st.integers(17, len(raw) - 1), label="index")  # the CRC itself, then all it covers
    raw[index] ^= data.draw(st.integers(1, 255), label="mask")
    view = BatchView(memoryview(raw), 0)
    assert not view.is_valid()
    with pytest.raises(CorruptRecordError):
        decode_batch(view)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_flipping_base_offset_or_leader_epoch_keeps_the_batch_valid(data: st.DataObject) -> None:
    records = data.draw(record_lists(), label="records")
    raw = bytearray(build_batch(records))
    index = data.draw(st.sampled_from([*range(0, 8), *range(12, 16)]), label="index")
    raw[index] ^= data.draw(st.integers(1, 255), label="mask")
    assert BatchView(memoryview(raw), 0).is_valid()
    batch = decode_batch(bytes(raw))
    shift = batch.base_offset - records[0].offset
    assert [(r.offset - shift, r.value) for r in batch.records] == [(r.offset, r.value) for r in records]


# --- set_max_timestamp --------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    records=record_lists(),
    codec=st.sampled_from(CODECS),
    stamp=st.integers(0, MAX_TS),
    transactional=st.booleans(),
)
def test_set_max_timestamp_stamps_log_append_time(
    records: list[Record], codec: CompressionType, stamp: int, transactional: bool
) -> None:
    first = build_batch([b"x"], base_offset=0, timestamp=1)
    raw = bytearray(
        first
        + build_batch(
            records, compression=codec, producer_id=9, producer_epoch=1, is_transactional=transactional
        )
    )
    set_max_timestamp(raw, len(first), stamp, TimestampType.LOG_APPEND_TIME)
    assert raw[: len(first)] == first
    views = list(iter_batches(raw))
    assert all(v.is_valid() for v in views)
    batch = decode_batch(views[1])
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.max_timestamp == stamp
    assert {r.timestamp for r in batch.records} == {stamp}
    assert batch.compression is codec and batch.is_transactional is transactional
    assert [r.value for r in batch.records] == [r.value for r in records]
    set_max_timestamp(raw, len(first), 5, TimestampType.CREATE_TIME)
    again = decode_batch(list(iter_batches(raw))[1])
    assert again.timestamp_type is TimestampType.CREATE_TIME and again.max_timestamp == 5
    assert [r.timestamp for r in again.records] == [r.timestamp for r in records]


def test_set_max_timestamp_is_a_no_op_when_nothing_changes() -> None:
    raw = bytearray(SPEC_BATCH)
    set_max_timestamp(raw, 0, 1000, TimestampType.CREATE_TIME)
    assert raw == SPEC_BATCH
    raw[16] = 1  # a legacy message has no max timestamp field to rewrite
    with pytest.raises(InvalidRecordError, match="magic 1"):
        set_max_timestamp(raw, 0, 1, TimestampType.LOG_APPEND_TIME)


# --- control batches ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_end_transaction_marker_batch(kind: ControlRecordType) -> None:
    marker = EndTransactionMarker(kind, coordinator_epoch=17)
    raw = build_end_txn_marker_batch(
        marker, producer_id=42, producer_epoch=3, timestamp=1234, base_offset=99, partition_leader_epoch=4
    )
    batch = decode_batch(raw)
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, -1)
    assert (batch.base_offset, batch.base_timestamp, batch.max_timestamp) == (99, 1234, 1234)
    assert batch.compression is CompressionType.NONE and batch.timestamp_type is TimestampType.CREATE_TIME
    (control,) = batch.control_records
    assert (control.offset, control.timestamp, control.control_type, control.marker) == (
        99,
        1234,
        kind,
        marker,
    )
    assert batch.records[0].key == struct.pack(">hh", 0, int(kind))
    assert batch.records[0].value == struct.pack(">hi", 0, 17)


def test_a_control_batch_with_a_short_key_is_invalid() -> None:
    raw = build_batch([Record(0, 0, b"\x00", b"")], is_control=True, is_transactional=True, producer_id=1)
    with pytest.raises(InvalidRecordError, match="at least 4 bytes"):
        decode_batch(raw)
