"""Errors raised by the storage core (indexes, segments, logs).

StorageError                          base of this layer
├── InvalidConfigError                a topic-config key or value that is not accepted (key, value, reason)
├── OffsetOutOfRangeError             a read or log-start move outside [log start, LEO] (Kafka: OffsetOutOfRangeException)
├── LogSegmentOffsetOverflowError     an offset not representable relative to a segment's base offset
├── IndexOffsetOverflowError          the same, raised by an index
├── InvalidOffsetError                a non-increasing offset-index append, or a time-index offset going back
├── IndexFullError                    an append to a full index (Kafka: IllegalArgumentException)
├── CorruptIndexError                 an index failing its sanity check
├── RecordTooLargeError               a batch larger than max.message.bytes (leader appends)
│   └── InflatedBatchTooLargeError    a compressed batch inflating past 16 x max.message.bytes
├── RecordBatchTooLargeError          an append larger than segment.bytes
├── OffsetsOutOfOrderError            follower batches whose offsets do not increase
├── UnexpectedAppendOffsetError       a follower append starting below the log end offset
├── IllegalRollError                  a roll to an offset below the active segment, or onto a non-empty segment
├── RecordValidationError             records the leader refuses, e.g. a null key on a compacted topic
│                                     (Kafka: RecordValidationException; INVALID_RECORD with record errors)
├── CleaningAbortedError              a compaction given up because the log changed under it or was stopped
├── ProducerStateError                a client batch refused by the producer-state rules (``producer_state``)
│   ├── OutOfOrderSequenceError       its first sequence does not follow the last one (OUT_OF_ORDER_SEQUENCE_NUMBER)
│   ├── InvalidProducerEpochError     an epoch older than the producer's current one (INVALID_PRODUCER_EPOCH)
│   └── InvalidSequenceError          a producer id without a sequence (INVALID_RECORD)
└── KafkaStorageError                 an I/O error in the log layer, also an OSError; every public ``Log``
    │                                 method raises it for OSError, and the log is as it was before the call
    └── AppendRollbackError           a failed append whose bytes could not be cut off again: the log goes
                                      offline (every later call raises KafkaStorageError)

Record-level corruption (bad CRC, bad size) is ``samsa.records.CorruptRecordError`` and passes through unchanged.
Every error keeps the values it names as attributes.
"""

from __future__ import annotations

from pathlib import Path


class StorageError(Exception):
    """Base of every error raised by ``samsa.storage``'s core."""


class InvalidConfigError(StorageError, ValueError):
    """A configuration ``key`` whose ``value`` is refused, and why."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        super().__init__(f"invalid value {value!r} for configuration {key}: {reason}")
        self.key = key
        self.value = value
        self.reason = reason


class OffsetOutOfRangeError(StorageError):
    """``offset`` is outside what the log holds: [``log_start_offset``, ``log_end_offset``]."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int, reason: str = "") -> None:
        detail = f": {reason}" if reason else ""
        super().__init__(
            f"offset {offset} is out of range for the log [{log_start_offset}, {log_end_offset}]{detail}"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class LogSegmentOffsetOverflowError(StorageError):
    """``offset`` minus the segment's ``base_offset`` is not in [0, Int.MAX]."""

    def __init__(self, base_offset: int, offset: int) -> None:
        super().__init__(
            f"offset {offset} cannot be stored in the segment with base offset {base_offset} "
            f"(relative offset {offset - base_offset} is outside [0, 2147483647])"
        )
        self.base_offset = base_offset
        self.offset = offset


class IndexOffsetOverflowError(StorageError):
    """``offset`` does not fit an index whose base offset is ``base_offset``."""

    def __init__(self, path: Path, base_offset: int, offset: int) -> None:
        super().__init__(f"offset {offset} overflows the index {path} with base offset {base_offset}")
        self.path = path
        self.base_offset = base_offset
        self.offset = offset


class InvalidOffsetError(StorageError):
    """An index append with ``offset`` not after the index's ``last_offset``."""

    def __init__(self, path: Path, offset: int, last_offset: int) -> None:
        super().__init__(
            f"attempt to append offset {offset} to the index {path}, no larger than its last offset {last_offset}"
        )
        self.path = path
        self.offset = offset
        self.last_offset = last_offset


class IndexFullError(StorageError):
    """An append to the index at ``path`` that already holds ``entries`` of ``max_entries``."""

    def __init__(self, path: Path, entries: int, max_entries: int) -> None:
        super().__init__(f"attempt to append to a full index {path} ({entries} of {max_entries} entries)")
        self.path = path
        self.entries = entries
        self.max_entries = max_entries


class CorruptIndexError(StorageError):
    """The index at ``path`` fails a sanity check."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"corrupt index {path}: {reason}")
        self.path = path
        self.reason = reason


class RecordTooLargeError(StorageError):
    """A batch of ``size`` bytes (at ``position`` in the request) exceeds max.message.bytes ``max_size``."""

    def __init__(self, size: int, max_size: int, position: int = 0) -> None:
        super().__init__(
            f"the batch at position {position} is {size} bytes, larger than max.message.bytes {max_size}"
        )
        self.size = size
        self.max_size = max_size
        self.position = position


class InflatedBatchTooLargeError(RecordTooLargeError):
    """A compressed batch (at ``position`` in the request) that inflates past ``max_inflated`` bytes; refused like
    a batch over max.message.bytes (MESSAGE_TOO_LARGE), having inflated at most that much."""

    def __init__(self, size: int, max_inflated: int, position: int = 0) -> None:
        StorageError.__init__(
            self,
            f"the compressed batch at position {position} ({size} bytes) inflates past {max_inflated} bytes "
            "(16 times max.message.bytes)",
        )
        self.size = size
        self.max_size = max_inflated
        self.position = position


class RecordBatchTooLargeError(StorageError):
    """An append of ``size`` bytes exceeds segment.bytes ``segment_bytes``."""

    def __init__(self, size: int, segment_bytes: int) -> None:
        super().__init__(f"the record set of {size} bytes is larger than segment.bytes {segment_bytes}")
        self.size = size
        self.segment_bytes = segment_bytes


class OffsetsOutOfOrderError(StorageError):
    """Follower batches whose offsets do not increase: ``offset`` came after ``previous``."""

    def __init__(self, offset: int, previous: int) -> None:
        super().__init__(f"out of order offsets: batch offset {offset} follows last offset {previous}")
        self.offset = offset
        self.previous = previous


class UnexpectedAppendOffsetError(StorageError):
    """A follower append of [``first_offset``, ``last_offset``] starting below ``log_end_offset``."""

    def __init__(self, first_offset: int, last_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"unexpected offset in an append: first offset {first_offset} (last {last_offset}) is below "
            f"the log end offset {log_end_offset}"
        )
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.log_end_offset = log_end_offset


class IllegalRollError(StorageError):
    """A roll to ``offset`` that the active segment at ``active_base_offset`` forbids."""

    def __init__(self, offset: int, active_base_offset: int, reason: str) -> None:
        super().__init__(
            f"cannot roll to offset {offset} (active segment base {active_base_offset}): {reason}"
        )
        self.offset = offset
        self.active_base_offset = active_base_offset


class RecordValidationError(StorageError):
    """Records refused by the leader: ``record_errors`` holds (index of the record in its batch, message)."""

    def __init__(self, record_errors: list[tuple[int, str]]) -> None:
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
        super().__init__(
            f"One or more records have been rejected due to {len(record_errors)} record errors in total, and "
            f"only showing the first three errors at most: [{shown}]"
        )
        self.record_errors = record_errors


class CleaningAbortedError(StorageError):
    """The cleaning of the log in ``directory`` was given up: ``reason``. Nothing was swapped in."""

    def __init__(self, directory: Path, reason: str) -> None:
        super().__init__(f"cleaning of {directory} aborted: {reason}")
        self.directory = directory
        self.reason = reason


class ProducerStateError(StorageError):
    """A client batch refused by the producer-state rules; names the producer and the values compared."""


class OutOfOrderSequenceError(ProducerStateError):
    """A batch's first sequence does not follow the producer's last one (Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    def __init__(self, producer_id: int, epoch: int, first_sequence: int, expected: int | None) -> None:
        wanted = "0 (a new epoch starts at 0)" if expected is None else str(expected)
        super().__init__(
            f"out of order sequence number for producer {producer_id} at epoch {epoch}: "
            f"{first_sequence} (incoming first sequence), {wanted} (expected)"
        )
        self.producer_id = producer_id
        self.epoch = epoch
        self.first_sequence = first_sequence
        self.expected = expected


class InvalidProducerEpochError(ProducerStateError):
    """A batch from an epoch older than the producer's current one (Kafka: INVALID_PRODUCER_EPOCH)."""

    def __init__(self, producer_id: int, epoch: int, current_epoch: int) -> None:
        super().__init__(
            f"epoch {epoch} of producer {producer_id} is older than its current epoch {current_epoch}: fenced"
        )
        self.producer_id = producer_id
        self.epoch = epoch
        self.current_epoch = current_epoch


class InvalidSequenceError(ProducerStateError):
    """A batch with a producer id but no sequence (Kafka refuses it as an invalid record)."""

    def __init__(self, producer_id: int, sequence: int) -> None:
        super().__init__(f"invalid sequence number {sequence} in a batch with producer id {producer_id}")
        self.producer_id = producer_id
        self.sequence = sequence


class KafkaStorageError(StorageError, OSError):
    """An I/O error on ``path``. A ``Log`` raising it is as it was before the call (an append is undone), except
    for ``AppendRollbackError``, after which the log is offline.

    Also an ``OSError``, so code that handles I/O failures generically still catches it.
    """

    def __init__(self, path: Path, cause: BaseException) -> None:
        super().__init__(f"I/O error on {path}: {cause}")
        self.path = path
        self.cause = cause


class AppendRollbackError(KafkaStorageError):
    """A failed append to ``file`` whose bytes could not be cut back to ``size``: the file's tail is unknown.
    ``path`` is the partition directory, as for every KafkaStorageError."""

    def __init__(self, file: Path, size: int, cause: OSError) -> None:
        super().__init__(file.parent, cause)
        self.file = file
        self.size = size

    def __str__(self) -> str:
        return f"could not undo a failed append to {self.file} (cutting it back to {self.size} bytes failed: {self.cause})"
