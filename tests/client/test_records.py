"""samsa.client.records and the partitioner, without a broker."""

from __future__ import annotations

from samsa.client.partitioner import murmur2, partition_for_key
from samsa.client.records import ProducerRecord, build_batch, iter_consumer_records, next_fetch_offset
from samsa.records import (
    ControlRecordType,
    EndTransactionMarker,
    Record,
    build_end_txn_marker_batch,
    build_legacy_message_set,
)
from samsa.records import build_batch as build_batch_v2


def test_legacy_messages_decode_with_their_timestamp_type() -> None:
    v0 = build_legacy_message_set(0, [Record(0, -1, b"k", b"a"), Record(1, -1, None, b"b")])
    v1 = build_legacy_message_set(1, [Record(2, 5000, b"k", b"c")], compression=1)
    got = list(iter_consumer_records(v0 + v1, "t", 3))
    assert [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value) for r in got] == [
        (0, -1, -1, b"k", b"a"),
        (1, -1, -1, None, b"b"),
        (2, 5000, 0, b"k", b"c"),
    ]
    assert {(r.topic, r.partition) for r in got} == {("t", 3)}


def test_control_batches_are_skipped_but_advance_the_position() -> None:
    data = build_batch([ProducerRecord(b"k", b"v", (), 10)])
    marker = build_end_txn_marker_batch(
        EndTransactionMarker(ControlRecordType.COMMIT, 0),
        producer_id=7,
        producer_epoch=0,
        timestamp=11,
        base_offset=1,
    )
    raw = data + marker
    assert [r.offset for r in iter_consumer_records(raw, "t", 0)] == [0]
    assert next_fetch_offset(raw, 0) == 2
    assert next_fetch_offset(raw[:-3], 0) == 1  # a partial trailing batch is not counted
    assert next_fetch_offset(b"", 42) == 42


def test_murmur2_matches_kafka() -> None:
    # values Kafka's own unit tests state for Utils.murmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107
    assert murmur2(b"") == 275646681
    assert partition_for_key(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    assert 0 <= partition_for_key(b"k", 3) < 3


def test_read_committed_skips_aborted_transactions() -> None:
    def txn(pid: int, offset: int, value: bytes) -> bytes:
        return build_batch_v2(
            [Record(offset, 1, None, value)],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )

    def marker(pid: int, offset: int, kind: ControlRecordType) -> bytes:
        return build_end_txn_marker_batch(
            EndTransactionMarker(kind, 0), producer_id=pid, producer_epoch=0, timestamp=1, base_offset=offset
        )

    raw = b"".join(
        [
            txn(7, 0, b"committed"),
            marker(7, 1, ControlRecordType.COMMIT),
            txn(8, 2, b"aborted"),
            txn(9, 3, b"other producer"),
            marker(8, 4, ControlRecordType.ABORT),
            txn(8, 5, b"after the abort"),
            marker(8, 6, ControlRecordType.COMMIT),
            marker(9, 7, ControlRecordType.COMMIT),
        ]
    )
    committed = iter_consumer_records(raw, "t", 0, aborted_transactions=[(8, 2)])
    assert [r.value for r in committed] == [b"committed", b"other producer", b"after the abort"]
    everything = iter_consumer_records(raw, "t", 0)
    assert [r.value for r in everything] == [b"committed", b"aborted", b"other producer", b"after the abort"]
