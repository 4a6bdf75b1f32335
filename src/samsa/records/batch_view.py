"""Zero-copy views over the batches of a log or a produce request.

Every batch, whatever its magic, starts with the same 17 bytes (big-endian):

    offset  size  field
    0       8     int64  offset       v2: base offset; v0/v1: offset of this (wrapper) message = its last offset
    8       4     int32  size         bytes after this field; the batch is ``size + 12`` bytes long
    12      4     v2: int32 partitionLeaderEpoch; v0/v1: uint32 CRC-32 of bytes [16, end)
    16      1     int8   magic        0, 1 or 2

Record batch v2 continues (61-byte header, then the records):

    17  uint32 crc (CRC-32C of bytes [21, end))   21 int16 attributes   23 int32 lastOffsetDelta
    27  int64 baseTimestamp   35 int64 maxTimestamp   43 int64 producerId   51 int16 producerEpoch
    53  int32 baseSequence    57 int32 recordsCount   61 records (or one compressed stream)

A legacy message continues with ``attributes:int8`` at 17, then (v1 only) ``timestamp:int64`` at 18, then
``keyLength:int32`` and the key, ``valueLength:int32`` and the value.

The v2 CRC does not cover the base offset, the length, the partition leader epoch or the magic, so a broker
rewrites the base offset and leader epoch in place with no checksum to recompute.

These views never copy the buffer and never decode records: they are what the produce and fetch paths use.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import struct
import sys
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from .errors import CorruptRecordError

LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_BATCH_OVERHEAD = 61
LEGACY_MIN_SIZE = 14  # the smallest legal `size` field: a v0 message with empty key and value lengths
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1

# the v2 header as laid out in the module doc: all 61 bytes; the part up to the CRC; the part the CRC covers
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_PREFIX = struct.Struct(">qiib")  # baseOffset, size, partitionLeaderEpoch, magic
V2_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. recordsCount
V2_CRC_OFFSET = 17
V2_ATTRIBUTES_OFFSET = 21
_V2_MAX_TIMESTAMP_OFFSET = 35
_U32 = struct.Struct(">I")
_Q = struct.Struct(">q")
_I = struct.Struct(">i")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40


def _crc32c_extension() -> ModuleType:
    """The ``crc32c`` package's C module, ``crc32c._crc32c``.

    The package's ``__init__`` also imports ``importlib.metadata`` and ``argparse`` (for its version string and
    its command line), about a third of a broker's start-up; so the extension is loaded by itself when it sits
    where the package puts it, and through the package otherwise.
    """
    name = "crc32c._crc32c"
    if name in sys.modules:
        return sys.modules[name]
    package = importlib.machinery.PathFinder.find_spec("crc32c")
    for folder in package.submodule_search_locations or [] if package is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder, f"_crc32c{suffix}")
            spec = importlib.util.spec_from_file_location(name, path)
            if path.is_file() and spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return sys.modules.setdefault(name, module)
    import crc32c

    return crc32c


CRC32C_C: Callable[..., int] = _crc32c_extension().crc32c
"""The C function itself, ``(data, value=0) -> int``, for hot paths that cannot afford a Python wrapper's call."""


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli), computed in C; ``value`` continues a CRC over earlier bytes."""
    return int(CRC32C_C(data, value))


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE, as java.util.zip.CRC32), for legacy messages."""
    return zlib.crc32(data) & 0xFFFFFFFF


class V2Header(NamedTuple):
    """Every field of a v2 batch header, read in one unpack (``BatchView.v2_header``)."""

    base_offset: int
    size: int
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
    records_count: int


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """The sequence of a v2 batch's last record: ``base_sequence + last_offset_delta``, wrapping past Int.MAX to 0
    as Kafka's sequences do; NO_SEQUENCE for a batch without sequences."""
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    if last_offset_delta > INT32_MAX - base_sequence:
        return last_offset_delta - (INT32_MAX - base_sequence) - 1
    return base_sequence + last_offset_delta


@dataclass(frozen=True, slots=True)
class BatchView:
    """One batch (v2) or shallow message (v0/v1) inside a buffer, read in place.

    ``buf`` is the whole buffer and ``position`` the batch's first byte in it. Properties read the header
    fields on demand; nothing is decoded until asked for. Not thread-safe if the buffer is mutated.
    """

    buf: memoryview
    position: int

    # --- the common prefix ---------------------------------------------------------------------------------

    @property
    def offset_field(self) -> int:
        return int(_Q.unpack_from(self.buf, self.position)[0])

    @property
    def size_field(self) -> int:
        return int(_I.unpack_from(self.buf, self.position + 8)[0])

    @property
    def size_in_bytes(self) -> int:
        return self.size_field + LOG_OVERHEAD

    @property
    def magic(self) -> int:
        return int(self.buf[self.position + MAGIC_OFFSET])

    @property
    def end(self) -> int:
        return self.position + self.size_in_bytes

    def raw(self) -> memoryview:
        """The batch's bytes, as a view into the buffer."""
        return self.buf[self.position : self.end]

    # --- fields with one meaning for every magic ------------------------------------------------------------

    @property
    def attributes(self) -> int:
        return int(self.buf[self.position + 22 if self.magic >= 2 else self.position + 17])

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """-1 no timestamp (v0), 0 CreateTime, 1 LogAppendTime."""
        if self.magic == 0:
            return -1
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def last_offset(self) -> int:
        if self.magic >= 2:
            return self.offset_field + self.last_offset_delta
        return self.offset_field

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def max_timestamp(self) -> int:
        """The batch's largest timestamp (v2 header field; v1 message timestamp; -1 for v0)."""
        if self.magic >= 2:
            return int(_Q.unpack_from(self.buf, self.position + 35)[0])
        if self.magic == 1:
            return int(_Q.unpack_from(self.buf, self.position + 18)[0])
        return NO_TIMESTAMP

    # --- v2 only ---------------------------------------------------------------------------------------------

    @property
    def base_offset(self) -> int:
        """v2: the header field. Legacy: the message offset (a compressed wrapper needs decoding for more)."""
        return self.offset_field

    @property
    def partition_leader_epoch(self) -> int:
        return int(_I.unpack_from(self.buf, self.position + 12)[0]) if self.magic >= 2 else -1

    @property
    def stored_crc(self) -> int:
        at = self.position + (V2_CRC_OFFSET if self.magic >= 2 else 12)
        return int(_U32.unpack_from(self.buf, at)[0])

    @property
    def last_offset_delta(self) -> int:
        return int(_I.unpack_from(self.buf, self.position + 23)[0])

    @property
    def base_timestamp(self) -> int:
        return int(_Q.unpack_from(self.buf, self.position + 27)[0])

    @property
    def producer_id(self) -> int:
        return int(_Q.unpack_from(self.buf, self.position + 43)[0]) if self.magic >= 2 else NO_PRODUCER_ID

    @property
    def producer_epoch(self) -> int:
        return int(struct.unpack_from(">h", self.buf, self.position + 51)[0]) if self.magic >= 2 else -1

    @property
    def base_sequence(self) -> int:
        return int(_I.unpack_from(self.buf, self.position + 53)[0]) if self.magic >= 2 else NO_SEQUENCE

    @property
    def last_sequence(self) -> int:
        return last_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def records_count(self) -> int:
        return int(_I.unpack_from(self.buf, self.position + 57)[0]) if self.magic >= 2 else 1

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """v2 with attribute bit 6 (set by the log cleaner): the baseTimestamp, which holds the delete horizon."""
        if self.magic >= 2 and self.attributes & DELETE_HORIZON_MASK:
            return self.base_timestamp
        return None

    def v2_header(self) -> V2Header:
        """The whole v2 header in one unpack: for loops over many batches (decoders, scans) that need several
        fields. The caller has checked ``magic == 2`` and that the buffer holds the 61-byte header."""
        return V2Header._make(V2_HEADER.unpack_from(self.buf, self.position))

    # --- validation ------------------------------------------------------------------------------------------

    def computed_crc(self) -> int:
        if self.magic >= 2:
            return crc32c(self.buf[self.position + 21 : self.end])
        return crc32(self.buf[self.position + 16 : self.end])

    def is_valid(self) -> bool:
        minimum = RECORD_BATCH_OVERHEAD if self.magic >= 2 else LOG_OVERHEAD + LEGACY_MIN_SIZE
        return self.size_in_bytes >= minimum and self.stored_crc == self.computed_crc()

    def ensure_valid(self) -> None:
        """Raise CorruptRecordError naming the values when the size or the CRC is wrong."""
        minimum = RECORD_BATCH_OVERHEAD if self.magic >= 2 else LOG_OVERHEAD + LEGACY_MIN_SIZE
        if self.size_in_bytes < minimum:
            raise CorruptRecordError(
                f"batch at position {self.position} is {self.size_in_bytes} bytes, smaller than the minimum "
                f"allowed overhead of {minimum} for magic {self.magic}"
            )
        stored, computed = self.stored_crc, self.computed_crc()
        if stored != computed:
            raise CorruptRecordError(
                f"record is corrupt (stored crc = {stored}, computed crc = {computed}) in the batch at "
                f"position {self.position}, offset {self.offset_field}"
            )

    # --- in-place rewrites (v2; the CRC does not cover these fields) -----------------------------------------

    def set_base_offset(self, offset: int) -> None:
        """Patch the offset field in place (v2 base offset, or a legacy message's offset)."""
        _Q.pack_into(self.buf, self.position, offset)

    def set_partition_leader_epoch(self, epoch: int) -> None:
        if self.magic >= 2:
            _I.pack_into(self.buf, self.position + 12, epoch)

    def set_max_timestamp(self, timestamp: int, log_append_time: bool) -> None:
        """v2: rewrite maxTimestamp and the timestamp-type bit in place, then the CRC (they are covered by it)."""
        at = self.position
        attributes = self.buf[at + 22] & ~TIMESTAMP_TYPE_MASK
        self.buf[at + 22] = attributes | (TIMESTAMP_TYPE_MASK if log_append_time else 0)
        _Q.pack_into(self.buf, at + _V2_MAX_TIMESTAMP_OFFSET, timestamp)
        _U32.pack_into(self.buf, at + V2_CRC_OFFSET, crc32c(self.buf[at + V2_ATTRIBUTES_OFFSET : self.end]))


def iter_batches(
    buf: bytes | bytearray | memoryview, start: int = 0, end: int | None = None
) -> Iterator[BatchView]:
    """Shallow iteration as Kafka iterates a file.

    Stops silently when fewer than 17 bytes remain or the next batch runs past ``end`` (a partial trailing
    batch, normal at the end of a fetch or a torn write). A ``size`` below the legacy minimum raises
    CorruptRecordError, since nothing after it can be framed.
    """
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    limit = len(view) if end is None else end
    position = start
    while position < limit - HEADER_SIZE_UP_TO_MAGIC:
        size = _I.unpack_from(view, position + 8)[0]
        if size < LEGACY_MIN_SIZE:
            raise CorruptRecordError(
                f"batch at position {position} has size {size}, smaller than the minimum record overhead "
                f"({LEGACY_MIN_SIZE})"
            )
        if position > limit - LOG_OVERHEAD - size:
            return
        yield BatchView(view, position)
        position += size + LOG_OVERHEAD


def iter_request_batches(buf: bytes | bytearray | memoryview, max_message_size: int) -> Iterator[BatchView]:
    """Shallow iteration of an in-memory record set (a produce request), with Kafka's stricter checks.

    Raises CorruptRecordError for a size below the minimum or above ``max_message_size`` and for a magic
    outside 0..2. A trailing partial batch ends the iteration silently (the caller trims it).
    """
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    limit = len(view)
    position = 0
    while limit - position >= LOG_OVERHEAD:
        size = _I.unpack_from(view, position + 8)[0]
        if size < LEGACY_MIN_SIZE:
            raise CorruptRecordError(
                f"record size {size} at position {position} is smaller than the minimum record overhead "
                f"({LEGACY_MIN_SIZE})"
            )
        if size > max_message_size:
            raise CorruptRecordError(
                f"record size {size} at position {position} exceeds the largest allowable message size "
                f"({max_message_size})"
            )
        if limit - position < HEADER_SIZE_UP_TO_MAGIC:
            return
        magic = view[position + MAGIC_OFFSET]
        if magic > 2:
            raise CorruptRecordError(f"invalid magic {magic} in the batch at position {position}")
        if limit - position < size + LOG_OVERHEAD:
            return
        yield BatchView(view, position)
        position += size + LOG_OVERHEAD


_V2_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch


def read_v2_header(buf: bytes | bytearray | memoryview) -> V2Header | None:
    """The first batch's 61-byte header read as v2 in one unpack, whatever its magic (the caller checks
    ``magic`` first); None when ``buf`` is shorter than a v2 header. The produce path reads each partition's
    header here once and hands the value down (the handler's checks, the log's validation, producer state,
    offset assignment)."""
    if len(buf) < RECORD_BATCH_OVERHEAD:
        return None
    return V2Header._make(V2_HEADER.unpack_from(buf))


@dataclass(frozen=True, slots=True)
class V2BatchView(BatchView):
    """A v2 ``BatchView`` whose header fields come from its ``header``, read once (``read_v2_header``), instead
    of being unpacked from the buffer again on each access. The offset field is still read from the buffer, so
    ``last_offset`` follows an in-place stamp; fields the CRC covers must not be rewritten (LogAppendTime)."""

    header: V2Header

    @property
    def size_field(self) -> int:
        return self.header.size

    @property
    def magic(self) -> int:
        return self.header.magic

    @property
    def attributes(self) -> int:
        return self.header.attributes

    @property
    def max_timestamp(self) -> int:
        return self.header.max_timestamp

    @property
    def stored_crc(self) -> int:
        return self.header.crc

    @property
    def last_offset_delta(self) -> int:
        return self.header.last_offset_delta

    @property
    def base_timestamp(self) -> int:
        return self.header.base_timestamp

    @property
    def producer_id(self) -> int:
        return self.header.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.header.producer_epoch

    @property
    def base_sequence(self) -> int:
        return self.header.base_sequence

    @property
    def records_count(self) -> int:
        return self.header.records_count


def stamp_v2_batch(
    buf: bytearray | memoryview, position: int, batch_length: int, base_offset: int, epoch: int
) -> None:
    """Write a v2 batch's base offset and partition leader epoch in place, in one pack (``batch_length`` is the
    batch's own length field, written back unchanged); the CRC does not cover them."""
    _V2_OFFSET_LENGTH_EPOCH.pack_into(buf, position, base_offset, batch_length, epoch)
