"""Errors raised by the record codecs.

RecordsError                      base of this layer
├── CorruptRecordError            bytes that fail a size or CRC check (Kafka: CorruptRecordException)
├── InflatedTooLargeError         compressed data that inflates past the caller's bound (Kafka: RecordTooLarge)
└── InvalidRecordError            well-formed bytes that break a format rule (Kafka: InvalidRecordException)
    ├── UnsupportedCompressionError   an unknown or disallowed codec id
    └── VarintError                   a varint longer than 5 (varlong: 10) bytes, or cut short
"""

from __future__ import annotations


class RecordsError(Exception):
    """Base of every error raised by ``samsa.records``."""


class CorruptRecordError(RecordsError):
    """A batch or message whose size or checksum is wrong."""


class InflatedTooLargeError(RecordsError):
    """Compressed records that would inflate past the bound their reader set."""


class InvalidRecordError(RecordsError):
    """A batch or message that breaks a rule of its format."""


class UnsupportedCompressionError(InvalidRecordError):
    """A compression codec id that is unknown, or not allowed for the message format."""


class VarintError(InvalidRecordError):
    """A varint that runs past 5 (varlong: 10) bytes, or a buffer that ends inside one."""
