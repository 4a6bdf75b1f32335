"""Control records: the key every control record carries, and the end-transaction marker value.

A control batch (attribute bit 5) holds control records; the broker writes them, clients never may. Big-endian:

    control record key (4 bytes)          end-transaction marker value (6 bytes; COMMIT and ABORT only)
    0  int16 version   0; < 0 invalid     0  int16 version           0; < 0 invalid
    2  int16 type      ControlRecordType  2  int32 coordinatorEpoch

A key or value version above 0 is read as version 0 (the fields above are a prefix of every later version).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from .errors import InvalidRecordError
from .record import Record

if TYPE_CHECKING:
    from .batch_view import BatchView

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_KEY = struct.Struct(">hh")  # version, type
_MARKER = struct.Struct(">hi")  # version, coordinatorEpoch
CONTROL_KEY_SIZE = _KEY.size
END_TXN_MARKER_VALUE_SIZE = _MARKER.size


class ControlRecordType(IntEnum):
    """Kafka's ``ControlRecordType`` ids; any id not listed reads as UNKNOWN (clients skip it)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def from_id(cls, type_id: int) -> ControlRecordType:
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


def encode_control_key(control_type: ControlRecordType, version: int = CONTROL_KEY_VERSION) -> bytes:
    if control_type is ControlRecordType.UNKNOWN:
        raise ValueError("cannot write a control record of type UNKNOWN")
    return _KEY.pack(version, control_type)


def parse_control_key(key: bytes | None) -> tuple[int, ControlRecordType]:
    """(version, type) of a control record key; InvalidRecordError when it is short or its version negative."""
    version, type_id = _read_versioned(_KEY, key, "control record", "key")
    return version, ControlRecordType.from_id(type_id)


def _read_versioned(layout: struct.Struct, data: bytes | None, what: str, part: str) -> tuple[int, int]:
    """``data`` (a record's ``part``, holding ``what``) unpacked by ``layout``: an int16 version, then one field.
    InvalidRecordError when ``data`` is null or shorter than ``layout``, or its version is negative."""
    if data is None or len(data) < layout.size:
        found = f"a null {part}" if data is None else f"only {len(data)} bytes"
        raise InvalidRecordError(
            f"Invalid {part} size found for {what}. Must have at least {layout.size} bytes, but found {found}"
        )
    version, field = layout.unpack_from(data)
    if version < 0:
        raise InvalidRecordError(f"Invalid version found for {what}: {version}. May indicate data corruption")
    return version, field


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """A COMMIT or ABORT marker: what a transaction coordinator writes to end a transaction in a partition."""

    control_type: ControlRecordType
    coordinator_epoch: int

    def __post_init__(self) -> None:
        if self.control_type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            raise ValueError(f"an end transaction marker is COMMIT or ABORT, not {self.control_type.name}")

    def key(self) -> bytes:
        return encode_control_key(self.control_type)

    def value(self) -> bytes:
        return _MARKER.pack(END_TXN_MARKER_VERSION, self.coordinator_epoch)

    @classmethod
    def parse(cls, control_type: ControlRecordType, value: bytes | None) -> EndTransactionMarker:
        _, coordinator_epoch = _read_versioned(_MARKER, value, "end transaction marker", "value")
        return cls(control_type, coordinator_epoch)


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A parsed control record; ``marker`` is set for COMMIT and ABORT."""

    offset: int
    timestamp: int
    version: int
    control_type: ControlRecordType
    marker: EndTransactionMarker | None


def parse_control_record(record: Record) -> ControlRecord:
    version, control_type = parse_control_key(record.key)
    marker = None
    if control_type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        marker = EndTransactionMarker.parse(control_type, record.value)
    return ControlRecord(record.offset, record.timestamp, version, control_type, marker)


def batch_control_type(batch: BatchView) -> ControlRecordType:
    """What a control batch is, by the key of its record (COMMIT or ABORT for a transaction marker); UNKNOWN when
    it holds no readable record (clients skip those too)."""
    from .errors import RecordsError
    from .iterate import iter_records

    try:
        for record in iter_records(batch, verify_crc=False):
            return parse_control_key(record.key)[1]
    except RecordsError:
        pass
    return ControlRecordType.UNKNOWN
