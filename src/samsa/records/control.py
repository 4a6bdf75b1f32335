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

from .errors import InvalidRecordError
from .record import Record

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
CONTROL_KEY_SIZE = 4
END_TXN_MARKER_VALUE_SIZE = 6

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


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
    if key is None or len(key) < CONTROL_KEY_SIZE:
        found = "a null key" if key is None else f"only {len(key)} bytes"
        raise InvalidRecordError(
            f"Invalid value size found for control record key. Must have at least {CONTROL_KEY_SIZE} bytes, "
            f"but found {found}"
        )
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for control record: {version}. May indicate data corruption"
        )
    return version, ControlRecordType.from_id(type_id)


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
        if value is None or len(value) < END_TXN_MARKER_VALUE_SIZE:
            found = "a null value" if value is None else f"only {len(value)} bytes"
            raise InvalidRecordError(
                f"Invalid value size found for end transaction marker. Must have at least "
                f"{END_TXN_MARKER_VALUE_SIZE} bytes, but found {found}"
            )
        version, coordinator_epoch = _MARKER.unpack_from(value)
        if version < 0:
            raise InvalidRecordError(
                f"Invalid version found for end transaction marker: {version}. May indicate data corruption"
            )
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
