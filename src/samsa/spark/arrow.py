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

``RecordBatchBuilder`` holds whole batches (and record pieces) and cuts a RecordBatch every ``batch_rows`` rows
(or ``batch_bytes``). Not thread-safe; one builder per ``read()`` call.

How a cut is decoded (the reader's hot path): the v2 batches it holds are decoded together, column-wise. Record
boundaries are found by one tight Python loop over the length prefixes (the only per-record Python work); every
other field (timestamp and offset deltas, key and value lengths, the header count) is decoded for all records at
once with numpy, and keys and values are never copied by Python: their ranges become an Arrow ``binary_view``
array over the read buffer (or the decompressed payloads), which Arrow casts to ``binary``. A record is taken only
if its fields end exactly where its length says and it has no headers; any batch with one that is not (headers, a
length prefix over 2 bytes, damage) is decoded by ``samsa.records`` instead, which gives the rows or the error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from samsa.records import RECORD_BATCH_OVERHEAD, BatchView, Record, decompress, iter_records

DEFAULT_BATCH_ROWS = 16384
DEFAULT_BATCH_BYTES = 32 * 1024 * 1024

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
    """Rows of one or more records in column form. Keys and values are byte ranges of ``buffer`` (a length of -1 is
    a null); ``timestamp_types`` is per row."""

    buffer: bytes
    key_starts: np.ndarray
    key_lengths: np.ndarray
    value_starts: np.ndarray
    value_lengths: np.ndarray
    offsets: np.ndarray
    timestamps: np.ndarray
    timestamp_types: np.ndarray
    headers: list[list[dict[str, object]] | None] | None

    @property
    def rows(self) -> int:
        return len(self.offsets)

    def slice(self, lo: int, hi: int) -> _Piece:
        return _Piece(
            self.buffer,
            self.key_starts[lo:hi],
            self.key_lengths[lo:hi],
            self.value_starts[lo:hi],
            self.value_lengths[lo:hi],
            self.offsets[lo:hi],
            self.timestamps[lo:hi],
            self.timestamp_types[lo:hi],
            None if self.headers is None else self.headers[lo:hi],
        )


def _exclusive_cumsum(sizes: np.ndarray, base: int = 0) -> np.ndarray:
    out = np.empty(len(sizes), np.int64)
    if len(sizes):
        out[0] = base
        np.cumsum(sizes[:-1], out=out[1:])
        out[1:] += base
    return out


def _piece_from_records(records: Sequence[Record], timestamp_type: int, include_headers: bool) -> _Piece:
    keys = [r.key for r in records]
    values = [r.value for r in records]
    key_lengths = np.array([-1 if k is None else len(k) for k in keys], np.int64)
    value_lengths = np.array([-1 if v is None else len(v) for v in values], np.int64)
    key_sizes = np.maximum(key_lengths, 0)
    return _Piece(
        b"".join([k for k in keys if k] + [v for v in values if v]),
        _exclusive_cumsum(key_sizes),
        key_lengths,
        _exclusive_cumsum(np.maximum(value_lengths, 0), int(key_sizes.sum())),
        value_lengths,
        np.array([r.offset for r in records], np.int64),
        np.array([r.timestamp for r in records], np.int64),
        np.full(len(records), timestamp_type, np.int32),
        [[{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in records]
        if include_headers
        else None,
    )


def _piece_by_records(view: BatchView, include_headers: bool) -> _Piece:
    """The reference path (``samsa.records``): any magic, headers, and the exact error for a damaged batch."""
    records = list(iter_records(view, verify_crc=False))
    return _piece_from_records(records, view.timestamp_type, include_headers)


_MASK32 = np.uint64(0xFFFFFFFF)
_MIN_RECORD = 7  # length, attributes, timestamp delta, offset delta, key length, value length, header count


def _varints(
    u8: np.ndarray, at: np.ndarray, last: int, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The zig-zag varints starting at each of ``at``: values, next positions, and a mask of the ones longer than
    ``width`` bytes (None when there are none). ``width`` is 5 for a varint (int32) or 10 for a varlong (int64);
    as in ``samsa.records.varint``, bits past the 32nd (64th) are dropped. Reads are clipped to ``u8[last]``, so a
    position past the end decodes to garbage rather than failing: the caller's end-of-record check rejects it."""
    b = u8[np.minimum(at, last)]
    cont = b >= 0x80
    if not cont.any():
        return (b >> 1).astype(np.int64) ^ -(b & 1).astype(np.int64), at + 1, None
    raw = (b & 0x7F).astype(np.uint64)
    size = 1 + cont.astype(np.int64)
    for k in range(1, width):
        b = u8[np.minimum(at + k, last)]
        raw |= np.where(cont, (b & 0x7F).astype(np.uint64) << np.uint64(7 * k), np.uint64(0))
        cont = cont & (b >= 0x80)
        if not cont.any():
            break
        size += cont
    if width == 5:
        raw &= _MASK32
    value = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return value, at + size, cont if cont.any() else None


@dataclass
class _Batch:
    """One v2 batch of a run: its records are ``buffer[start:end]`` (the uncompressed payload)."""

    view: BatchView
    start: int
    end: int
    count: int
    base_offset: int
    base_timestamp: int
    max_timestamp: int
    log_append: bool


def _decode_run(buf: bytes, batches: list[_Batch], include_headers: bool) -> list[_Piece | BatchView]:
    """The records of ``batches`` (all in ``buf``) decoded column-wise in one numpy pass, as pieces in batch order;
    a batch the column decoder does not take (headers, a length prefix over 2 bytes, anything malformed) is returned
    as its view, for ``_piece_by_records`` to decode exactly or to raise its error.

    Only record boundaries are found record by record (each length prefix gives the next record's position). Every
    other field is decoded for all records at once and a record is accepted only if its fields end exactly at the
    record's end with a zero header count, which is what the reference decoder checks; anything else goes to it.
    """
    prefix, walked = _walk_records(buf, batches)
    if not prefix:  # nothing to decode: the batches that walked hold no records
        return [batch.view for batch, ok in zip(batches, walked, strict=True) if not ok]
    good = [b for b, ok in zip(batches, walked, strict=True) if ok]
    whole, bad_batch = _decode_columns(buf, good, prefix, include_headers)
    if len(good) == len(batches) and not bad_batch.any():
        return [whole]
    out: list[_Piece | BatchView] = []
    row = run_lo = g = 0
    for batch, ok in zip(batches, walked, strict=True):
        accepted = ok and not bad_batch[g]
        g += ok
        if accepted:
            row += batch.count
            continue
        if row > run_lo:
            out.append(whole.slice(run_lo, row))
        out.append(batch.view)
        row += batch.count if ok else 0
        run_lo = row
    if row > run_lo:
        out.append(whole.slice(run_lo, row))
    return out


def _walk_records(buf: bytes, batches: list[_Batch]) -> tuple[list[int], list[bool]]:
    """Where each record of ``batches`` starts, found from the length prefixes (the one sequential step), and per
    batch whether its walk ended exactly at its end; a batch whose walk did not contributes no positions."""
    prefix: list[int] = []
    append = prefix.append
    walked: list[bool] = []
    for batch in batches:
        mark = len(prefix)
        pos = batch.start
        ok = (
            0 <= batch.count * _MIN_RECORD <= batch.end - batch.start
        )  # else the walk could run far past the end
        if ok:
            try:
                for _ in range(batch.count):  # 2-byte prefixes are checked by _decode_columns
                    append(pos)
                    byte = buf[pos]
                    pos += 1 + (byte >> 1) if byte < 0x80 else 2 + ((byte & 0x7F) >> 1) + (buf[pos + 1] << 6)
            except IndexError:
                ok = False
            ok = ok and pos == batch.end
        if not ok:
            del prefix[mark:]
        walked.append(ok)
    return prefix, walked


def _decode_columns(
    buf: bytes, good: list[_Batch], prefix: list[int], include_headers: bool
) -> tuple[_Piece, np.ndarray]:
    """The records of ``good`` (starting at ``prefix``) as one piece, and per batch whether one of its records is
    not what the column decoder takes (its rows in the piece are then not to be used)."""
    u8 = np.frombuffer(buf, np.uint8)
    last = len(buf) - 1
    p = np.array(prefix, np.int64)
    b0 = u8[p]
    b1 = u8[np.minimum(p + 1, last)]
    two = b0 >= 0x80
    # a 1- or 2-byte zig-zag length, non-negative: what the walk assumed
    bad = ((b0 & 1) != 0) | (two & (b1 >= 0x80))
    body = p + 1 + two
    length = np.where(two, ((b0 & 0x7F) >> 1).astype(np.int64) + (b1.astype(np.int64) << 6), b0 >> 1)
    body_end = body + length
    ts_delta, at = _varints_or_bad(u8, body + 1, last, 10, bad)  # + 1: the attributes byte (unused)
    offset_delta, at = _varints_or_bad(u8, at, last, 5, bad)
    key_len, key_start = _varints_or_bad(u8, at, last, 5, bad)
    value_len, value_start = _varints_or_bad(u8, key_start + np.maximum(key_len, 0), last, 5, bad)
    at = value_start + np.maximum(value_len, 0)
    bad |= (u8[np.minimum(at, last)] != 0) | (at + 1 != body_end)  # no headers, and nothing left over
    counts = np.array([b.count for b in good], np.int64)
    log_append = np.repeat(np.array([b.log_append for b in good], np.bool_), counts)
    timestamps = _add_checked(
        np.repeat(np.array([b.base_timestamp for b in good], np.int64), counts), ts_delta, bad
    )
    if log_append.any():
        max_timestamps = np.repeat(np.array([b.max_timestamp for b in good], np.int64), counts)
        timestamps = np.where(log_append, max_timestamps, timestamps)
    offsets = _add_checked(
        np.repeat(np.array([b.base_offset for b in good], np.int64), counts), offset_delta, bad
    )
    bad_batch = np.zeros(len(good), np.bool_)
    if bad.any():
        bad_batch[np.repeat(np.arange(len(good)), counts)[bad]] = True
    headers: list[list[dict[str, object]] | None] | None = [None] * len(prefix) if include_headers else None
    piece = _Piece(
        buf,
        key_start,
        key_len,
        value_start,
        value_len,
        offsets,
        timestamps,
        log_append.astype(np.int32),
        headers,
    )
    return piece, bad_batch


def _varints_or_bad(
    u8: np.ndarray, at: np.ndarray, last: int, width: int, bad: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``_varints`` with the rows whose varint is longer than ``width`` bytes marked in ``bad``."""
    value, end, too_long = _varints(u8, at, last, width)
    if too_long is not None:
        bad |= too_long
    return value, end


def _add_checked(base: np.ndarray, delta: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """``base + delta``, with the rows that overflow int64 marked in ``bad`` (the records path raises for them)."""
    total: np.ndarray = base + delta
    bad |= ((base ^ total) & (delta ^ total)) < 0
    return total


def _shared_bytes(view: BatchView) -> bytes | None:
    """The ``bytes`` object ``view.buf`` spans from its first byte, when it does (positions then index it)."""
    obj = view.buf.obj
    if isinstance(obj, bytes) and len(view.buf) == len(obj) and view.buf.contiguous:
        return obj
    return None


def decode_views(views: Sequence[BatchView | _Piece], include_headers: bool) -> list[_Piece]:
    """Whole batches (any magic) and ready pieces, in order, as pieces: v2 batches column-wise, several per numpy
    pass (consecutive uncompressed batches of one buffer are read in place; decompressed payloads are joined),
    everything else by ``samsa.records``."""
    return [
        item if isinstance(item, _Piece) else _piece_by_records(item, include_headers)
        for item in _column_items(views, include_headers)
    ]


def _column_items(views: Sequence[BatchView | _Piece], include_headers: bool) -> list[_Piece | BatchView]:
    """``decode_views`` before the records path: the batches the column decoder refuses stay views."""
    runs = _Runs(include_headers)
    for item in views:
        if isinstance(item, _Piece):
            runs.keep(item)
        else:
            runs.add(item)
    runs.end_run()
    return runs.out


class _Runs:
    """Collects consecutive v2 batches into runs that ``_decode_run`` decodes together: uncompressed batches of one
    shared buffer are read in place; other payloads (decompressed, or of a buffer that is not ``bytes``) are
    joined into one. Everything else is passed through, in order, into ``out``. Not thread-safe; one per call."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.out: list[_Piece | BatchView] = []
        self._run: list[_Batch] = []
        self._run_buffer: bytes | None = None  # the shared buffer of the run; None: a run of joined payloads
        self._joined: list[bytes] = []
        self._joined_size = 0
        self._last_buf: memoryview | None = None  # views of one buffer share the memoryview: look it up once
        self._last_shared: bytes | None = None

    def end_run(self) -> None:
        if self._run:
            buf = self._run_buffer if self._run_buffer is not None else b"".join(self._joined)
            self.out.extend(_decode_run(buf, self._run, self.include_headers))
        self._run.clear()
        self._joined.clear()
        self._run_buffer, self._joined_size = None, 0

    def keep(self, item: _Piece | BatchView) -> None:
        """``item`` as it is, after the run so far."""
        self.end_run()
        self.out.append(item)

    def add(self, view: BatchView) -> None:
        position = view.position
        header = view.v2_header() if len(view.buf) - position >= RECORD_BATCH_OVERHEAD else None
        if header is None or header.magic != 2 or header.size < RECORD_BATCH_OVERHEAD - 12:
            self.keep(view)
            return
        codec = header.attributes & 0x07
        start, end = position + RECORD_BATCH_OVERHEAD, position + 12 + header.size
        if codec == 0 and view.buf is not self._last_buf:
            self._last_buf, self._last_shared = view.buf, _shared_bytes(view)
        shared = self._last_shared if codec == 0 else None
        if shared is not None:
            if self._run_buffer is not shared:
                self.end_run()
                self._run_buffer = shared
        else:
            span = self._join(view, codec, start, end)
            if span is None:
                self.keep(view)
                return
            start, end = span
        log_append = bool(header.attributes & 0x08)
        self._run.append(
            _Batch(
                view,
                start,
                end,
                header.records_count,
                header.base_offset,
                header.base_timestamp,
                header.max_timestamp,
                log_append,
            )
        )

    def _join(self, view: BatchView, codec: int, start: int, end: int) -> tuple[int, int] | None:
        """The payload ``view.buf[start:end]`` (decompressed) appended to the joined run: its span there; None
        when it does not decompress (the records path raises the same error, with its message)."""
        payload = view.buf[start:end]
        try:
            data = bytes(payload) if codec == 0 else decompress(codec, payload)
        except Exception:
            return None
        if self._run_buffer is not None:
            self.end_run()
        self._joined.append(data)
        start, end = self._joined_size, self._joined_size + len(data)
        self._joined_size = end
        return start, end


def piece_from_batch(view: BatchView, include_headers: bool) -> _Piece | None:
    """One batch decoded column-wise; None when the column decoder does not take it (see ``_decode_run``)."""
    items = _column_items([view], include_headers)
    if not items and view.magic == 2:
        return _piece_from_records([], view.timestamp_type, include_headers)
    return items[0] if len(items) == 1 and isinstance(items[0], _Piece) else None


def _repeat_string(text: str, n: int) -> pa.Array:
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(raw * n)], 0
    )


_WINDOW = np.arange(12)
_INT32_MAX = 2**31 - 1
_MAX_MILLIS = (2**63 - 1) // 1000
_LOW_MASK = np.array(
    [(1 << 8 * min(s, 8)) - 1 for s in range(13)], np.uint64
)  # bytes 0..7 of an inline value
_HIGH_MASK = np.array([(1 << 8 * max(s - 8, 0)) - 1 for s in range(13)], np.uint32)  # bytes 8..11


def _views(buffer: bytes, starts: np.ndarray, sizes: np.ndarray, slot: int) -> np.ndarray:
    """Arrow binary views (int32 x 4: length, then 12 inline bytes, or a 4-byte prefix, buffer ``slot`` and
    offset) of the ranges ``buffer[start : start + size]``."""
    m = len(sizes)
    out = np.zeros((m, 4), np.int32)
    if not m:
        return out
    out[:, 0] = sizes
    n = len(buffer)
    if n == 0:
        return out
    if n > _INT32_MAX:
        raise ValueError(f"a buffer of {n} bytes is too large for an Arrow binary view")
    clipped = np.minimum(sizes, 12)
    near = starts > n - 12  # the words below would read past the end: byte by byte instead
    safe = np.where(near, 0, starts)
    if n >= 12:
        # unaligned little-endian words at every byte position: one gather for 8 bytes, one for 4
        low = np.ndarray((n - 7,), np.dtype("<u8"), buffer, 0, (1,))[safe] & _LOW_MASK[clipped]
        high = np.ndarray((n - 3,), np.dtype("<u4"), buffer, 0, (1,))[safe + 8] & _HIGH_MASK[clipped]
        wide = out.view(np.uint32)
        wide[:, 1] = low.astype(np.uint32)
        wide[:, 2] = (low >> np.uint64(32)).astype(np.uint32)
        wide[:, 3] = high
    if near.any():
        rows = np.nonzero(near)[0]
        u8 = np.frombuffer(buffer, np.uint8)
        window = u8[np.minimum(starts[rows, None] + _WINDOW, n - 1)]
        window[clipped[rows, None] <= _WINDOW] = 0
        out.view(np.uint8)[rows, 4:] = window
    far = sizes > 12
    if far.all():
        out[:, 2] = slot
        out[:, 3] = starts
    elif far.any():
        out[far, 2] = slot
        out[far, 3] = starts[far]
    return out


def _binary(parts: Sequence[tuple[bytes, np.ndarray, np.ndarray]]) -> pa.Array:
    """A binary column from ``(buffer, starts, lengths)`` parts (-1: null), gathered by Arrow: the rows become a
    ``binary_view`` array over the buffers as they are, cast to ``binary``."""
    buffers: list[bytes] = []
    index: dict[int, int] = {}
    blocks = []
    for buffer, starts, lengths in parts:
        slot = index.setdefault(id(buffer), len(buffers))
        if slot == len(buffers):
            buffers.append(buffer)
        blocks.append(_views(buffer, starts, np.maximum(lengths, 0), slot))
    views = (
        blocks[0] if len(blocks) == 1 else np.concatenate(blocks) if blocks else np.zeros((0, 4), np.int32)
    )
    n = len(views)
    lengths = np.concatenate([lengths for _, _, lengths in parts]) if parts else np.zeros(0, np.int64)
    valid = lengths >= 0
    nulls = int(n - np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes()) if nulls else None
    array = pa.Array.from_buffers(
        pa.binary_view(), n, [bitmap, pa.py_buffer(views), *(pa.py_buffer(b) for b in buffers)], nulls
    )
    return array.cast(pa.binary())


class RecordBatchBuilder:
    """Whole batches (decoded when a RecordBatch is cut, several per numpy pass) and record pieces of one
    topic-partition; ``flush`` turns what it holds into one RecordBatch.

    Not thread-safe; one builder per ``read()`` call. The buffers of the views it holds must not change until the
    next ``flush``.
    """

    def __init__(
        self,
        topic: str,
        partition: int,
        include_headers: bool,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.include_headers = include_headers
        self.batch_rows = batch_rows
        self.batch_bytes = batch_bytes
        self.schema = arrow_schema(include_headers)
        self._queue: list[BatchView | _Piece] = []
        self._rows = 0
        self._bytes = 0

    def __len__(self) -> int:
        return self._rows

    def _full(self) -> list[pa.RecordBatch]:
        return [self.flush()] if self._rows >= self.batch_rows or self._bytes >= self.batch_bytes else []

    def add(self, records: Iterable[Record], timestamp_type: int) -> list[pa.RecordBatch]:
        """Append ``records`` (one batch's, sharing ``timestamp_type``); a RecordBatch when full."""
        piece = _piece_from_records(list(records), timestamp_type, self.include_headers)
        if piece.rows:
            self._queue.append(piece)
            self._rows += piece.rows
            self._bytes += len(piece.buffer)
        return self._full()

    def add_view(self, view: BatchView) -> list[pa.RecordBatch]:
        """Append all the records of a whole batch (any magic); a RecordBatch when full."""
        self._queue.append(view)
        v2 = len(view.buf) - view.position >= RECORD_BATCH_OVERHEAD and view.magic == 2
        self._rows += max(view.records_count, 1) if v2 else 1  # an estimate: cuts only
        self._bytes += view.size_in_bytes
        return self._full()

    def add_range(self, view: BatchView, lo: int, hi: int | None) -> list[pa.RecordBatch]:
        """Append the records of one batch whose offsets are in [lo, hi) (no upper bound when ``hi`` is None):
        the whole batch column-wise when all of it is wanted; RecordBatches when full."""
        if lo <= view.base_offset and (hi is None or view.next_offset <= hi):
            return self.add_view(view)
        records = iter_records(view, verify_crc=False)
        wanted = (r for r in records if lo <= r.offset and (hi is None or r.offset < hi))
        return self.add(wanted, view.timestamp_type)

    def flush(self) -> pa.RecordBatch:
        queue, self._queue, self._rows, self._bytes = self._queue, [], 0, 0
        pieces = decode_views(queue, self.include_headers)
        n = sum(p.rows for p in pieces)

        def cat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(arrays) if arrays else np.zeros(0, dtype)

        millis = cat([p.timestamps for p in pieces], np.int64)
        if n and (millis.min() < -_MAX_MILLIS or millis.max() > _MAX_MILLIS):
            raise ValueError(
                f"{self.topic}-{self.partition}: a record timestamp is outside what Spark's microsecond timestamps "
                f"hold (min {millis.min()}, max {millis.max()} ms)"
            )
        micros = millis * 1000
        columns: list[pa.Array] = [
            _binary([(p.buffer, p.key_starts, p.key_lengths) for p in pieces]),
            _binary([(p.buffer, p.value_starts, p.value_lengths) for p in pieces]),
            _repeat_string(self.topic, n),
            pa.array(np.full(n, self.partition, np.int32), pa.int32()),
            pa.array(cat([p.offsets for p in pieces], np.int64), pa.int64()),
            pa.array(micros, pa.timestamp("us", tz="UTC")),
            pa.array(cat([p.timestamp_types for p in pieces], np.int32), pa.int32()),
        ]
        if self.include_headers:
            headers: list[list[dict[str, object]] | None] = []
            for p in pieces:
                headers.extend(p.headers or [None] * p.rows)
            columns.append(pa.array(headers, HEADER_TYPE))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


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
