"""Record batch v2 (magic 2): build, decode with Kafka's validations, and rewrite the max timestamp.

Header (61 bytes, big-endian), then ``recordsCount`` records or one compressed stream of them:

    offset  size  field                  notes
    0       8     int64  baseOffset      not covered by the CRC: the broker patches it in place
    8       4     int32  batchLength     bytes after this field (total - 12)
    12      4     int32  partitionLeaderEpoch   not covered by the CRC; producers send -1
    16      1     int8   magic           2
    17      4     uint32 crc             CRC-32C of bytes [21, end)
    21      2     int16  attributes      bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control,
                                         6 delete horizon in baseTimestamp
    23      4     int32  lastOffsetDelta
    27      8     int64  baseTimestamp   first record's timestamp; -1 for an empty batch
    35      8     int64  maxTimestamp    largest record timestamp, or the append time for LogAppendTime
    43      8     int64  producerId      -1 = none
    51      2     int16  producerEpoch
    53      4     int32  baseSequence
    57      4     int32  recordsCount
    61      ...          records

Record (zig-zag varints, see ``varint``):

    length varint (bytes after it) | attributes int8 (0) | timestampDelta varlong | offsetDelta varint |
    keyLength varint (-1 null) | key | valueLength varint (-1 null) | value | headersCount varint |
    headers: headerKeyLength varint (>= 0) | key UTF-8 | headerValueLength varint (-1 null) | value

With LogAppendTime every record reads as the batch's maxTimestamp; record deltas are ignored.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from .batch_view import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    INT32_MAX,
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    V2_AFTER_CRC,
    V2_PREFIX,
    BatchView,
    crc32c,
)
from .compression import CompressionType, compress, decompress
from .control import ControlRecord, EndTransactionMarker, parse_control_record
from .errors import CorruptRecordError, InvalidRecordError, VarintError
from .record import CREATE_TIME, NO_TIMESTAMP, Record, TimestampType
from .varint import decode_varint, decode_varlong, encode_varint, encode_varlong

MAGIC_V2 = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_I_UNSIGNED = struct.Struct(">I")
_NULL = b"\x01"  # varint -1


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """Every header field of a v2 batch and its records, with absolute offsets and the timestamps consumers see.

    Immutable; safe to share between threads.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: tuple[Record, ...]
    control_records: tuple[ControlRecord, ...] = ()

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> CompressionType:
        return CompressionType(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType(1 if self.attributes & TIMESTAMP_TYPE_MASK else 0)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return _add_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def records_count(self) -> int:
        return len(self.records)


def _add_sequence(base: int, increment: int) -> int:
    """Kafka's sequence arithmetic: wraps to 0 after Int.MAX."""
    if increment > INT32_MAX - base:
        return increment - (INT32_MAX - base) - 1
    return base + increment


# --- building ----------------------------------------------------------------------------------------------


def build_batch(
    records: Iterable[Record | bytes | None],
    *,
    base_offset: int | None = None,
    compression: CompressionType | int = CompressionType.NONE,
    timestamp_type: TimestampType | int = CREATE_TIME,
    timestamp: int = NO_TIMESTAMP,
    log_append_time: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    last_offset: int | None = None,
    max_timestamp: int | None = None,
    delete_horizon_ms: int = NO_TIMESTAMP,
) -> bytes:
    """One v2 batch holding ``records``, as Kafka's ``MemoryRecordsBuilder`` would write it.

    An item is a ``Record`` (its offset is absolute; offsets must increase) or a bare value (bytes or None),
    which gets offset ``base_offset + index``, ``timestamp``, no key and no headers. ``base_offset`` defaults
    to the first item's offset (0 for bare values). baseTimestamp is the first record's timestamp and
    maxTimestamp the largest; with LogAppendTime every record is written with ``log_append_time`` (default:
    the largest record timestamp). An empty batch is the header alone, with both timestamps -1.

    What the log cleaner needs (``MemoryRecordsBuilder.overrideLastOffset``, ``writeEmptyHeader``): ``last_offset``
    keeps the original batch's last offset (lastOffsetDelta, hence the last sequence) when records were removed;
    ``max_timestamp`` overrides the header's maxTimestamp (an empty batch keeps its original one); a
    ``delete_horizon_ms`` >= 0 sets attribute bit 6 and becomes the baseTimestamp, record deltas relative to it.
    Raises ValueError for offsets or timestamps Kafka's builder would refuse.
    """
    timestamp_type = TimestampType(timestamp_type)
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("a v2 batch needs CreateTime or LogAppendTime, not NO_TIMESTAMP_TYPE")
    codec = CompressionType.from_id(compression)
    base, items = normalize_records(records, base_offset, timestamp)
    if timestamp_type is TimestampType.LOG_APPEND_TIME and items:
        append_time = max(r.timestamp for r in items) if log_append_time is None else log_append_time
        items = [Record(r.offset, append_time, r.key, r.value, r.headers) for r in items]
    base_timestamp, largest, last_offset_delta = _span(items, base, last_offset)
    if max_timestamp is None:
        max_timestamp = largest
    if delete_horizon_ms >= 0:
        base_timestamp = delete_horizon_ms
    payload = encode_records(items, base, base_timestamp)
    if codec is not CompressionType.NONE:
        payload = compress(codec, payload, magic=MAGIC_V2)
    attributes = int(codec)
    attributes |= TIMESTAMP_TYPE_MASK if timestamp_type is TimestampType.LOG_APPEND_TIME else 0
    attributes |= TRANSACTIONAL_MASK if is_transactional else 0
    attributes |= CONTROL_MASK if is_control else 0
    attributes |= DELETE_HORIZON_MASK if delete_horizon_ms >= 0 else 0
    producer = (producer_id, producer_epoch, base_sequence)
    after_crc = (attributes, last_offset_delta, base_timestamp, max_timestamp, *producer, len(items))
    return _assemble(base, partition_leader_epoch, after_crc, payload)


def _span(items: list[Record], base_offset: int, last_offset: int | None) -> tuple[int, int, int]:
    """(baseTimestamp, the largest timestamp, lastOffsetDelta) of ``items``, -1, -1 and 0 when there are none;
    ``last_offset`` keeps a larger last offset (the cleaner's), which must fit an int32 delta."""
    if items:
        base_timestamp = items[0].timestamp
        largest = max(r.timestamp for r in items)
        last_offset_delta = items[-1].offset - base_offset
    else:
        base_timestamp = largest = NO_TIMESTAMP
        last_offset_delta = 0
    if last_offset is not None:
        if last_offset - base_offset < last_offset_delta or last_offset - base_offset > INT32_MAX:
            raise ValueError(
                f"last offset {last_offset} does not fit the records from base offset {base_offset}"
            )
        last_offset_delta = last_offset - base_offset
    return base_timestamp, largest, last_offset_delta


def _assemble(
    base_offset: int, partition_leader_epoch: int, after_crc_fields: tuple[int, ...], payload: bytes
) -> bytes:
    """The batch's bytes: the fields before the CRC, the CRC-32C of everything after it, the fields after it
    (attributes to record count, in ``V2_AFTER_CRC``'s order) and the records section."""
    try:
        after_crc = V2_AFTER_CRC.pack(*after_crc_fields)
        size = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(payload)
        prefix = V2_PREFIX.pack(base_offset, size, partition_leader_epoch, MAGIC_V2)
    except struct.error as exc:
        raise ValueError(f"a batch header field is out of range: {exc}") from exc
    crc = crc32c(payload, crc32c(after_crc))
    return b"".join((prefix, _I_UNSIGNED.pack(crc), after_crc, payload))


def normalize_records(
    items: Iterable[Record | bytes | None], base_offset: int | None, timestamp: int
) -> tuple[int, list[Record]]:
    """(base offset, records): bare values become records; offsets and timestamps are checked."""
    records: list[Record] = []
    for index, item in enumerate(items):
        if isinstance(item, Record):
            records.append(item)
        else:
            start = 0 if base_offset is None else base_offset
            records.append(Record(start + index, timestamp, None, None if item is None else bytes(item), ()))
    if base_offset is None:
        base_offset = records[0].offset if records else 0
    previous: int | None = None
    for record in records:
        if record.offset < base_offset:
            raise ValueError(f"record offset {record.offset} is below the base offset {base_offset}")
        if previous is not None and record.offset <= previous:
            raise ValueError(f"record offset {record.offset} does not follow offset {previous}")
        if record.offset - base_offset > INT32_MAX:
            raise ValueError(f"record offset {record.offset} is too far from the base offset {base_offset}")
        if record.timestamp < 0 and record.timestamp != NO_TIMESTAMP:
            raise ValueError(f"invalid negative timestamp {record.timestamp} at offset {record.offset}")
        previous = record.offset
    return base_offset, records


def encode_records(records: Iterable[Record], base_offset: int, base_timestamp: int) -> bytes:
    """The records section of a batch (uncompressed): each record's length, then its body."""
    out: list[bytes] = []
    emit = out.append
    for record in records:
        key, value, headers = record.key, record.value, record.headers
        parts = [
            b"\x00",
            encode_varlong(record.timestamp - base_timestamp),
            encode_varint(record.offset - base_offset),
        ]
        if key is None:
            parts.append(_NULL)
        else:
            parts += (encode_varint(len(key)), key)
        if value is None:
            parts.append(_NULL)
        else:
            parts += (encode_varint(len(value)), value)
        parts.append(encode_varint(len(headers)))
        for header_key, header_value in headers:
            if header_key is None:
                raise ValueError(f"null header key at offset {record.offset}")
            encoded_key = header_key.encode("utf-8")
            parts += (encode_varint(len(encoded_key)), encoded_key)
            if header_value is None:
                parts.append(_NULL)
            else:
                parts += (encode_varint(len(header_value)), header_value)
        body = b"".join(parts)
        emit(encode_varint(len(body)))
        emit(body)
    return b"".join(out)


def build_end_txn_marker_batch(
    marker: EndTransactionMarker,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """The control batch a coordinator appends to end a transaction (``writeEndTransactionalMarker``)."""
    record = Record(base_offset, timestamp, marker.key(), marker.value(), ())
    return build_batch(
        [record],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


# --- decoding ----------------------------------------------------------------------------------------------


def as_view(batch: BatchView | bytes | bytearray | memoryview) -> BatchView:
    """A view of the batch at the start of ``batch`` (bytes), or ``batch`` itself.

    Checks what every magic needs before its header can be read: a size of at least 14 (the smallest legacy
    message) and a batch that fits in its buffer; CorruptRecordError otherwise.
    """
    view = batch if isinstance(batch, BatchView) else BatchView(memoryview(batch), 0)
    available = len(view.buf) - view.position
    if available < LOG_OVERHEAD:
        raise CorruptRecordError(
            f"batch at position {view.position} is cut short: {available} bytes available"
        )
    if view.size_field < LEGACY_MIN_SIZE:
        raise CorruptRecordError(
            f"batch at position {view.position} has size {view.size_field}, smaller than the minimum record "
            f"overhead ({LEGACY_MIN_SIZE})"
        )
    if view.size_in_bytes > available:
        raise CorruptRecordError(
            f"batch at position {view.position} is cut short: {available} bytes available, "
            f"{view.size_in_bytes} declared"
        )
    return view


def decode_batch(
    batch: BatchView | bytes | bytearray | memoryview, *, verify_crc: bool = True
) -> DecodedBatch:
    """Decode a v2 batch, raising CorruptRecordError (size, CRC, codec stream) or InvalidRecordError (format).

    ``verify_crc=False`` skips only the checksum (as Kafka's iterators do); every structural check still runs.
    """
    view = as_view(batch)
    if view.size_in_bytes < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"batch at position {view.position} is {view.size_in_bytes} bytes, smaller than the minimum "
            f"allowed overhead of {RECORD_BATCH_OVERHEAD}"
        )
    if view.magic != MAGIC_V2:
        raise InvalidRecordError(f"batch at position {view.position} has magic {view.magic}, not 2")
    if verify_crc:
        view.ensure_valid()
    header = view.v2_header()
    count = header.records_count
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
    attributes = header.attributes
    codec = CompressionType.from_id(attributes & COMPRESSION_MASK)
    payload = view.buf[view.position + RECORD_BATCH_OVERHEAD : view.end]
    data = bytes(payload) if codec is CompressionType.NONE else decompress(codec, payload, magic=MAGIC_V2)
    append_time = header.max_timestamp if attributes & TIMESTAMP_TYPE_MASK else None
    records = decode_records(data, count, header.base_offset, header.base_timestamp, append_time)
    controls = tuple(parse_control_record(r) for r in records) if attributes & CONTROL_MASK else ()
    fields = header[:12]  # every header field but the record count, in DecodedBatch's order
    return DecodedBatch(*fields, records=tuple(records), control_records=controls)


def decode_records(
    data: bytes, count: int, base_offset: int, base_timestamp: int, append_time: int | None = None
) -> list[Record]:
    """Exactly ``count`` records from ``data`` (uncompressed), which they must use up to the last byte.

    The one-byte varint fast path is inlined: this loop is the whole cost of a decode.
    """
    # Long on purpose: one loop over the records with the varints decoded inline. A helper per record or per
    # varint costs a Python call each (five varints a record), which is what bench_records.py's decode measures.
    records: list[Record] = []
    emit = records.append
    end = len(data)
    pos = 0
    try:
        for _ in range(count):
            if pos >= end:
                raise InvalidRecordError("Incorrect declared batch size, premature EOF reached")
            byte = data[pos]
            if byte < 0x80:
                length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                byte = (byte & 0x7F) | (data[pos + 1] << 7)
                length, pos = (byte >> 1) ^ -(byte & 1), pos + 2
            else:
                length, pos = decode_varint(data, pos)
            body_start = pos
            body_end = pos + length
            if length < 0 or body_end > end:
                raise InvalidRecordError(
                    f"Invalid record size: expected {length} bytes in record payload, but instead the buffer "
                    f"has only {end - pos} remaining bytes."
                )
            pos += 1  # attributes: unused
            byte = data[pos]
            if byte < 0x80:
                timestamp_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                byte = (byte & 0x7F) | (data[pos + 1] << 7)
                timestamp_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 2
            else:
                timestamp_delta, pos = decode_varlong(data, pos)
            byte = data[pos]
            if byte < 0x80:
                offset_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                byte = (byte & 0x7F) | (data[pos + 1] << 7)
                offset_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 2
            else:
                offset_delta, pos = decode_varint(data, pos)
            byte = data[pos]
            if byte < 0x80:
                size, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                byte = (byte & 0x7F) | (data[pos + 1] << 7)
                size, pos = (byte >> 1) ^ -(byte & 1), pos + 2
            else:
                size, pos = decode_varint(data, pos)
            key = None
            if size >= 0:
                key = data[pos : pos + size]
                pos += size
            byte = data[pos]
            if byte < 0x80:
                size, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                byte = (byte & 0x7F) | (data[pos + 1] << 7)
                size, pos = (byte >> 1) ^ -(byte & 1), pos + 2
            else:
                size, pos = decode_varint(data, pos)
            value = None
            if size >= 0:
                value = data[pos : pos + size]
                pos += size
            byte = data[pos]
            if byte == 0:
                headers: tuple[tuple[str, bytes | None], ...] = ()
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, body_end)
            if pos != body_end:
                raise InvalidRecordError(
                    f"Invalid record size: expected to read {length} bytes in record payload, but instead "
                    f"read {pos - body_start}"
                )
            emit(
                Record(
                    base_offset + offset_delta,
                    base_timestamp + timestamp_delta if append_time is None else append_time,
                    key,
                    value,
                    headers,
                )
            )
    except (IndexError, VarintError) as exc:
        raise InvalidRecordError(f"Found invalid record structure: {exc}") from exc
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return records


def keyless_records(
    batch: BatchView | bytes | bytearray | memoryview, *, max_inflated: int | None = None
) -> list[int]:
    """The positions in a v2 batch (0 for its first record) of the records without a key: what a compacted
    topic refuses. Reads each record's length and key length only, so the memory it takes is the inflated
    records, never a record object each; with ``max_inflated``, compressed records that would inflate past it
    raise InflatedTooLargeError having inflated at most that much. Raises as ``decode_batch`` for a malformed
    batch (the CRC is not checked: the caller has)."""
    view = as_view(batch)
    if view.size_in_bytes < RECORD_BATCH_OVERHEAD or view.magic != MAGIC_V2:
        return [i for i, r in enumerate(decode_batch(view, verify_crc=False).records) if r.key is None]
    header = view.v2_header()
    count = header.records_count
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
    codec = CompressionType.from_id(header.attributes & COMPRESSION_MASK)
    payload = view.buf[view.position + RECORD_BATCH_OVERHEAD : view.end]
    data = (
        payload
        if codec is CompressionType.NONE
        else decompress(codec, payload, magic=MAGIC_V2, max_size=max_inflated)
    )
    keyless: list[int] = []
    end = len(data)
    pos = 0
    try:
        for i in range(count):
            length, pos = decode_varint(data, pos)
            body_end = pos + length
            if length < 0 or body_end > end:
                raise InvalidRecordError(
                    f"Invalid record size: expected {length} bytes in record payload, but instead the buffer "
                    f"has only {end - pos} remaining bytes."
                )
            _, pos = decode_varlong(data, pos + 1)  # after the attributes: timestampDelta
            _, pos = decode_varint(data, pos)  # offsetDelta
            key_length, pos = decode_varint(data, pos)
            if key_length < 0:
                keyless.append(i)
            if pos > body_end:
                raise InvalidRecordError(f"record {i} ends inside its own header")
            pos = body_end
    except VarintError as exc:
        raise InvalidRecordError(f"Found invalid record structure: {exc}") from exc
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return keyless


def _decode_headers(data: bytes, pos: int, body_end: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = decode_varint(data, pos)
    if count < 0:
        raise InvalidRecordError(f"Found invalid number of record headers {count}")
    if count > body_end - pos:
        raise InvalidRecordError(
            f"Found invalid number of record headers {count}: only {body_end - pos} bytes remain in the record"
        )
    headers = []
    for _ in range(count):
        size, pos = decode_varint(data, pos)
        if size < 0:
            raise InvalidRecordError(f"Invalid negative header key size {size}")
        header_key = data[pos : pos + size].decode("utf-8", "replace")
        pos += size
        size, pos = decode_varint(data, pos)
        header_value = None
        if size >= 0:
            header_value = data[pos : pos + size]
            pos += size
        headers.append((header_key, header_value))
    return tuple(headers), pos


# --- in-place rewrites -------------------------------------------------------------------------------------


def set_max_timestamp(
    buf: bytearray | memoryview, position: int, timestamp: int, timestamp_type: TimestampType | int
) -> None:
    """Rewrite a v2 batch's maxTimestamp and timestamp-type bit in place, then its CRC (Kafka's ``setMaxTimestamp``).

    Does nothing when both already hold those values. The broker uses this to stamp LogAppendTime.
    """
    timestamp_type = TimestampType(timestamp_type)
    if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("a v2 batch needs CreateTime or LogAppendTime, not NO_TIMESTAMP_TYPE")
    view = as_view(BatchView(memoryview(buf), position))
    if view.magic != MAGIC_V2 or view.size_in_bytes < RECORD_BATCH_OVERHEAD:
        raise InvalidRecordError(f"cannot set the max timestamp of a magic {view.magic} batch at {position}")
    if view.timestamp_type == timestamp_type and view.max_timestamp == timestamp:
        return
    view.set_max_timestamp(timestamp, timestamp_type is TimestampType.LOG_APPEND_TIME)
