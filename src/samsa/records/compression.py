"""Kafka's compression codecs, as they frame a batch's records (v2) or a wrapper message's value (v0/v1).

    id  name    stream format written                          read
    0   none    —                                              —
    1   gzip    gzip member (RFC 1952), level 6                any gzip stream, concatenated members too
    2   snappy  snappy-java (xerial) stream, 32 KiB blocks     xerial stream, or one raw snappy block
    3   lz4     LZ4 frame, independent 64 KiB blocks           any LZ4 frame; magic 0 ignores the header checksum
    4   zstd    zstd frame, level 3                            any zstd frame(s); never inside a v0/v1 message

xerial (snappy-java ``SnappyOutputStream``) stream, big-endian:

    offset  size  field
    0       8     magic         0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
    8       4     int32 version 1
    12      4     int32 compat  1
    16      ...   blocks: int32 compressed length, then that many bytes of one raw snappy block

LZ4 frame as Kafka's ``KafkaLZ4BlockOutputStream`` writes it, little-endian:

    offset  size  field
    0       4     magic 0x184D2204
    4       1     FLG 0x60: version 01, blocks independent, no block checksum, no content size or checksum
    5       1     BD  0x40: largest block 64 KiB
    6       1     HC  (xxHash32(FLG, BD) >> 8) & 0xFF; for magic 0 Kafka hashed magic+FLG+BD (KAFKA-3160)
    7       ...   blocks: uint32 size (high bit set = stored uncompressed), then the block; uint32 0 ends the frame

Every failure to decompress becomes CorruptRecordError; an unknown id becomes UnsupportedCompressionError; data
that inflates past a caller's bound becomes InflatedTooLargeError, found without inflating it whole.
All codecs run in C (``cramjam``); only the 7-byte LZ4 frame header is built in Python.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum
from typing import Any

import cramjam

from .errors import CorruptRecordError, InflatedTooLargeError, UnsupportedCompressionError

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
LZ4_BLOCK_SIZE = 64 * 1024
_LZ4_FLG = 0x60
_LZ4_BD = 0x40
_LZ4_UNCOMPRESSED = 0x80000000

GZIP_LEVEL = 6
ZSTD_LEVEL = 3

_BE_I = struct.Struct(">i")
_LE_I = struct.Struct("<I")


class CompressionType(IntEnum):
    """Kafka's codec ids (attribute bits 0-2) and names."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name Kafka's configs use: "none", "gzip", "snappy", "lz4" or "zstd"."""
        return self.name.lower()

    def __str__(self) -> str:
        return self.kafka_name

    @classmethod
    def from_id(cls, codec_id: int) -> CompressionType:
        try:
            return cls(codec_id)
        except ValueError:
            raise UnsupportedCompressionError(f"Unknown compression type id: {codec_id}") from None

    @classmethod
    def for_name(cls, name: str) -> CompressionType:
        try:
            return cls[name.upper()]
        except KeyError:
            raise ValueError(f"Unknown compression name: {name}") from None


def compress(codec: CompressionType | int, data: bytes | bytearray | memoryview, *, magic: int = 2) -> bytes:
    """The compressed stream Kafka would write for ``data`` in a batch (or wrapper message) of ``magic``."""
    codec = CompressionType.from_id(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data, level=GZIP_LEVEL))
    if codec is CompressionType.SNAPPY:
        return _xerial_compress(data)
    if codec is CompressionType.LZ4:
        return _lz4_frame_compress(data, broken_header_checksum=magic == 0)
    if magic < 2:
        raise UnsupportedCompressionError(f"zstd is not allowed in a message of magic {magic}")
    return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL))


def decompress(
    codec: CompressionType | int,
    data: bytes | bytearray | memoryview,
    *,
    magic: int = 2,
    max_size: int | None = None,
) -> bytes:
    """The records (or inner message set) inside a compressed stream; CorruptRecordError when it is damaged.

    With ``max_size``, a stream that inflates past it raises InflatedTooLargeError having produced at most
    ``max_size + 1`` bytes (and held no more in memory): gzip through zlib's ``max_length``, snappy by each
    block's declared length before inflating it, lz4 and zstd into a buffer of that size.
    """
    codec = CompressionType.from_id(codec)
    if codec is CompressionType.ZSTD and magic < 2:
        raise UnsupportedCompressionError(f"zstd is not allowed in a message of magic {magic}")
    limit = max_size if max_size is not None else -1
    try:
        if codec is CompressionType.NONE:
            return bytes(data)
        if codec is CompressionType.GZIP:
            return bytes(cramjam.gzip.decompress(data)) if limit < 0 else _gzip_bounded(data, limit)
        if codec is CompressionType.SNAPPY:
            return _snappy_decompress(data, limit)
        frame = _lz4_fix_header_checksum(data) if codec is CompressionType.LZ4 and magic == 0 else data
        module = cramjam.lz4 if codec is CompressionType.LZ4 else cramjam.zstd
        return bytes(module.decompress(frame)) if limit < 0 else _into_bounded(module, frame, limit)
    except InflatedTooLargeError:
        raise
    except (cramjam.DecompressionError, ValueError, OSError, zlib.error) as exc:
        raise CorruptRecordError(
            f"failed to decompress {codec.kafka_name} data ({len(data)} bytes): {exc}"
        ) from exc


# --- snappy (xerial) ---------------------------------------------------------------------------------------


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    out = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE]))
        out.append(_BE_I.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    view = memoryview(data)
    if len(view) < len(XERIAL_HEADER) or view[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        _check_inflated(cramjam.snappy.decompress_raw_len(view) if limit >= 0 else 0, limit)
        return bytes(cramjam.snappy.decompress_raw(view))
    out = []
    total = 0
    position = len(XERIAL_HEADER)
    while position < len(view):
        if position + 4 > len(view):
            raise ValueError(f"xerial stream ends inside a block length at byte {position}")
        length = _BE_I.unpack_from(view, position)[0]
        position += 4
        if length < 0 or position + length > len(view):
            raise ValueError(f"xerial block of {length} bytes at byte {position} runs past the stream")
        block = view[position : position + length]
        if limit >= 0:
            total += cramjam.snappy.decompress_raw_len(block)
            _check_inflated(total, limit)
        out.append(bytes(cramjam.snappy.decompress_raw(block)))
        position += length
    return b"".join(out)


# --- bounded inflation -------------------------------------------------------------------------------------


def _check_inflated(size: int, limit: int) -> None:
    if limit >= 0 and size > limit:
        raise InflatedTooLargeError(f"compressed data inflates past {limit} bytes")


def _gzip_bounded(data: bytes | bytearray | memoryview, limit: int) -> bytes:
    """Every gzip member in turn, never asking zlib for more than one byte past ``limit`` in all."""
    out = bytearray()
    rest = bytes(data)
    if not rest:
        raise ValueError("no gzip member")
    while rest:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += inflater.decompress(rest, limit + 1 - len(out))
        _check_inflated(len(out), limit)
        if not inflater.eof:
            raise ValueError("gzip stream is truncated")
        rest = inflater.unused_data
    return bytes(out)


def _into_bounded(module: Any, frame: bytes | bytearray | memoryview, limit: int) -> bytes:
    """lz4 or zstd frames inflated into a buffer one byte larger than ``limit``: a full buffer, or cramjam
    refusing to write past its end, means the data inflates past the limit."""
    buffer = bytearray(limit + 1)
    try:
        written = int(module.decompress_into(frame, buffer))
    except cramjam.DecompressionError as exc:
        if "whole buffer" in str(exc):
            raise InflatedTooLargeError(f"compressed data inflates past {limit} bytes") from None
        raise
    _check_inflated(written, limit)
    return bytes(memoryview(buffer)[:written])


# --- lz4 frame ---------------------------------------------------------------------------------------------


def _lz4_frame_compress(data: bytes | bytearray | memoryview, *, broken_header_checksum: bool) -> bytes:
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    hashed = LZ4_FRAME_MAGIC + descriptor if broken_header_checksum else descriptor
    out = [LZ4_FRAME_MAGIC, descriptor, bytes(((xxhash32(hashed) >> 8) & 0xFF,))]
    view = memoryview(data)
    for start in range(0, len(view), LZ4_BLOCK_SIZE):
        chunk = view[start : start + LZ4_BLOCK_SIZE]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            out.append(_LE_I.pack(len(chunk) | _LZ4_UNCOMPRESSED))
            out.append(bytes(chunk))
        else:
            out.append(_LE_I.pack(len(block)))
            out.append(block)
    out.append(_LE_I.pack(0))
    return b"".join(out)


def _lz4_fix_header_checksum(data: bytes | bytearray | memoryview) -> bytes:
    """Rewrite the frame's HC byte to the standard checksum, so a magic-0 frame (Kafka's old, broken HC) reads."""
    frame = bytearray(data)
    if len(frame) < 7 or frame[:4] != LZ4_FRAME_MAGIC:
        raise ValueError("not an LZ4 frame (bad magic or too short)")
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if end >= len(frame):
        raise ValueError("LZ4 frame ends inside its descriptor")
    frame[end] = (xxhash32(bytes(frame[4:end])) >> 8) & 0xFF
    return bytes(frame)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _M32


def xxhash32(data: bytes, seed: int = 0) -> int:
    """xxHash32, in Python: only used over LZ4 frame descriptors (a few bytes)."""
    length = len(data)
    position = 0
    if length >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32
        while position + 16 <= length:
            w1, w2, w3, w4 = struct.unpack_from("<IIII", data, position)
            v1 = (_rotl((v1 + w1 * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + w2 * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + w3 * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + w4 * _P2) & _M32, 13) * _P1) & _M32
            position += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + length) & _M32
    while position + 4 <= length:
        (word,) = _LE_I.unpack_from(data, position)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        position += 4
    while position < length:
        h = (_rotl((h + data[position] * _P5) & _M32, 11) * _P1) & _M32
        position += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
