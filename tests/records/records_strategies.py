"""Hypothesis strategies and small byte-level helpers shared by the record codec tests."""

from __future__ import annotations

import struct

from hypothesis import strategies as st

from samsa.records import Record, crc32c

MAX_TS = 2**45  # far beyond any real clock, small enough that deltas stay in int64
payloads = st.one_of(
    st.none(),
    st.just(b""),
    st.binary(max_size=64),
    st.binary(min_size=200, max_size=300),
)
big_payloads = st.one_of(
    payloads, st.builds(lambda n, b: b * n, st.integers(1000, 70000), st.binary(min_size=1, max_size=3))
)
timestamps = st.one_of(st.just(-1), st.integers(0, MAX_TS))
header_lists = st.lists(
    st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=16))), max_size=3
).map(tuple)


@st.composite
def record_lists(
    draw: st.DrawFn, *, headers: bool = True, big: bool = False, min_size: int = 1
) -> list[Record]:
    """Records with strictly increasing offsets (gaps allowed, as after compaction)."""
    count = draw(st.integers(min_size, 12))
    offset = draw(st.integers(0, 2**40))
    records = []
    for _ in range(count):
        records.append(
            Record(
                offset,
                draw(timestamps),
                draw(big_payloads if big else payloads),
                draw(big_payloads if big else payloads),
                draw(header_lists) if headers else (),
            )
        )
        offset += draw(st.integers(1, 3000))
    return records


def v2_batch(
    records: bytes,
    count: int,
    *,
    attributes: int = 0,
    base_offset: int = 0,
    base_timestamp: int = 0,
    max_timestamp: int = 0,
    last_offset_delta: int = 0,
) -> bytes:
    """A v2 batch around hand-made record bytes, with a correct CRC: to reach the decoder's record checks."""
    after_crc = struct.pack(
        ">hiqqqhii", attributes, last_offset_delta, base_timestamp, max_timestamp, -1, -1, -1, count
    )
    after_crc += records
    prefix = struct.pack(">qiib", base_offset, 9 + len(after_crc), -1, 2)
    return prefix + struct.pack(">I", crc32c(after_crc)) + after_crc


def fix_crc(batch: bytearray, position: int = 0) -> None:
    """Recompute the CRC of the batch (v2: CRC-32C at 17; legacy: CRC-32 at 12) starting at ``position``."""
    import zlib

    size = struct.unpack_from(">i", batch, position + 8)[0]
    end = position + 12 + size
    if batch[position + 16] >= 2:
        struct.pack_into(">I", batch, position + 17, crc32c(bytes(batch[position + 21 : end])))
    else:
        struct.pack_into(">I", batch, position + 12, zlib.crc32(bytes(batch[position + 16 : end])))
