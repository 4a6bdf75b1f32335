"""Differential tests against kafka-python's record codec (and aiokafka's, which has every codec in this venv).

Both directions: their bytes decode here to the records they were given, and our bytes decode there. Every codec
is installed for both libraries (asserted); the one pairing a library refuses by design, aiokafka with LZ4 in
magic 0 (Kafka's old LZ4 framing had a broken header checksum), is not generated.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records_strategies import MAX_TS, record_lists

from samsa.records import (
    CompressionType,
    Record,
    TimestampType,
    build_batch,
    build_legacy_message_set,
    decode_batch,
    iter_batches,
    iter_records,
)

with warnings.catch_warnings():  # kafka-python's schema loader uses deprecated importlib.resources calls
    warnings.simplefilter("ignore", DeprecationWarning)
    import aiokafka.codec
    import aiokafka.record.default_records
    import aiokafka.record.legacy_records
    import kafka.codec
    import kafka.record.default_records
    import kafka.record.legacy_records

LIBRARIES: dict[str, tuple[ModuleType, ModuleType, ModuleType]] = {
    "kafka-python": (kafka.record.default_records, kafka.record.legacy_records, kafka.codec),
    "aiokafka": (aiokafka.record.default_records, aiokafka.record.legacy_records, aiokafka.codec),
}


def supported(codec: CompressionType, codecs: ModuleType) -> bool:
    checks = {
        CompressionType.NONE: lambda: True,
        CompressionType.GZIP: codecs.has_gzip,
        CompressionType.SNAPPY: codecs.has_snappy,
        CompressionType.LZ4: codecs.has_lz4,
        CompressionType.ZSTD: codecs.has_zstd,
    }
    return bool(checks[codec]())


def cases() -> list[Any]:
    return [
        pytest.param(name, codec, id=f"{name}-{codec}") for name in LIBRARIES for codec in CompressionType
    ]


def legacy_cases() -> list[Any]:
    return [
        pytest.param(name, codec, magic, id=f"{name}-{codec}-v{magic}")
        for name in LIBRARIES
        for codec in CompressionType
        for magic in (0, 1)
        if codec is not CompressionType.ZSTD
        and not (name == "aiokafka" and magic == 0 and codec is CompressionType.LZ4)
    ]


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("codec", list(CompressionType))
def test_every_codec_is_installed_for_both_libraries(library: str, codec: CompressionType) -> None:
    assert supported(codec, LIBRARIES[library][2])


def rebased(records: list[Record]) -> list[Record]:
    """Their v2 builders always write base offset 0 and take offset deltas: start the offsets at 0."""
    first = records[0].offset
    return [Record(r.offset - first, r.timestamp, r.key, r.value, r.headers) for r in records]


def theirs_as_records(batch: Any) -> list[Record]:
    return [
        Record(r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value, tuple(r.headers))
        for r in batch
    ]


@pytest.mark.parametrize(("library", "codec"), cases())
@settings(max_examples=40, deadline=None)
@given(records=record_lists(), transactional=st.booleans(), producer=st.integers(0, 2**40))
def test_their_v2_batches_decode_here(
    library: str, codec: CompressionType, records: list[Record], transactional: bool, producer: int
) -> None:
    default, _, _ = LIBRARIES[library]
    records = rebased(records)
    if (
        library == "aiokafka"
    ):  # its builder mishandles a first timestamp of -1 (no timestamp); not ours to test
        records = [Record(r.offset, max(0, r.timestamp), r.key, r.value, r.headers) for r in records]
    builder = default.DefaultRecordBatchBuilder(2, int(codec), int(transactional), producer, 3, 17, 2**30)
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value, list(r.headers))
    batch = decode_batch(bytes(builder.build()))
    assert list(batch.records) == records
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (producer, 3, 17)
    assert batch.is_transactional is transactional
    assert batch.compression in (codec, CompressionType.NONE)  # kafka-python drops codecs that do not help


@pytest.mark.parametrize(("library", "codec"), cases())
@settings(max_examples=40, deadline=None)
@given(records=record_lists(), log_append=st.booleans(), append_time=st.integers(0, MAX_TS))
def test_our_v2_batches_decode_there(
    library: str, codec: CompressionType, records: list[Record], log_append: bool, append_time: int
) -> None:
    default, _, _ = LIBRARIES[library]
    kind = TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
    raw = build_batch(records, compression=codec, timestamp_type=kind, log_append_time=append_time)
    batch = default.DefaultRecordBatch(raw)
    assert batch.validate_crc()
    assert batch.compression_type == codec and batch.timestamp_type == kind
    expected = [
        Record(r.offset, append_time if log_append else r.timestamp, r.key, r.value, r.headers)
        for r in records
    ]
    assert theirs_as_records(batch) == expected


@settings(max_examples=60, deadline=None)
@given(records=record_lists())
def test_uncompressed_v2_bytes_are_identical_to_kafka_pythons(records: list[Record]) -> None:
    records = rebased(records)
    builder = kafka.record.default_records.DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 2**30)
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value, list(r.headers))
    assert build_batch(records, base_offset=0, partition_leader_epoch=0) == bytes(builder.build())


@pytest.mark.parametrize(("library", "codec", "magic"), legacy_cases())
@settings(max_examples=30, deadline=None)
@given(records=record_lists(headers=False))
def test_their_legacy_messages_decode_here(
    library: str, codec: CompressionType, magic: int, records: list[Record]
) -> None:
    _, legacy, _ = LIBRARIES[library]
    if codec and magic == 1:
        records = rebased(records)  # their compressed v1 wrapper has offset 0: inner offsets must be relative
    builder = legacy.LegacyRecordBatchBuilder(magic, int(codec), 2**30)
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value)
    raw = bytes(builder.build())
    expected = [Record(r.offset, r.timestamp if magic else -1, r.key, r.value) for r in records]
    assert [r for view in iter_batches(raw) for r in iter_records(view)] == expected


@pytest.mark.parametrize(("library", "codec", "magic"), legacy_cases())
@settings(max_examples=30, deadline=None)
@given(records=record_lists(headers=False))
def test_our_legacy_messages_decode_there(
    library: str, codec: CompressionType, magic: int, records: list[Record]
) -> None:
    _, legacy, _ = LIBRARIES[library]
    raw = build_legacy_message_set(magic, records, codec)
    seen = []
    for view in iter_batches(raw):
        batch = legacy.LegacyRecordBatch(bytes(view.raw()), magic)
        assert batch.validate_crc()
        seen += theirs_as_records(batch)
    assert seen == [Record(r.offset, r.timestamp if magic else -1, r.key, r.value) for r in records]
