"""Kafka's record formats: record batch v2 and legacy messages v0/v1, their CRCs and compression codecs.

Pure functions over bytes: no files, sockets or event loops here.
"""

from .errors import CorruptRecordError, InvalidRecordError, RecordsError, UnsupportedCompressionError
from .view import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    BatchView,
    crc32,
    crc32c,
    iter_batches,
    iter_request_batches,
)

__all__ = [
    "HEADER_SIZE_UP_TO_MAGIC",
    "LOG_OVERHEAD",
    "RECORD_BATCH_OVERHEAD",
    "BatchView",
    "CorruptRecordError",
    "InvalidRecordError",
    "RecordsError",
    "UnsupportedCompressionError",
    "crc32",
    "crc32c",
    "iter_batches",
    "iter_request_batches",
]
