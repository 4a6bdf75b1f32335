"""Codec framing: what Kafka writes (xerial snappy, Kafka's LZ4 frame) and what it tolerates on read."""

from __future__ import annotations

import gzip
import os
import random
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.records import (
    CompressionType,
    CorruptRecordError,
    InflatedTooLargeError,
    UnsupportedCompressionError,
    compress,
    decompress,
)
from samsa.records.compression import xxhash32

CODECS = [c for c in CompressionType if c is not CompressionType.NONE]


def test_ids_and_names_are_kafkas() -> None:
    assert [(int(c), c.kafka_name) for c in CompressionType] == [
        (0, "none"),
        (1, "gzip"),
        (2, "snappy"),
        (3, "lz4"),
        (4, "zstd"),
    ]
    assert CompressionType.for_name("lz4") is CompressionType.LZ4 and str(CompressionType.ZSTD) == "zstd"
    with pytest.raises(UnsupportedCompressionError, match="Unknown compression type id: 6"):
        CompressionType.from_id(6)
    with pytest.raises(ValueError, match="Unknown compression name: brotli"):
        CompressionType.for_name("brotli")


@settings(max_examples=60, deadline=None)
@given(
    codec=st.sampled_from(CODECS),
    magic=st.sampled_from([0, 1, 2]),
    data=st.one_of(st.binary(max_size=300), st.builds(os.urandom, st.integers(60_000, 140_000))),
)
def test_round_trip(codec: CompressionType, magic: int, data: bytes) -> None:
    if codec is CompressionType.ZSTD and magic < 2:
        with pytest.raises(UnsupportedCompressionError):
            compress(codec, data, magic=magic)
        return
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


def test_xerial_stream_layout() -> None:
    data = b"abcdefgh" * 10_000  # 80 000 bytes: three 32 KiB blocks
    stream = compress(CompressionType.SNAPPY, data)
    assert stream[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    position, blocks = 16, []
    while position < len(stream):
        (length,) = struct.unpack_from(">i", stream, position)
        blocks.append(bytes(cramjam.snappy.decompress_raw(stream[position + 4 : position + 4 + length])))
        position += 4 + length
    assert [len(b) for b in blocks] == [32768, 32768, 14464] and b"".join(blocks) == data


def test_raw_snappy_is_read_too() -> None:
    data = b"some clients send raw snappy " * 50
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_xxhash32_known_values() -> None:
    assert xxhash32(b"") == 0x02CC5D05
    assert xxhash32(b"a") == 0x550D7456
    assert xxhash32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_lz4_frame_header_is_kafkas() -> None:
    frame = compress(CompressionType.LZ4, b"x" * 1000)
    assert frame[:7].hex() == "04224d18604082"  # FLG 0x60, BD 0x40 (64 KiB), HC 0x82
    assert frame[-4:] == b"\x00\x00\x00\x00"
    assert bytes(cramjam.lz4.decompress(frame)) == b"x" * 1000  # a standard LZ4 frame reader agrees


def test_lz4_magic_0_keeps_kafkas_broken_header_checksum() -> None:
    frame = compress(CompressionType.LZ4, b"legacy" * 100, magic=0)
    assert frame[6] == (xxhash32(bytes.fromhex("04224d186040")) >> 8) & 0xFF != 0x82
    with pytest.raises(cramjam.DecompressionError):
        cramjam.lz4.decompress(frame)  # what standard readers make of it
    assert decompress(CompressionType.LZ4, frame, magic=0) == b"legacy" * 100
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.LZ4, frame, magic=1)  # v1 and v2 check the header checksum, as Kafka does


def test_lz4_magic_0_also_reads_correct_checksums_and_other_frame_options() -> None:
    data = os.urandom(200) * 700
    compressor = cramjam.lz4.Compressor(content_checksum=True, block_linked=True)
    compressor.compress(data)
    frame = bytes(compressor.finish())
    for magic in (0, 1, 2):
        assert decompress(CompressionType.LZ4, frame, magic=magic) == data


def test_incompressible_lz4_blocks_are_stored() -> None:
    data = os.urandom(70_000)
    frame = compress(CompressionType.LZ4, data)
    (first_block,) = struct.unpack_from("<I", frame, 7)
    assert first_block == 0x80000000 | 65536
    assert bytes(cramjam.lz4.decompress(frame)) == data


def test_concatenated_gzip_members_and_zstd_frames() -> None:
    assert decompress(CompressionType.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"
    two = bytes(cramjam.zstd.compress(b"ab")) + bytes(cramjam.zstd.compress(b"cd"))
    assert decompress(CompressionType.ZSTD, two) == b"abcd"


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize(
    "garbage",
    [b"", b"\x07", b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\xff\xff", random.Random(7).randbytes(64)],
)
def test_garbage_is_corrupt(codec: CompressionType, garbage: bytes) -> None:
    try:
        result = decompress(codec, garbage)
    except CorruptRecordError:
        return
    assert codec is CompressionType.SNAPPY and garbage == b""  # raw snappy of nothing may be nothing
    assert result == b""


def test_zstd_is_refused_for_legacy_magics() -> None:
    stream = compress(CompressionType.ZSTD, b"abc")
    for magic in (0, 1):
        with pytest.raises(UnsupportedCompressionError, match=f"magic {magic}"):
            decompress(CompressionType.ZSTD, stream, magic=magic)


@settings(max_examples=80, deadline=None)
@given(
    codec=st.sampled_from(CODECS),
    magic=st.sampled_from([0, 1, 2]),
    data=st.one_of(st.binary(max_size=300), st.builds(bytes, st.integers(0, 200_000))),
    slack=st.integers(-50, 50),
)
def test_bounded_inflation_matches_unbounded_or_refuses(
    codec: CompressionType, magic: int, data: bytes, slack: int
) -> None:
    if codec is CompressionType.ZSTD and magic < 2:
        return
    stream = compress(codec, data, magic=magic)
    limit = max(0, len(data) + slack)
    if len(data) <= limit:
        assert decompress(codec, stream, magic=magic, max_size=limit) == data
    else:
        with pytest.raises(InflatedTooLargeError, match=f"past {limit} bytes"):
            decompress(codec, stream, magic=magic, max_size=limit)


@pytest.mark.parametrize(
    ("codec", "stream"),
    [
        (CompressionType.GZIP, gzip.compress(b"ab", mtime=0) + gzip.compress(b"cd", mtime=0)),
        (CompressionType.ZSTD, bytes(cramjam.zstd.compress(b"ab")) + bytes(cramjam.zstd.compress(b"cd"))),
        (CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(b"abcd"))),
    ],
    ids=["gzip", "zstd", "snappy"],  # the same on every xdist worker (a gzip header holds a timestamp)
)
def test_bounded_inflation_of_multi_member_and_raw_streams(codec: CompressionType, stream: bytes) -> None:
    assert decompress(codec, stream, max_size=4) == b"abcd"
    with pytest.raises(InflatedTooLargeError):
        decompress(codec, stream, max_size=3)


def test_zstd_frame_without_content_size_is_bounded() -> None:
    compressor = cramjam.zstd.Compressor()
    compressor.compress(b"x" * 100_000)
    stream = bytes(compressor.finish())
    assert decompress(CompressionType.ZSTD, stream, max_size=100_000) == b"x" * 100_000
    with pytest.raises(InflatedTooLargeError):
        decompress(CompressionType.ZSTD, stream, max_size=99_999)


@pytest.mark.parametrize("codec", CODECS)
def test_bounded_inflation_of_garbage_is_still_corrupt(codec: CompressionType) -> None:
    for garbage in (b"", random.Random(7).randbytes(64)):
        if codec is CompressionType.SNAPPY and garbage == b"":
            continue
        with pytest.raises(CorruptRecordError):
            decompress(codec, garbage, max_size=1_000)


def test_a_gzip_bomb_is_refused() -> None:
    bomb = compress(CompressionType.GZIP, bytes(50_000_000))
    assert len(bomb) < 100_000
    with pytest.raises(InflatedTooLargeError):
        decompress(CompressionType.GZIP, bomb, max_size=1_000_000)
