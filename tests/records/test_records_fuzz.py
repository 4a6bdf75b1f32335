"""Decoder fuzzing. Invariant: every decoder returns a result or raises RecordsError, never anything else.

Random bytes rarely get past a CRC, so most cases start from a valid batch, damage it, then repair the CRC
and the length so the damage reaches the record parsers (inside a compressed stream too).
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from records_strategies import fix_crc, record_lists, v2_batch

from samsa.records import (
    CompressionType,
    CorruptRecordError,
    Record,
    RecordsError,
    build_batch,
    build_legacy_message_set,
    compress,
    decode_batch,
    decode_legacy,
    encode_records,
    iter_batches,
    iter_records,
)
from samsa.records.legacy import encode_message

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEGACY_CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]


def decode_everything(data: bytes) -> list[Record]:
    """Every decoding path over ``data``: RecordsError is the only failure allowed to escape."""
    out: list[Record] = []
    try:
        out += decode_batch(data, verify_crc=False).records
    except RecordsError:
        pass
    try:
        out += decode_legacy(data, verify_crc=False)
    except RecordsError:
        pass
    try:
        for view in iter_batches(data):
            try:
                out += iter_records(view)
            except RecordsError:
                pass
    except RecordsError:
        pass
    return out


@st.composite
def damaged(draw: st.DrawFn, raw: bytes, start: int) -> bytearray:
    """``raw`` with bytes at or after ``start`` overwritten, inserted or deleted."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 4))):
        if len(data) <= start:
            break
        index = draw(st.integers(start, len(data) - 1))
        action = draw(st.sampled_from(["set", "insert", "delete"]))
        if action == "set":
            data[index] = draw(st.integers(0, 255))
        elif action == "insert":
            data[index:index] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[index : index + draw(st.integers(1, 4))]
    return data


def repair(data: bytearray) -> bytes:
    if len(data) >= 21:
        struct.pack_into(">i", data, 8, len(data) - 12)
        fix_crc(data)
    return bytes(data)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    decode_everything(data)


@FUZZ
@given(
    size=st.integers(-2, 90),
    magic=st.sampled_from([0, 1, 2, 3, 255]),
    epoch_or_crc=st.binary(min_size=4, max_size=4),
    tail=st.binary(max_size=90),
)
def test_random_bytes_behind_a_plausible_prefix(
    size: int, magic: int, epoch_or_crc: bytes, tail: bytes
) -> None:
    data = struct.pack(">qi", 5, size) + epoch_or_crc + bytes((magic,)) + tail
    for cut in (len(data), 12, 14, 17, 26):
        decode_everything(data[:cut])


def test_sizes_below_the_legacy_minimum_are_corrupt_for_every_decoder() -> None:
    data = struct.pack(">qi", 0, 2) + b"\x00\x00"
    for decode in (decode_batch, decode_legacy, lambda d: list(iter_records(d))):
        with pytest.raises(CorruptRecordError, match="size 2, smaller than the minimum record overhead"):
            decode(data)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_behind_a_valid_v2_header(tail: bytes) -> None:
    for count in (0, 1, 3):
        for codec in CompressionType:
            decode_everything(v2_batch(tail, count, attributes=int(codec)))


@FUZZ
@given(st.data())
def test_damaged_v2_batches(data: st.DataObject) -> None:
    records = data.draw(record_lists(), label="records")
    raw = build_batch(records, compression=data.draw(st.sampled_from(list(CompressionType)), label="codec"))
    decode_everything(repair(data.draw(damaged(raw, 21), label="damaged")))


@FUZZ
@given(st.data())
def test_damaged_records_inside_a_compressed_stream(data: st.DataObject) -> None:
    records = data.draw(record_lists(), label="records")
    plain = encode_records(records, records[0].offset, 0)
    codec = data.draw(st.sampled_from(list(CompressionType)), label="codec")
    broken = bytes(data.draw(damaged(plain, 0), label="damaged"))
    decode_everything(v2_batch(compress(codec, broken), len(records), attributes=int(codec)))


@FUZZ
@given(st.data())
def test_damaged_legacy_messages(data: st.DataObject) -> None:
    records = data.draw(record_lists(headers=False), label="records")
    magic = data.draw(st.sampled_from([0, 1]), label="magic")
    codec = data.draw(st.sampled_from(LEGACY_CODECS), label="codec")
    raw = build_legacy_message_set(magic, records, codec)
    first = next(iter_batches(raw))
    decode_everything(repair(data.draw(damaged(bytes(first.raw()), 16), label="damaged")))


@FUZZ
@given(st.data())
def test_damaged_inner_message_sets(data: st.DataObject) -> None:
    records = data.draw(record_lists(headers=False), label="records")
    magic = data.draw(st.sampled_from([0, 1]), label="magic")
    codec = data.draw(st.sampled_from(LEGACY_CODECS[1:]), label="codec")
    inner = build_legacy_message_set(magic, records)
    broken = bytearray(data.draw(damaged(inner, 0), label="damaged"))
    try:
        for view in iter_batches(broken):  # keep the inner CRCs right so the damage reaches the offset rules
            fix_crc(broken, view.position)
    except RecordsError:
        pass
    wrapper = encode_message(
        magic, data.draw(st.integers(0, 20)), 0, None, compress(codec, broken, magic=magic), int(codec)
    )
    decode_everything(wrapper)
