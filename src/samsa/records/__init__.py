"""Kafka's record formats: record batch v2 and legacy messages v0/v1, their CRCs and compression codecs.

Pure functions over bytes: no files, sockets or event loops here.

Each name below is imported from its module on first use (PEP 562 ``__getattr__``), so importing
one piece, say ``samsa.records.errors``, does not load the rest (start-up time: a broker with no logs
answers its first request without loading them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from samsa.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .batch import (
        DecodedBatch,
        build_batch,
        build_end_txn_marker_batch,
        decode_batch,
        decode_records,
        encode_records,
        set_max_timestamp,
    )
    from .batch_view import (
        HEADER_SIZE_UP_TO_MAGIC,
        LOG_OVERHEAD,
        RECORD_BATCH_OVERHEAD,
        BatchView,
        crc32,
        crc32c,
        iter_batches,
        iter_request_batches,
    )
    from .compression import CompressionType, compress, decompress
    from .control import (
        ControlRecord,
        ControlRecordType,
        EndTransactionMarker,
        encode_control_key,
        parse_control_key,
        parse_control_record,
    )
    from .errors import (
        CorruptRecordError,
        InflatedTooLargeError,
        InvalidRecordError,
        RecordsError,
        UnsupportedCompressionError,
        VarintError,
    )
    from .iterate import iter_records
    from .legacy import build_legacy_message_set, decode_legacy, set_legacy_timestamp
    from .record import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP, Record, TimestampType

__all__ = [
    "CREATE_TIME",
    "HEADER_SIZE_UP_TO_MAGIC",
    "LOG_APPEND_TIME",
    "LOG_OVERHEAD",
    "NO_TIMESTAMP",
    "RECORD_BATCH_OVERHEAD",
    "BatchView",
    "CompressionType",
    "ControlRecord",
    "ControlRecordType",
    "CorruptRecordError",
    "DecodedBatch",
    "EndTransactionMarker",
    "InflatedTooLargeError",
    "InvalidRecordError",
    "Record",
    "RecordsError",
    "TimestampType",
    "UnsupportedCompressionError",
    "VarintError",
    "build_batch",
    "build_end_txn_marker_batch",
    "build_legacy_message_set",
    "compress",
    "crc32",
    "crc32c",
    "decode_batch",
    "decode_legacy",
    "decode_records",
    "decompress",
    "encode_control_key",
    "encode_records",
    "iter_batches",
    "iter_records",
    "iter_request_batches",
    "parse_control_key",
    "parse_control_record",
    "set_legacy_timestamp",
    "set_max_timestamp",
]

_EXPORTS = {  # module -> the names it gives this package
    "batch": (
        "DecodedBatch",
        "build_batch",
        "build_end_txn_marker_batch",
        "decode_batch",
        "decode_records",
        "encode_records",
        "set_max_timestamp",
    ),
    "compression": (
        "CompressionType",
        "compress",
        "decompress",
    ),
    "control": (
        "ControlRecord",
        "ControlRecordType",
        "EndTransactionMarker",
        "encode_control_key",
        "parse_control_key",
        "parse_control_record",
    ),
    "errors": (
        "CorruptRecordError",
        "InflatedTooLargeError",
        "InvalidRecordError",
        "RecordsError",
        "UnsupportedCompressionError",
        "VarintError",
    ),
    "iterate": ("iter_records",),
    "legacy": (
        "build_legacy_message_set",
        "decode_legacy",
        "set_legacy_timestamp",
    ),
    "record": (
        "CREATE_TIME",
        "LOG_APPEND_TIME",
        "NO_TIMESTAMP",
        "Record",
        "TimestampType",
    ),
    "batch_view": (
        "HEADER_SIZE_UP_TO_MAGIC",
        "LOG_OVERHEAD",
        "RECORD_BATCH_OVERHEAD",
        "BatchView",
        "crc32",
        "crc32c",
        "iter_batches",
        "iter_request_batches",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
