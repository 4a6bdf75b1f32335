"""The records of ``__transaction_state``, as Kafka writes them, and which partition holds a transactional id.

Key (one per transactional id; compaction keeps the newest)::

    int16  key version (0)
    string transactional_id                    (TransactionLogKey v0: int16 length + UTF-8)

Value (absent: a tombstone, the id expired)::

    int16  value version (0; 1 once the client's transaction version is 2, flexible with tagged fields)
    int64  producer_id
    int16  producer_epoch
    int32  transaction_timeout_ms
    int8   transaction_status                  (TransactionState's byte)
    [topic string, [int32 partition]]          (null/empty once the transaction is complete)
    int64  transaction_last_update_timestamp_ms
    int64  transaction_start_timestamp_ms

Big-endian throughout; the codecs are the generated ones of ``samsa.protocol.messages.transaction_log_record``.
Pure: bytes in, values out.
"""

from __future__ import annotations

from samsa.protocol.errors import DecodeError
from samsa.protocol.messages.transaction_log_record import (
    PartitionsSchema,
    TransactionLogKey,
    TransactionLogValue,
)
from samsa.transaction.state import TransactionMetadata, TransactionState

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit signed overflow)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition of an id: abs(hashCode) mod the partition count (Kafka's
    ``Utils.abs`` maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


def encode_key(transactional_id: str) -> bytes:
    """The record key of ``transactional_id``."""
    return KEY_VERSION.to_bytes(2, "big") + TransactionLogKey(transactional_id).encode(KEY_VERSION)


def decode_key(data: bytes | memoryview) -> str:
    """The transactional id of a record key; DecodeError for another version."""
    version = int.from_bytes(data[:2], "big", signed=True)
    if version != KEY_VERSION:
        raise DecodeError(f"unknown TransactionLogKey version {version}", 0)
    return TransactionLogKey.decode(data[2:], KEY_VERSION).transactional_id


def encode_value(meta: TransactionMetadata) -> bytes:
    """The record value of ``meta`` (Kafka never writes Dead: a Dead id is a tombstone, a null value)."""
    if meta.state is TransactionState.DEAD:
        raise ValueError("a Dead transactional id is written as a tombstone")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    value = TransactionLogValue(
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        transaction_timeout_ms=meta.timeout_ms,
        transaction_status=int(meta.state),
        transaction_partitions=[PartitionsSchema(t, ps) for t, ps in by_topic.items()],
        transaction_last_update_timestamp_ms=meta.last_update_ms,
        transaction_start_timestamp_ms=meta.start_ms,
    )
    return VALUE_VERSION.to_bytes(2, "big") + value.encode(VALUE_VERSION)


def decode_value(transactional_id: str, data: bytes | memoryview) -> TransactionMetadata:
    """The metadata a record value holds (versions 0 and 1)."""
    version = int.from_bytes(data[:2], "big", signed=True)
    if version not in (0, 1):
        raise DecodeError(f"unknown TransactionLogValue version {version}", 0)
    value = TransactionLogValue.decode(data[2:], version)
    partitions = frozenset(
        (entry.topic, p) for entry in value.transaction_partitions or () for p in entry.partition_ids
    )
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=value.producer_id,
        producer_epoch=value.producer_epoch,
        timeout_ms=value.transaction_timeout_ms,
        state=TransactionState(value.transaction_status),
        partitions=partitions,
        start_ms=value.transaction_start_timestamp_ms,
        last_update_ms=value.transaction_last_update_timestamp_ms,
        previous_producer_id=value.previous_producer_id if version >= 1 else -1,
    )
