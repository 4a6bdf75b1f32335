"""Legacy messages v0/v1: the spec's bytes, overheads, wrapper offsets and timestamps, and the format's rules."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records_strategies import MAX_TS, record_lists

from samsa.records import (
    BatchView,
    CompressionType,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    TimestampType,
    UnsupportedCompressionError,
    build_batch,
    build_legacy_message_set,
    compress,
    decode_legacy,
    decompress,
    iter_batches,
    iter_records,
    set_legacy_timestamp,
)
from samsa.records.legacy import encode_message

V1_HELLO = bytes.fromhex(
    "0000000000000000 0000001b 942da341 01 00 00000000000003e8 ffffffff 00000005 68656c6c6f"
)
V0_HELLO = bytes.fromhex("0000000000000000 00000013 87a77ab2 00 00 ffffffff 00000005 68656c6c6f")
LEGACY_CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]


def all_records(raw: bytes) -> list[Record]:
    return [r for view in iter_batches(raw) for r in iter_records(view)]


def test_the_spec_messages_byte_for_byte() -> None:
    assert build_legacy_message_set(1, [Record(0, 1000, None, b"hello")]) == V1_HELLO
    assert build_legacy_message_set(0, [b"hello"]) == V0_HELLO
    assert (len(V1_HELLO), len(V0_HELLO)) == (39, 31)
    assert decode_legacy(V1_HELLO) == [Record(0, 1000, None, b"hello")]
    assert decode_legacy(V0_HELLO) == [Record(0, -1, None, b"hello")]
    assert BatchView(memoryview(V1_HELLO), 0).timestamp_type == 0


@settings(max_examples=60, deadline=None)
@given(key=st.one_of(st.none(), st.binary(max_size=40)), value=st.one_of(st.none(), st.binary(max_size=40)))
def test_fixed_overhead_is_26_for_v0_and_34_for_v1(key: bytes | None, value: bytes | None) -> None:
    payload = len(key or b"") + len(value or b"")
    assert len(build_legacy_message_set(0, [Record(0, -1, key, value)])) == 26 + payload
    assert len(build_legacy_message_set(1, [Record(0, 5, key, value)])) == 34 + payload


@settings(max_examples=150, deadline=None)
@given(
    records=record_lists(headers=False),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(LEGACY_CODECS),
    log_append=st.booleans(),
    append_time=st.integers(0, MAX_TS),
    base_shift=st.integers(0, 3),
)
def test_legacy_round_trip(
    records: list[Record],
    magic: int,
    codec: CompressionType,
    log_append: bool,
    append_time: int,
    base_shift: int,
) -> None:
    raw = build_legacy_message_set(
        magic,
        records,
        codec,
        max(0, records[0].offset - base_shift),
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        log_append_time=append_time,
    )
    views = list(iter_batches(raw))
    assert all(v.is_valid() and v.magic == magic for v in views)
    assert len(views) == (1 if codec else len(records))
    assert views[-1].last_offset == records[-1].offset  # a wrapper's offset is its last inner offset

    def seen(r: Record) -> int:
        if magic == 0:
            return -1
        return append_time if log_append else r.timestamp

    expected = [Record(r.offset, seen(r), r.key, r.value) for r in records]
    assert all_records(raw) == expected
    if magic == 1:
        assert max(v.max_timestamp for v in views) == max(seen(r) for r in records)
        assert {v.timestamp_type for v in views} == {1 if log_append else 0}


@pytest.mark.parametrize("codec", LEGACY_CODECS[1:])
def test_inner_offsets_are_relative_in_v1_and_absolute_in_v0(codec: CompressionType) -> None:
    records = [Record(100 + 2 * i, 7, None, b"v%d" % i) for i in range(3)]
    for magic, expected in ((1, [0, 2, 4]), (0, [100, 102, 104])):
        wrapper = BatchView(memoryview(build_legacy_message_set(magic, records, codec)), 0)
        value_at = 12 + (22 if magic else 14)
        inner = decompress(codec, wrapper.buf[value_at:], magic=magic)
        assert [v.offset_field for v in iter_batches(inner)] == expected
        assert wrapper.offset_field == 104


def wrapper(
    magic: int, offset: int, inner: bytes, codec: CompressionType = CompressionType.GZIP, ts: int = 0
) -> bytes:
    return encode_message(magic, offset, ts, None, compress(codec, inner, magic=magic), int(codec))


def test_wrapper_offset_zero_means_base_zero() -> None:
    inner = b"".join(encode_message(1, i, 5, None, b"x") for i in range(3))
    assert [r.offset for r in decode_legacy(wrapper(1, 0, inner))] == [0, 1, 2]
    assert [r.offset for r in decode_legacy(wrapper(1, 10, inner))] == [8, 9, 10]


def test_wrapper_offset_below_the_last_inner_offset_is_invalid() -> None:
    inner = b"".join(encode_message(1, i, 5, None, b"x") for i in range(3))
    with pytest.raises(
        InvalidRecordError, match="wrapper offset 1 is smaller than the last inner relative offset 2"
    ):
        decode_legacy(wrapper(1, 1, inner))


def test_log_append_time_wrapper_overrides_inner_timestamps() -> None:
    inner = b"".join(encode_message(1, i, 100 + i, None, b"x") for i in range(2))
    stamped = encode_message(1, 1, 999, None, compress(CompressionType.GZIP, inner), 1 | 0x08)
    assert [r.timestamp for r in decode_legacy(stamped)] == [999, 999]
    assert [r.timestamp for r in decode_legacy(wrapper(1, 1, inner, ts=999))] == [100, 101]


def test_inner_messages_must_not_be_compressed() -> None:
    nested = wrapper(1, 0, encode_message(1, 0, 0, None, b"x"))
    with pytest.raises(InvalidRecordError, match="Inner messages must not be compressed"):
        decode_legacy(wrapper(1, 0, nested))


def test_null_or_empty_wrappers_are_invalid() -> None:
    with pytest.raises(InvalidRecordError, match="null value"):
        decode_legacy(encode_message(1, 0, 0, None, None, int(CompressionType.GZIP)))
    with pytest.raises(InvalidRecordError, match="no inner messages"):
        decode_legacy(wrapper(1, 0, b""))


def test_zstd_in_a_legacy_message_is_unsupported() -> None:
    value = compress(CompressionType.ZSTD, encode_message(1, 0, 0, None, b"x"))
    with pytest.raises(UnsupportedCompressionError):
        decode_legacy(encode_message(1, 0, 0, None, value, int(CompressionType.ZSTD)))
    with pytest.raises(UnsupportedCompressionError):
        build_legacy_message_set(1, [b"x"], CompressionType.ZSTD)


def test_builder_refuses_headers_and_other_magics() -> None:
    with pytest.raises(ValueError, match="headers"):
        build_legacy_message_set(1, [Record(0, 0, None, b"x", (("h", None),))])
    with pytest.raises(ValueError, match="magic 0 or 1"):
        build_legacy_message_set(2, [b"x"])
    assert build_legacy_message_set(1, []) == b""


def test_corrupt_crc_and_bad_lengths() -> None:
    raw = bytearray(V1_HELLO)
    raw[-1] ^= 0x20
    with pytest.raises(CorruptRecordError, match="stored crc"):
        decode_legacy(bytes(raw))
    assert decode_legacy(bytes(raw), verify_crc=False)[0].value == b"hellO"
    long_value = bytearray(V1_HELLO)
    struct.pack_into(">i", long_value, 30, 6)
    with pytest.raises(InvalidRecordError, match="value of 6 bytes runs past"):
        decode_legacy(bytes(long_value), verify_crc=False)
    short_value = bytearray(V1_HELLO)
    struct.pack_into(">i", short_value, 30, 4)
    with pytest.raises(InvalidRecordError, match="Invalid record size"):
        decode_legacy(bytes(short_value), verify_crc=False)
    with pytest.raises(InvalidRecordError, match="magic 2"):
        decode_legacy(build_batch([b"x"]))


def test_corrupt_inner_crc() -> None:
    inner = bytearray(encode_message(1, 0, 0, None, b"x"))
    inner[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        decode_legacy(wrapper(1, 0, bytes(inner)))
    assert decode_legacy(wrapper(1, 0, bytes(inner)), verify_crc=False)[0].value == b"y"


def test_a_log_mixing_all_three_formats_iterates_deeply() -> None:
    log = (
        build_legacy_message_set(0, [b"a", b"b"], base_offset=0)
        + build_legacy_message_set(
            1, [Record(2, 20, b"k", b"c"), Record(3, 30, None, b"d")], CompressionType.SNAPPY
        )
        + build_batch([Record(4, 40, None, b"e", (("h", b"1"),))], compression=CompressionType.ZSTD)
        + V1_HELLO[:20]  # a torn trailing message is ignored
    )
    assert all_records(log) == [
        Record(0, -1, None, b"a"),
        Record(1, -1, None, b"b"),
        Record(2, 20, b"k", b"c"),
        Record(3, 30, None, b"d"),
        Record(4, 40, None, b"e", (("h", b"1"),)),
    ]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_set_legacy_timestamp_stamps_log_append_time(codec: CompressionType) -> None:
    records = [Record(4 + i, 100 + i, None, b"v%d" % i) for i in range(3)]
    first = build_legacy_message_set(1, [Record(0, 1, None, b"x")])
    raw = bytearray(first + build_legacy_message_set(1, records, codec))
    for view in list(iter_batches(raw))[1:]:
        set_legacy_timestamp(raw, view.position, 777, TimestampType.LOG_APPEND_TIME)
    assert raw[: len(first)] == first
    views = list(iter_batches(raw))
    assert all(v.is_valid() for v in views) and {v.timestamp_type for v in views[1:]} == {1}
    assert all_records(bytes(raw))[1:] == [Record(r.offset, 777, r.key, r.value) for r in records]
    before = bytes(raw)
    set_legacy_timestamp(raw, views[-1].position, 777, TimestampType.LOG_APPEND_TIME)
    assert raw == before
    with pytest.raises(InvalidRecordError, match="magic 0"):
        set_legacy_timestamp(bytearray(V0_HELLO), 0, 1, TimestampType.LOG_APPEND_TIME)
