"""Zig-zag varints against the spec's table and a plain reference encoder."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.records.errors import InvalidRecordError, VarintError
from samsa.records.varint import (
    decode_unsigned_varint,
    decode_unsigned_varlong,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_varint,
    size_of_varlong,
)

SPEC_TABLE = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (2147483647, "feffffff0f"),
    (-2147483648, "ffffffff0f"),
]
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


def reference(value: int, bits: int) -> bytes:
    """Zig-zag then LEB128, one bit-twiddle per step: the spec's definition, written the slow way."""
    unsigned = ((value << 1) ^ (value >> (bits - 1))) % (1 << bits)
    out = bytearray()
    while True:
        group, unsigned = unsigned & 0x7F, unsigned >> 7
        out.append(group | (0x80 if unsigned else 0))
        if not unsigned:
            return bytes(out)


@pytest.mark.parametrize(("value", "encoded"), SPEC_TABLE)
def test_spec_table(value: int, encoded: str) -> None:
    data = bytes.fromhex(encoded)
    assert encode_varint(value) == data
    assert encode_varlong(value) == data
    assert decode_varint(data, 0) == (value, len(data))
    assert decode_varlong(data, 0) == (value, len(data))
    assert size_of_varint(value) == len(data)


def test_every_value_of_the_precomputed_range_encodes_as_the_reference() -> None:
    for value in range(-(2**13) - 1, 2**13 + 1):  # the table's range and one past each end
        assert encode_varint(value) == encode_varlong(value) == reference(value, 32), value


@settings(max_examples=200, deadline=None)
@given(int32, st.binary(max_size=3), st.binary(max_size=3))
def test_varint_round_trip_inside_a_buffer(value: int, before: bytes, after: bytes) -> None:
    encoded = encode_varint(value)
    assert encoded == reference(value, 32)
    assert size_of_varint(value) == len(encoded)
    assert decode_varint(before + encoded + after, len(before)) == (value, len(before) + len(encoded))


@settings(max_examples=200, deadline=None)
@given(int64)
def test_varlong_round_trip(value: int) -> None:
    encoded = encode_varlong(value)
    assert encoded == reference(value, 64)
    assert size_of_varlong(value) == len(encoded) <= 10
    assert decode_varlong(encoded, 0) == (value, len(encoded))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_unsigned_round_trip(value: int) -> None:
    encoded = encode_unsigned_varint(value)
    assert decode_unsigned_varlong(encoded, 0) == (value, len(encoded))
    if value < 2**32:
        assert decode_unsigned_varint(encoded, 0) == (value, len(encoded))


def test_out_of_range_values_are_refused() -> None:
    with pytest.raises(ValueError):
        encode_varint(2**31)
    with pytest.raises(ValueError):
        encode_varlong(-(2**63) - 1)


def test_a_sixth_varint_byte_is_an_error() -> None:
    with pytest.raises(VarintError, match="longer than 5 bytes"):
        decode_varint(b"\x80\x80\x80\x80\x80\x00", 0)
    assert decode_varlong(b"\x80\x80\x80\x80\x80\x00", 0) == (0, 6)


def test_an_eleventh_varlong_byte_is_an_error() -> None:
    assert decode_varlong(b"\xff" * 9 + b"\x01", 0) == (-(2**63), 10)
    with pytest.raises(VarintError, match="longer than 10 bytes"):
        decode_varlong(b"\x80" * 10 + b"\x00", 0)


def test_a_buffer_ending_inside_a_varint_is_an_error() -> None:
    for data in (b"", b"\x80", b"\xff\xff"):
        with pytest.raises(VarintError):
            decode_varint(data, 0)
    assert issubclass(VarintError, InvalidRecordError)


def test_bits_past_32_in_the_fifth_byte_are_dropped_as_java_does() -> None:
    # 0x7f in the fifth byte carries bits 28..34; Java's int arithmetic keeps bits 28..31 only.
    assert decode_varint(b"\xfe\xff\xff\xff\x7f", 0) == (2147483647, 5)
    assert decode_unsigned_varint(b"\xff\xff\xff\xff\x7f", 0) == (2**32 - 1, 5)
