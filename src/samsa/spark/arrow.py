"""Records to Arrow: the schema Spark's Kafka connector exposes, as the ``pyarrow.RecordBatch`` a Python data source
yields.

Columns (all nullable; Spark rejects a batch whose schema differs in any way, see ``docs`` spark.md §1.4):

    key            binary
    value          binary
    topic          string
    partition      int32
    offset         int64
    timestamp      timestamp[us, tz=UTC]     (Kafka milliseconds * 1000)
    timestampType  int32                     (0 CreateTime, 1 LogAppendTime)
    headers        list<struct<key: string, value: binary>>    only with includeHeaders=true; null when none

``RecordBatchBuilder`` collects decoded records column by column and cuts a batch every ``batch_rows`` rows.
Not thread-safe; one builder per ``read()`` call.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from samsa.records import BatchView, InvalidRecordError, Record, decompress

DEFAULT_BATCH_ROWS = 16384

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))

BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
]

SPARK_DDL = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
HEADERS_DDL = ", headers array<struct<key: string, value: binary>>"


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = list(BASE_FIELDS)
    if include_headers:
        fields.append(pa.field("headers", HEADER_TYPE))
    return pa.schema(fields)


def spark_ddl(include_headers: bool) -> str:
    """The Spark schema of the source as a DDL string."""
    return SPARK_DDL + (HEADERS_DDL if include_headers else "")


@dataclass
class _Piece:
    """Rows of one or more records in column form: binary columns as lengths (-1 = null) plus their bytes."""

    key_lengths: np.ndarray
    key_data: bytes
    value_lengths: np.ndarray
    value_data: bytes
    offsets: np.ndarray
    timestamps: np.ndarray
    timestamp_type: int
    headers: list[list[dict[str, object]] | None] | None

    @property
    def rows(self) -> int:
        return len(self.offsets)


def _piece_from_records(records: Sequence[Record], timestamp_type: int, include_headers: bool) -> _Piece:
    keys = [r.key for r in records]
    values = [r.value for r in records]
    return _Piece(
        np.array([-1 if k is None else len(k) for k in keys], np.int64),
        b"".join(k for k in keys if k is not None),
        np.array([-1 if v is None else len(v) for v in values], np.int64),
        b"".join(v for v in values if v is not None),
        np.array([r.offset for r in records], np.int64),
        np.array([r.timestamp for r in records], np.int64),
        timestamp_type,
        [[{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in records]
        if include_headers
        else None,
    )


_HEADER = struct.Struct(">qiiBIhiqqqhii")
_STEPS = np.arange(10, dtype=np.uint64)


def _varints(buf: np.ndarray, positions: np.ndarray, width: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints starting at each of ``positions`` (``buf`` padded with 10 zero bytes): values, next positions.

    ``width`` is the longest encoding expected: 5 for a varint (int32), 10 for a varlong.
    """
    steps = _STEPS[:width]
    window = buf[positions[:, None] + np.arange(width)].astype(np.uint64)
    length = np.argmin((window & 0x80) != 0, axis=1) + 1
    used = steps[None, :] < length[:, None]
    raw = np.sum(np.where(used, (window & 0x7F) << (steps * 7), 0), axis=1, dtype=np.uint64)
    value = (raw >> np.uint64(1)).astype(np.int64) ^ -((raw & np.uint64(1)).astype(np.int64))
    return value, positions + length


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    """Encoded sizes of non-negative zig-zag varints (values below 2**27)."""
    doubled = values * 2
    return 1 + (doubled >= 1 << 7) + (doubled >= 1 << 14) + (doubled >= 1 << 21)


def _gather(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> bytes:
    sizes = np.maximum(lengths, 0)
    total = int(sizes.sum())
    if total == 0:
        return b""
    ends = np.cumsum(sizes)
    index = np.arange(total) + np.repeat(starts - (ends - sizes), sizes)
    return bytes(buf[index].tobytes())


def piece_from_batch(view: BatchView, include_headers: bool) -> _Piece | None:
    """The records of a v2 batch decoded column-wise with numpy; None when it has headers (the caller decodes it
    record by record) or is not v2."""
    if view.magic != 2:
        return None
    (base_offset, _, _, _, _, attributes, last_delta, base_ts, max_ts, _, _, _, count) = _HEADER.unpack_from(
        view.buf, view.position
    )
    payload = view.buf[view.position + 61 : view.end]
    codec = attributes & 0x07
    data = bytes(payload) if codec == 0 else decompress(codec, payload)
    buf = np.frombuffer(data + bytes(10), np.uint8)
    starts = np.empty(count, np.int64)
    pos = 0
    end = len(data)
    for i in range(count):  # record boundaries: the one sequential step
        byte = data[pos]
        if byte < 0x80:
            length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
        elif data[pos + 1] < 0x80:
            byte = (byte & 0x7F) | (data[pos + 1] << 7)
            length, pos = (byte >> 1) ^ -(byte & 1), pos + 2
        else:
            return None
        starts[i] = pos
        pos += length
        if length < 0 or pos > end:
            raise InvalidRecordError(f"record {i} of the batch at offset {base_offset} overruns it")
    if pos != end:
        raise InvalidRecordError(f"batch at offset {base_offset} has bytes after its {count} records")
    ts_delta, at = _varints(buf, starts + 1)
    if last_delta == count - 1 and count < 1 << 26:  # no gaps: deltas are 0..count-1
        offset_delta = np.arange(count, dtype=np.int64)
        at = at + _varint_sizes(offset_delta)
    else:
        offset_delta, at = _varints(buf, at, 5)
    key_len, at = _varints(buf, at, 5)
    key_starts = at
    value_len, at = _varints(buf, at + np.maximum(key_len, 0), 5)
    value_starts = at
    header_count, _ = _varints(buf, at + np.maximum(value_len, 0), 5)
    if count and header_count.any():
        return None
    log_append = bool(attributes & 0x08)
    return _Piece(
        key_len,
        _gather(buf, key_starts, key_len),
        value_len,
        _gather(buf, value_starts, value_len),
        base_offset + offset_delta,
        np.full(count, max_ts, np.int64) if log_append else base_ts + ts_delta,
        1 if log_append else 0,
        [None] * count if include_headers else None,
    )


def _repeat_string(text: str, n: int) -> pa.Array:
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(raw * n)], 0
    )


def _binary(lengths: np.ndarray, data: bytes) -> pa.Array:
    valid = lengths >= 0
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(np.maximum(lengths, 0), out=offsets[1:])
    nulls = int(len(lengths) - valid.sum())
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes()) if nulls else None
    return pa.Array.from_buffers(
        pa.binary(), len(lengths), [bitmap, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)], nulls
    )


class RecordBatchBuilder:
    """Column pieces of one topic-partition's records; ``flush`` turns them into one RecordBatch.

    Not thread-safe; one builder per ``read()`` call.
    """

    def __init__(
        self, topic: str, partition: int, include_headers: bool, batch_rows: int = DEFAULT_BATCH_ROWS
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.include_headers = include_headers
        self.batch_rows = batch_rows
        self.schema = arrow_schema(include_headers)
        self._pieces: list[_Piece] = []
        self._rows = 0

    def __len__(self) -> int:
        return self._rows

    def _push(self, piece: _Piece) -> Iterator[pa.RecordBatch]:
        if piece.rows:
            self._pieces.append(piece)
            self._rows += piece.rows
        if self._rows >= self.batch_rows:
            yield self.flush()

    def add(self, records: Iterable[Record], timestamp_type: int) -> Iterator[pa.RecordBatch]:
        """Append ``records`` (one batch's, sharing ``timestamp_type``); yield a RecordBatch when full."""
        yield from self._push(_piece_from_records(list(records), timestamp_type, self.include_headers))

    def add_view(self, view: BatchView) -> Iterator[pa.RecordBatch] | None:
        """Append a whole batch decoded column-wise; None (nothing appended) when it needs ``add`` instead."""
        piece = piece_from_batch(view, self.include_headers)
        return None if piece is None else self._push(piece)

    def flush(self) -> pa.RecordBatch:
        pieces, self._pieces, self._rows = self._pieces, [], 0
        n = sum(p.rows for p in pieces)
        cat = np.concatenate
        micros = cat([p.timestamps for p in pieces]) * 1000 if pieces else np.zeros(0, np.int64)
        columns: list[pa.Array] = [
            _binary(
                cat([p.key_lengths for p in pieces]) if pieces else np.zeros(0, np.int64),
                b"".join(p.key_data for p in pieces),
            ),
            _binary(
                cat([p.value_lengths for p in pieces]) if pieces else np.zeros(0, np.int64),
                b"".join(p.value_data for p in pieces),
            ),
            _repeat_string(self.topic, n),
            pa.array(np.full(n, self.partition, np.int32), pa.int32()),
            pa.array(cat([p.offsets for p in pieces]) if pieces else np.zeros(0, np.int64), pa.int64()),
            pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array(
                np.concatenate([np.full(p.rows, p.timestamp_type, np.int32) for p in pieces])
                if pieces
                else np.zeros(0, np.int32),
                pa.int32(),
            ),
        ]
        if self.include_headers:
            headers: list[list[dict[str, object]] | None] = []
            for p in pieces:
                headers.extend(p.headers or [None] * p.rows)
            columns.append(pa.array(headers, HEADER_TYPE))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def empty_batch(include_headers: bool) -> pa.RecordBatch:
    schema = arrow_schema(include_headers)
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def headers_from_arrow(value: Sequence[dict[str, object]] | None) -> tuple[tuple[str, bytes | None], ...]:
    """A ``headers`` cell (as ``to_pylist`` gives it) back to record headers."""
    if not value:
        return ()
    out: list[tuple[str, bytes | None]] = []
    for item in value:
        key = item["key"]
        raw = item["value"]
        if raw is None:
            out.append((str(key), None))
        elif isinstance(raw, str):
            out.append((str(key), raw.encode()))
        else:
            assert isinstance(raw, (bytes, bytearray, memoryview))
            out.append((str(key), bytes(raw)))
    return tuple(out)
