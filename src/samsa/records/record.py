"""A decoded record, whatever format it came from, and the timestamp types."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

NO_TIMESTAMP = -1

Header = tuple[str, bytes | None]


class TimestampType(IntEnum):
    """Kafka's ``TimestampType`` ids; v2 and v1 carry CreateTime/LogAppendTime in attribute bit 3."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


CREATE_TIME = TimestampType.CREATE_TIME
LOG_APPEND_TIME = TimestampType.LOG_APPEND_TIME


@dataclass(frozen=True, slots=True)
class Record:
    """One record with its absolute offset and the timestamp a consumer sees (-1 when there is none).

    Immutable; safe to share between threads.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
