"""Kafka's partition log storage: indexes, segments, logs, and (in sibling modules) the log manager.

The core ladder, each rung one module:

    index.OffsetIndex / index.TimeIndex   mmap'd sparse indexes (.index, .timeindex)
    file_records.FileRecords              a segment's .log file
    segment.LogSegment                    one .log with its indexes
    segments.LogSegments                  segments ordered by base offset
    log_loader                            loading and recovery of a partition directory
    log.Log                               one partition: offsets, append, read, roll, retention, flush
    leader_epoch.LeaderEpochFileCache     leader-epoch-checkpoint
    log_cleaner.LogCleaner                log compaction (cleanup.policy=compact): which log, and when
    cleaner                               one cleaning (Kafka's Cleaner): offset map, filter, swap
    log_manager.LogManager                every log of the broker's log dirs, the periodic work
    log_end_claims                        offsets claimed durable ahead of the log end (OS crashes)

Nothing here is thread-safe: a log's owner serialises calls to it (the cleaner's worker thread only reads
file descriptors of its own and writes new ``.cleaned`` files). Errors are in ``errors``.

Names are resolved lazily through the module ``__getattr__`` of PEP 562, as in ``samsa.records``: the log
ladder loads with the first log a broker opens, not with ``import samsa.storage``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from samsa.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .config import LogConfig
    from .errors import (
        CleaningAbortedError,
        CorruptIndexError,
        IllegalRollError,
        IndexFullError,
        IndexOffsetOverflowError,
        InvalidConfigError,
        InvalidOffsetError,
        KafkaStorageError,
        LogSegmentOffsetOverflowError,
        OffsetOutOfRangeError,
        OffsetsOutOfOrderError,
        RecordBatchTooLargeError,
        RecordTooLargeError,
        RecordValidationError,
        StorageError,
        UnexpectedAppendOffsetError,
    )
    from .file_slice import FetchDataInfo, FileSlice, LogOffsetMetadata
    from .index import OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset
    from .leader_epoch import EpochEntry, LeaderEpochFileCache
    from .log import (
        EARLIEST_TIMESTAMP,
        LATEST_TIMESTAMP,
        MAX_TIMESTAMP,
        FetchIsolation,
        Log,
        LogAppendInfo,
    )
    from .segment import LogSegment, RollParams, TimestampAndOffset
    from .segments import LogSegments

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "CleaningAbortedError",
    "CorruptIndexError",
    "EpochEntry",
    "FetchDataInfo",
    "FetchIsolation",
    "FileSlice",
    "IllegalRollError",
    "IndexFullError",
    "IndexOffsetOverflowError",
    "InvalidConfigError",
    "InvalidOffsetError",
    "KafkaStorageError",
    "LeaderEpochFileCache",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "LogOffsetMetadata",
    "LogSegment",
    "LogSegmentOffsetOverflowError",
    "LogSegments",
    "OffsetIndex",
    "OffsetOutOfRangeError",
    "OffsetPosition",
    "OffsetsOutOfOrderError",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "RecordValidationError",
    "RollParams",
    "StorageError",
    "TimeIndex",
    "TimestampAndOffset",
    "TimestampOffset",
    "UnexpectedAppendOffsetError",
]

_EXPORTS = {  # module -> the names it gives this package
    "config": ("LogConfig",),
    "errors": (
        "CleaningAbortedError",
        "CorruptIndexError",
        "IllegalRollError",
        "IndexFullError",
        "IndexOffsetOverflowError",
        "InvalidConfigError",
        "InvalidOffsetError",
        "KafkaStorageError",
        "LogSegmentOffsetOverflowError",
        "OffsetOutOfRangeError",
        "OffsetsOutOfOrderError",
        "RecordBatchTooLargeError",
        "RecordTooLargeError",
        "RecordValidationError",
        "StorageError",
        "UnexpectedAppendOffsetError",
    ),
    "file_slice": (
        "FetchDataInfo",
        "FileSlice",
        "LogOffsetMetadata",
    ),
    "index": (
        "OffsetIndex",
        "OffsetPosition",
        "TimeIndex",
        "TimestampOffset",
    ),
    "leader_epoch": (
        "EpochEntry",
        "LeaderEpochFileCache",
    ),
    "log": (
        "EARLIEST_TIMESTAMP",
        "LATEST_TIMESTAMP",
        "MAX_TIMESTAMP",
        "FetchIsolation",
        "Log",
        "LogAppendInfo",
    ),
    "segment": (
        "LogSegment",
        "RollParams",
        "TimestampAndOffset",
    ),
    "segments": ("LogSegments",),
}
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
