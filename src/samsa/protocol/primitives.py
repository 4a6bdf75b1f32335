"""Kafka protocol primitive types: readers and writers over ``memoryview`` / ``bytearray``.

All integers are big-endian two's complement unless marked unsigned. ``N`` is a length; "compact" types store
``N + 1`` as an unsigned varint so that 0 can mean null.

    type              bytes            encoding
    ----------------  ---------------  -----------------------------------------------------------------
    bool              1                0 = false, anything else = true
    int8/16/32/64     1 / 2 / 4 / 8    signed, big-endian
    uint16 / uint32   2 / 4            unsigned, big-endian
    float64           8                IEEE 754 binary64, big-endian
    uuid              16               the 128-bit value, most significant byte first
    unsigned_varint   1-5              LEB128, 7 bits a byte, low group first, 0x80 = more bytes follow
    varint / varlong  1-5 / 1-10       zig-zag, then unsigned varint
    string            2 + N            int16 N (>= 0), then N bytes of UTF-8
    nullable_string   2 + N            int16 N; N = -1 means null
    compact_string    varint + N       unsigned varint N + 1 (0 = null when nullable), then UTF-8
    bytes             4 + N            int32 N (>= 0; -1 = null when nullable), then N bytes
    compact_bytes     varint + N       unsigned varint N + 1 (0 = null when nullable), then N bytes
    records           like bytes       a nullable (compact) bytes holding record batches; decoded as a
                                       zero-copy ``memoryview`` slice of the frame
    array             4 + items        int32 N (-1 = null when nullable), then N items
    compact_array     varint + items   unsigned varint N + 1 (0 = null), then N items
    tagged_fields     varint + ...     unsigned varint count, then per field: unsigned varint tag,
                                       unsigned varint size, ``size`` bytes; tags in ascending order

Readers take ``(buf, pos)`` and return ``(value, new_pos)``. They raise ``struct.error``, ``IndexError``,
``ValueError`` or :class:`DecodeError` on truncated or malformed input; :mod:`samsa.protocol.api` turns all of
these into :class:`~samsa.protocol.errors.RemoteProtocolError` at its boundary, so the hot paths carry no
per-field checks beyond what Python does anyway. Writers append to a ``bytearray`` and raise
:class:`~samsa.protocol.errors.EncodeError` for values the type cannot hold (e.g. null in a non-nullable field).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .errors import DecodeError, EncodeError

if TYPE_CHECKING:
    import uuid

    ZERO_UUID: uuid.UUID

T = TypeVar("T")
Reader = Callable[[memoryview, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
U16 = struct.Struct(">H")
U32 = struct.Struct(">I")
F64 = struct.Struct(">d")


def __getattr__(name: str) -> Any:
    """``ZERO_UUID``, made when a message module with a uuid field first asks for it: ``uuid`` (which imports
    ``platform``) is not imported at start-up."""
    if name == "ZERO_UUID":
        import uuid  # start-up time: see the docstring

        zero = uuid.UUID(int=0)
        globals()["ZERO_UUID"] = zero
        return zero
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class FileRegionLike(Protocol):
    """A byte range of an open file, written by reference (the broker sends it with ``sendfile``)."""

    @property
    def fd(self) -> int: ...

    @property
    def position(self) -> int: ...

    @property
    def size(self) -> int: ...

    def read_bytes(self) -> bytes: ...


RecordsLike = bytes | bytearray | memoryview | FileRegionLike

# ---------------------------------------------------------------- fixed width


def read_bool(buf: memoryview, pos: int) -> tuple[bool, int]:
    return buf[pos] != 0, pos + 1


def read_int8(buf: memoryview, pos: int) -> tuple[int, int]:
    return I8.unpack_from(buf, pos)[0], pos + 1


def read_int16(buf: memoryview, pos: int) -> tuple[int, int]:
    return I16.unpack_from(buf, pos)[0], pos + 2


def read_int32(buf: memoryview, pos: int) -> tuple[int, int]:
    return I32.unpack_from(buf, pos)[0], pos + 4


def read_int64(buf: memoryview, pos: int) -> tuple[int, int]:
    return I64.unpack_from(buf, pos)[0], pos + 8


def read_uint16(buf: memoryview, pos: int) -> tuple[int, int]:
    return U16.unpack_from(buf, pos)[0], pos + 2


def read_uint32(buf: memoryview, pos: int) -> tuple[int, int]:
    return U32.unpack_from(buf, pos)[0], pos + 4


def read_float64(buf: memoryview, pos: int) -> tuple[float, int]:
    return F64.unpack_from(buf, pos)[0], pos + 8


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    end = pos + 16
    if end > len(buf):
        raise DecodeError("uuid truncated", pos)
    import uuid  # start-up time: imported at the first uuid read (see __getattr__)

    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def write_int8(out: bytearray, value: int) -> None:
    out += I8.pack(value)


def write_int16(out: bytearray, value: int) -> None:
    out += I16.pack(value)


def write_int32(out: bytearray, value: int) -> None:
    out += I32.pack(value)


def write_int64(out: bytearray, value: int) -> None:
    out += I64.pack(value)


def write_uint16(out: bytearray, value: int) -> None:
    out += U16.pack(value)


def write_uint32(out: bytearray, value: int) -> None:
    out += U32.pack(value)


def write_float64(out: bytearray, value: float) -> None:
    out += F64.pack(value)


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes


# ---------------------------------------------------------------- varints


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (lengths, counts and tags are unsigned int32)."""
    byte = buf[pos]
    if byte < 0x80:
        return byte, pos + 1
    value = byte & 0x7F
    shift = 7
    while True:
        pos += 1
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & 0xFFFFFFFF, pos + 1
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes", pos)


def read_uvarlong(buf: memoryview, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift > 63:
            raise DecodeError("unsigned varlong longer than 10 bytes", pos)


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    unsigned, pos = read_uvarint(buf, pos)
    return (unsigned >> 1) ^ -(unsigned & 1), pos


def read_varlong(buf: memoryview, pos: int) -> tuple[int, int]:
    unsigned, pos = read_uvarlong(buf, pos)
    return (unsigned >> 1) ^ -(unsigned & 1), pos


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0x80:
        out.append(value)
        return
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# ---------------------------------------------------------------- strings


def _slice(buf: memoryview, pos: int, size: int) -> tuple[memoryview, int]:
    end = pos + size
    if size < 0 or end > len(buf):
        raise DecodeError(f"length {size} runs past the end of the buffer", pos)
    return buf[pos:end], end


def _utf8(raw: memoryview, pos: int) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError("string is not valid UTF-8", pos) from exc


def read_string(buf: memoryview, pos: int) -> tuple[str, int]:
    size = I16.unpack_from(buf, pos)[0]
    if size < 0:
        raise DecodeError("null in a non-nullable string", pos)
    raw, end = _slice(buf, pos + 2, size)
    return _utf8(raw, pos), end


def read_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    size = I16.unpack_from(buf, pos)[0]
    if size < 0:
        return None, pos + 2
    raw, end = _slice(buf, pos + 2, size)
    return _utf8(raw, pos), end


def read_compact_string(buf: memoryview, pos: int) -> tuple[str, int]:
    size, start = read_uvarint(buf, pos)
    if size == 0:
        raise DecodeError("null in a non-nullable compact string", pos)
    raw, end = _slice(buf, start, size - 1)
    return _utf8(raw, pos), end


def read_compact_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    size, start = read_uvarint(buf, pos)
    if size == 0:
        return None, start
    raw, end = _slice(buf, start, size - 1)
    return _utf8(raw, pos), end


def _encode_str(value: str | None, limit: int) -> bytes:
    if value is None:
        raise EncodeError("null in a non-nullable string")
    data = value.encode("utf-8")
    if len(data) > limit:
        raise EncodeError(f"string of {len(data)} bytes exceeds {limit}")
    return data


def write_string(out: bytearray, value: str | None) -> None:
    data = _encode_str(value, 0x7FFF)
    out += I16.pack(len(data))
    out += data


def write_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
    else:
        write_string(out, value)


def write_compact_string(out: bytearray, value: str | None) -> None:
    data = _encode_str(value, 0x7FFF)
    write_uvarint(out, len(data) + 1)
    out += data


def write_compact_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
    else:
        write_compact_string(out, value)


# ---------------------------------------------------------------- bytes and records


def read_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    size = I32.unpack_from(buf, pos)[0]
    if size < 0:
        raise DecodeError("null in non-nullable bytes", pos)
    raw, end = _slice(buf, pos + 4, size)
    return bytes(raw), end


def read_nullable_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    size = I32.unpack_from(buf, pos)[0]
    if size < 0:
        return None, pos + 4
    raw, end = _slice(buf, pos + 4, size)
    return bytes(raw), end


def read_compact_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    size, start = read_uvarint(buf, pos)
    if size == 0:
        raise DecodeError("null in non-nullable compact bytes", pos)
    raw, end = _slice(buf, start, size - 1)
    return bytes(raw), end


def read_compact_nullable_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    size, start = read_uvarint(buf, pos)
    if size == 0:
        return None, start
    raw, end = _slice(buf, start, size - 1)
    return bytes(raw), end


def read_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    """Records as a zero-copy slice of ``buf`` (null when the size is -1)."""
    size = I32.unpack_from(buf, pos)[0]
    if size < 0:
        return None, pos + 4
    return _slice(buf, pos + 4, size)


def read_compact_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    size, start = read_uvarint(buf, pos)
    if size == 0:
        return None, start
    return _slice(buf, start, size - 1)


def _check_bytes(value: RecordsLike | None) -> RecordsLike:
    if value is None:
        raise EncodeError("null in non-nullable bytes")
    return value


def write_bytes(out: bytearray, value: RecordsLike | None) -> None:
    value = _check_bytes(value)
    out += I32.pack(records_size(value))
    _put(out, value)


def write_nullable_bytes(out: bytearray, value: RecordsLike | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        write_bytes(out, value)


def write_compact_bytes(out: bytearray, value: RecordsLike | None) -> None:
    value = _check_bytes(value)
    write_uvarint(out, records_size(value) + 1)
    _put(out, value)


def write_compact_nullable_bytes(out: bytearray, value: RecordsLike | None) -> None:
    if value is None:
        out.append(0)
    else:
        write_compact_bytes(out, value)


def records_size(value: RecordsLike) -> int:
    """Byte length of a records value (a memoryview's ``len`` counts items, not bytes; a file region's ``size``)."""
    if isinstance(value, memoryview):
        return value.nbytes
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    return int(value.size)


def _put(out: bytearray, value: RecordsLike) -> None:
    """Append bytes; a file region (an object with ``fd``, ``position``, ``size``) is left as a hole in a buffer
    that keeps a ``regions`` list (the broker's sendfile path), or read in where the buffer keeps none."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        out += value
        return
    regions = getattr(out, "regions", None)
    if regions is not None:
        regions.append((len(out), value))
    else:
        out += value.read_bytes()


# ---------------------------------------------------------------- arrays


def read_array_length(buf: memoryview, pos: int) -> tuple[int, int]:
    """int32 item count; -1 is null. A count larger than the bytes left is rejected early."""
    count = I32.unpack_from(buf, pos)[0]
    if count > len(buf) - pos - 4:
        raise DecodeError(f"array of {count} items is longer than the buffer", pos)
    if count < -1:
        raise DecodeError(f"negative array length {count}", pos)
    return count, pos + 4


def read_compact_array_length(buf: memoryview, pos: int) -> tuple[int, int]:
    """Unsigned varint N + 1; returns N, with -1 for null."""
    count, start = read_uvarint(buf, pos)
    count -= 1
    if count > len(buf) - start:
        raise DecodeError(f"array of {count} items is longer than the buffer", pos)
    return count, start


def read_array(
    buf: memoryview, pos: int, item: Callable[[memoryview, int], tuple[T, int]]
) -> tuple[list[T], int]:
    count, pos = read_array_length(buf, pos)
    if count < 0:
        raise DecodeError("null in a non-nullable array", pos)
    return _read_items(buf, pos, count, item)


def read_nullable_array(
    buf: memoryview, pos: int, item: Callable[[memoryview, int], tuple[T, int]]
) -> tuple[list[T] | None, int]:
    count, pos = read_array_length(buf, pos)
    if count < 0:
        return None, pos
    return _read_items(buf, pos, count, item)


def read_compact_array(
    buf: memoryview, pos: int, item: Callable[[memoryview, int], tuple[T, int]]
) -> tuple[list[T], int]:
    count, pos = read_compact_array_length(buf, pos)
    if count < 0:
        raise DecodeError("null in a non-nullable compact array", pos)
    return _read_items(buf, pos, count, item)


def read_compact_nullable_array(
    buf: memoryview, pos: int, item: Callable[[memoryview, int], tuple[T, int]]
) -> tuple[list[T] | None, int]:
    count, pos = read_compact_array_length(buf, pos)
    if count < 0:
        return None, pos
    return _read_items(buf, pos, count, item)


def _read_items(
    buf: memoryview, pos: int, count: int, item: Callable[[memoryview, int], tuple[T, int]]
) -> tuple[list[T], int]:
    items: list[T] = []
    append = items.append
    for _ in range(count):
        value, pos = item(buf, pos)
        append(value)
    return items, pos


def write_array(out: bytearray, values: list[T] | None, item: Callable[[bytearray, T], None]) -> None:
    if values is None:
        raise EncodeError("null in a non-nullable array")
    out += I32.pack(len(values))
    for value in values:
        item(out, value)


def write_nullable_array(
    out: bytearray, values: list[T] | None, item: Callable[[bytearray, T], None]
) -> None:
    if values is None:
        out += b"\xff\xff\xff\xff"
    else:
        write_array(out, values, item)


def write_compact_array(out: bytearray, values: list[T] | None, item: Callable[[bytearray, T], None]) -> None:
    if values is None:
        raise EncodeError("null in a non-nullable compact array")
    write_uvarint(out, len(values) + 1)
    for value in values:
        item(out, value)


def write_compact_nullable_array(
    out: bytearray, values: list[T] | None, item: Callable[[bytearray, T], None]
) -> None:
    if values is None:
        out.append(0)
    else:
        write_compact_array(out, values, item)


# ---------------------------------------------------------------- tagged fields


def skip_tagged_fields(buf: memoryview, pos: int) -> int:
    """Skip a tagged-field section whose tags are all unknown to the reader."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise DecodeError("tagged field runs past the end of the buffer", pos)
    return pos


def read_tagged_field_header(buf: memoryview, pos: int) -> tuple[int, int, int]:
    """Return ``(tag, start, end)`` of one tagged field."""
    tag, pos = read_uvarint(buf, pos)
    size, pos = read_uvarint(buf, pos)
    end = pos + size
    if end > len(buf):
        raise DecodeError(f"tagged field {tag} runs past the end of the buffer", pos)
    return tag, pos, end


def write_tagged_fields(out: bytearray, fields: list[tuple[int, bytearray]]) -> None:
    """Write ``(tag, encoded value)`` pairs, already in ascending tag order."""
    write_uvarint(out, len(fields))
    for tag, data in fields:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data
