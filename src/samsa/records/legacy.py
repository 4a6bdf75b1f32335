"""Legacy messages, magic 0 and 1: build a message set, decode a shallow message and its compressed inner set.

Each entry of a message set is ``offset:int64 | size:int32 | message``; the message is (big-endian):

    offset  v0  v1  size  field
    crc     0   0   4     uint32 CRC-32 (IEEE, zlib) of bytes [magic, end of message)
    magic   4   4   1     0 or 1
    attrs   5   5   1     bits 0-2 codec (none, gzip, snappy, lz4; never zstd), bit 3 LogAppendTime (v1)
    ts      -   6   8     int64 timestamp (v1 only); v0 reads as -1
    keyLen  6   14  4     int32, -1 = null key
    key     10  18  k
    valLen  +   +   4     int32, -1 = null value
    value   +   +   v

A compressed set is one wrapper message: null key, codec in its attributes, and as value the compressed bytes
of an inner message set of the same magic. The wrapper's offset is the last inner offset. v1 inner offsets are
relative (0, 1, 2, ...; absolute = wrapper offset - last inner offset + inner offset, and a wrapper offset of 0
means base 0); v0 inner offsets are absolute. With a LogAppendTime wrapper every inner record reads as the
wrapper's timestamp.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from .batch import as_view, normalize_records
from .batch_view import COMPRESSION_MASK, LEGACY_MIN_SIZE, LOG_OVERHEAD, TIMESTAMP_TYPE_MASK, BatchView, crc32
from .compression import CompressionType, compress, decompress
from .errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionError
from .record import CREATE_TIME, NO_TIMESTAMP, Record, TimestampType

MAGIC_V0 = 0
MAGIC_V1 = 1
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22

_ENTRY = struct.Struct(">qi")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_CRC = struct.Struct(">I")


# --- building ----------------------------------------------------------------------------------------------


def build_legacy_message_set(
    magic: int,
    records: Iterable[Record | bytes | None],
    compression: CompressionType | int = CompressionType.NONE,
    base_offset: int | None = None,
    *,
    timestamp_type: TimestampType | int = CREATE_TIME,
    timestamp: int = NO_TIMESTAMP,
    log_append_time: int | None = None,
) -> bytes:
    """A v0/v1 message set as Kafka's builder writes it: one message per record, or one compressed wrapper.

    Items are ``Record`` or bare values, as for ``build_batch``. v0 drops timestamps. With LogAppendTime (v1)
    every message carries ``log_append_time`` (default: the largest record timestamp). Headers, zstd and a
    magic other than 0/1 are refused (ValueError, UnsupportedCompressionError).
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"legacy messages have magic 0 or 1, not {magic}")
    codec = CompressionType.from_id(compression)
    if codec is CompressionType.ZSTD:
        raise UnsupportedCompressionError(f"zstd is not allowed in a message of magic {magic}")
    timestamp_type = TimestampType(timestamp_type)
    base, items = normalize_records(records, base_offset, timestamp)
    if any(r.headers for r in items):
        raise ValueError(f"magic {magic} messages cannot carry headers")
    if not items:
        return b""
    log_append = magic == MAGIC_V1 and timestamp_type is TimestampType.LOG_APPEND_TIME
    type_bit = TIMESTAMP_TYPE_MASK if log_append else 0
    if log_append:
        append_time = max(r.timestamp for r in items) if log_append_time is None else log_append_time
        items = [Record(r.offset, append_time, r.key, r.value) for r in items]
    if codec is CompressionType.NONE:
        return b"".join(encode_message(magic, r.offset, r.timestamp, r.key, r.value, type_bit) for r in items)
    relative = magic == MAGIC_V1
    inner = b"".join(
        encode_message(
            magic, r.offset - base if relative else r.offset, r.timestamp, r.key, r.value, type_bit
        )
        for r in items
    )
    wrapper_timestamp = max(r.timestamp for r in items)
    value = compress(codec, inner, magic=magic)
    return encode_message(magic, items[-1].offset, wrapper_timestamp, None, value, int(codec) | type_bit)


def encode_message(
    magic: int, offset: int, timestamp: int, key: bytes | None, value: bytes | None, attributes: int = 0
) -> bytes:
    """One ``offset | size | message`` entry, CRC included."""
    body = [struct.pack(">bb", magic, attributes)]
    if magic >= MAGIC_V1:
        body.append(_Q.pack(timestamp))
    body.append(_I.pack(-1) if key is None else _I.pack(len(key)) + key)
    body.append(_I.pack(-1) if value is None else _I.pack(len(value)) + value)
    message = b"".join(body)
    return b"".join((_ENTRY.pack(offset, len(message) + 4), _CRC.pack(crc32(message)), message))


# --- decoding ----------------------------------------------------------------------------------------------


def decode_legacy(
    batch: BatchView | bytes | bytearray | memoryview,
    *,
    verify_crc: bool = True,
    max_inflated: int | None = None,
) -> list[Record]:
    """The records of one shallow v0/v1 message: itself, or the inner messages of a compressed wrapper.

    Raises CorruptRecordError (size, CRC, codec stream) or InvalidRecordError (format rules, inner
    compression, empty wrapper, impossible offsets); zstd raises UnsupportedCompressionError. With
    ``max_inflated``, a wrapper whose inner messages would inflate past it raises InflatedTooLargeError.
    """
    view = as_view(batch)
    magic = view.magic
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise InvalidRecordError(f"message at position {view.position} has magic {magic}, not 0 or 1")
    if verify_crc:
        view.ensure_valid()
    offset, attributes, timestamp, key, value = _parse_message(view.buf, view.position, view.end)
    codec_id = attributes & COMPRESSION_MASK
    if codec_id == CompressionType.NONE:
        return [Record(offset, timestamp, key, value)]
    codec = CompressionType.from_id(codec_id)
    if value is None:
        raise InvalidRecordError(f"compressed message at offset {offset} has a null value")
    inner = _decode_inner(decompress(codec, value, magic=magic, max_size=max_inflated), offset, verify_crc)
    if magic == MAGIC_V0:
        return inner
    if attributes & TIMESTAMP_TYPE_MASK:
        inner = [Record(r.offset, timestamp, r.key, r.value) for r in inner]
    return _absolute_offsets(inner, offset)


def inner_message_crcs(batch: BatchView) -> list[tuple[bool, int]]:
    """(CRC valid, stored CRC) of each inner message of a compressed v0/v1 wrapper, in order, for tools that print
    them as Kafka's dump does; the wrapper's codec stream must be sound (``decode_legacy`` raises where it is not)."""
    _, _, _, _, value = _parse_message(batch.buf, batch.position, batch.end)
    codec = CompressionType.from_id(batch.compression)
    data = decompress(codec, value or b"", magic=batch.magic)
    view = memoryview(data)
    out = []
    position = 0
    while len(data) - position >= LOG_OVERHEAD:
        end = position + LOG_OVERHEAD + _I.unpack_from(data, position + 8)[0]
        if end > len(data):
            break
        inner = BatchView(view, position)
        out.append((inner.is_valid(), inner.stored_crc))
        position = end
    return out


def _absolute_offsets(inner: list[Record], wrapper_offset: int) -> list[Record]:
    last_relative = inner[-1].offset
    if wrapper_offset == 0:
        base = 0
    elif wrapper_offset < last_relative:
        raise InvalidRecordError(
            f"wrapper offset {wrapper_offset} is smaller than the last inner relative offset {last_relative}"
        )
    else:
        base = wrapper_offset - last_relative
    return [Record(base + r.offset, r.timestamp, r.key, r.value) for r in inner]


def _decode_inner(data: bytes, wrapper_offset: int, verify_crc: bool) -> list[Record]:
    view = memoryview(data)
    records = []
    position = 0
    while len(data) - position >= LOG_OVERHEAD:
        size = _I.unpack_from(data, position + 8)[0]
        end = position + LOG_OVERHEAD + size
        if size < LEGACY_MIN_SIZE:
            raise CorruptRecordError(
                f"inner message at byte {position} of the wrapper at offset {wrapper_offset} has size {size}, "
                f"smaller than the minimum record overhead ({LEGACY_MIN_SIZE})"
            )
        if end > len(data):
            break  # a partial trailing entry ends the set, as Kafka's in-memory iteration does
        inner = BatchView(view, position)
        if inner.magic not in (MAGIC_V0, MAGIC_V1):
            raise InvalidRecordError(f"inner message at byte {position} has magic {inner.magic}")
        if verify_crc:
            inner.ensure_valid()
        offset, attributes, timestamp, key, value = _parse_message(view, position, end)
        if attributes & COMPRESSION_MASK:
            raise InvalidRecordError("Inner messages must not be compressed")
        records.append(Record(offset, timestamp, key, value))
        position = end
    if not records:
        raise InvalidRecordError(f"compressed message at offset {wrapper_offset} holds no inner messages")
    return records


def _parse_message(
    buf: memoryview, position: int, end: int
) -> tuple[int, int, int, bytes | None, bytes | None]:
    """(offset, attributes, timestamp, key, value) of the message entry in [position, end)."""
    offset = _Q.unpack_from(buf, position)[0]
    magic = buf[position + 16]
    attributes = buf[position + 17]
    minimum = LOG_OVERHEAD + (RECORD_OVERHEAD_V1 if magic >= MAGIC_V1 else RECORD_OVERHEAD_V0)
    if end - position < minimum:
        raise CorruptRecordError(
            f"magic {magic} message at offset {offset} is {end - position} bytes, below the minimum {minimum}"
        )
    cursor = position + 18
    timestamp = NO_TIMESTAMP
    if magic >= MAGIC_V1:
        timestamp = _Q.unpack_from(buf, cursor)[0]
        cursor += 8
    key, cursor = _read_bytes(buf, cursor, end - 4, offset, "key")
    value, cursor = _read_bytes(buf, cursor, end, offset, "value")
    if cursor != end:
        raise InvalidRecordError(
            f"Invalid record size: message at offset {offset} declares {end - position - LOG_OVERHEAD} "
            f"bytes but its fields use {cursor - position - LOG_OVERHEAD}"
        )
    return offset, attributes, timestamp, key, value


def _read_bytes(
    buf: memoryview, cursor: int, limit: int, offset: int, field: str
) -> tuple[bytes | None, int]:
    size = _I.unpack_from(buf, cursor)[0]
    cursor += 4
    if size < 0:
        return None, cursor
    if cursor + size > limit:
        raise InvalidRecordError(
            f"{field} of {size} bytes runs past the end of the message at offset {offset}"
        )
    return bytes(buf[cursor : cursor + size]), cursor + size


# --- in-place rewrites -------------------------------------------------------------------------------------


def set_legacy_timestamp(
    buf: bytearray | memoryview, position: int, timestamp: int, timestamp_type: TimestampType | int
) -> None:
    """Rewrite a v1 message's timestamp and timestamp-type bit in place, then its CRC-32.

    What a broker does to stamp LogAppendTime on a v1 message or compressed wrapper (whose inner records then
    all read as this timestamp). Does nothing when both already hold those values; v0 has no timestamp.
    """
    timestamp_type = TimestampType(timestamp_type)
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("a v1 message needs CreateTime or LogAppendTime, not NO_TIMESTAMP_TYPE")
    view = as_view(BatchView(memoryview(buf), position))
    if view.magic != MAGIC_V1 or view.size_in_bytes < LOG_OVERHEAD + RECORD_OVERHEAD_V1:
        raise InvalidRecordError(f"cannot set the timestamp of a magic {view.magic} message at {position}")
    if view.timestamp_type == timestamp_type and view.max_timestamp == timestamp:
        return
    target = view.buf
    attributes = target[position + 17] & ~TIMESTAMP_TYPE_MASK
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    target[position + 17] = attributes
    _Q.pack_into(target, position + 18, timestamp)
    _CRC.pack_into(target, position + 12, crc32(target[position + 16 : view.end]))
