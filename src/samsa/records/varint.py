"""Zig-zag varints, as Kafka's ``ByteUtils`` writes them inside v2 records and flexible protocol messages.

    zigzag32(v) = (v << 1) ^ (v >> 31)          zigzag64(v) = (v << 1) ^ (v >> 63)
    unzigzag(u) = (u >> 1) ^ -(u & 1)

The zig-zagged value is written as unsigned LEB128: 7 bits per byte, least significant group first, 0x80 set on
every byte but the last. A varint (int32) takes at most 5 bytes, a varlong (int64) at most 10; a longer encoding is
an error (``VarintError``). As in Java, bits past the 32nd (64th) in the last byte are dropped on decode.

    value        bytes                  value          bytes
    0            00                     64             80 01
    -1           01                     300            d8 04
    1            02                     2147483647     fe ff ff ff 0f
    -64          7f                     -2147483648    ff ff ff ff 0f

Encoding of small values (|v| < 8192) comes from a precomputed table; decoding has a one-byte fast path. The
record codec inlines the same fast path in its loop.
"""

from __future__ import annotations

import operator

from .errors import VarintError

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_TABLE_LIMIT = 1 << 13  # values in [-8192, 8192) encode in at most 2 bytes and come from the table


def zigzag32(value: int) -> int:
    return ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF


def zigzag64(value: int) -> int:
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


def unzigzag(unsigned: int) -> int:
    return (unsigned >> 1) ^ -(unsigned & 1)


def encode_unsigned_varint(unsigned: int) -> bytes:
    """LEB128 of a non-negative int (Kafka's ``writeUnsignedVarint`` / ``writeUnsignedVarlong``)."""
    if unsigned < 0x80:
        return bytes((unsigned,))
    out = bytearray()
    while unsigned >= 0x80:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def _small_table() -> tuple[bytes, ...]:
    """The encodings of [-8192, 8192), at ``value + 8192``.

    An unsigned value below 2**7 is one byte; below 2**14 two: ``(u & 0x7f) | 0x80``, then ``u >> 7``. Zig-zag maps
    v < 0 to -2v - 1 and v >= 0 to 2v, so the table is the odd unsigned encodings descending, then the even ones
    ascending (built this way, the table costs a third of encoding each value: it is built at every start).
    """
    unsigned = [bytes((u,)) for u in range(0x80)]
    unsigned += [bytes((low, high)) for high in range(1, 0x80) for low in range(0x80, 0x100)]
    odd_descending = range(2 * _TABLE_LIMIT - 1, 0, -2)
    even_ascending = range(0, 2 * _TABLE_LIMIT, 2)
    table: tuple[bytes, ...] = operator.itemgetter(*odd_descending, *even_ascending)(unsigned)
    return table


_SMALL = _small_table()


def encode_varint(value: int) -> bytes:
    """Zig-zag varint of an int32."""
    if -_TABLE_LIMIT <= value < _TABLE_LIMIT:
        return _SMALL[value + _TABLE_LIMIT]
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint value {value} is outside the int32 range")
    return encode_unsigned_varint(zigzag32(value))


def encode_varlong(value: int) -> bytes:
    """Zig-zag varlong of an int64."""
    if -_TABLE_LIMIT <= value < _TABLE_LIMIT:
        return _SMALL[value + _TABLE_LIMIT]
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong value {value} is outside the int64 range")
    return encode_unsigned_varint(zigzag64(value))


def size_of_unsigned_varint(unsigned: int) -> int:
    return max(1, (unsigned.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    return size_of_unsigned_varint(zigzag32(value))


def size_of_varlong(value: int) -> int:
    return size_of_unsigned_varint(zigzag64(value))


def _read_leb128(buf: bytes | bytearray | memoryview, pos: int, max_bytes: int) -> tuple[int, int]:
    try:
        byte = buf[pos]
        if byte < 0x80:
            return byte, pos + 1
        result = byte & 0x7F
        shift = 7
        for index in range(pos + 1, pos + max_bytes):
            byte = buf[index]
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result, index + 1
            shift += 7
    except IndexError:
        raise VarintError(f"buffer ends inside the varint at position {pos}") from None
    raise VarintError(f"varint at position {pos} is longer than {max_bytes} bytes")


def decode_unsigned_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint (uint32, at most 5 bytes) at ``pos``; return (value, position after it)."""
    unsigned, pos = _read_leb128(buf, pos, 5)
    return unsigned & 0xFFFFFFFF, pos


def decode_unsigned_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varlong (uint64, at most 10 bytes) at ``pos``; return (value, position after it)."""
    unsigned, pos = _read_leb128(buf, pos, 10)
    return unsigned & 0xFFFFFFFFFFFFFFFF, pos


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Read a zig-zag varint (int32, at most 5 bytes) at ``pos``; return (value, position after it)."""
    byte = buf[pos] if pos < len(buf) else -1
    if 0 <= byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    unsigned, pos = _read_leb128(buf, pos, 5)
    return unzigzag(unsigned & 0xFFFFFFFF), pos


def decode_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Read a zig-zag varlong (int64, at most 10 bytes) at ``pos``; return (value, position after it)."""
    byte = buf[pos] if pos < len(buf) else -1
    if 0 <= byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    unsigned, pos = _read_leb128(buf, pos, 10)
    return unzigzag(unsigned & 0xFFFFFFFFFFFFFFFF), pos
