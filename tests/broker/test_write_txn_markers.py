"""``ReplicaManager.write_txn_markers`` (WriteTxnMarkers' path) on a real log: one control batch per marker."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

from samsa.broker.replica_manager import ReplicaManager, TxnMarkerEntry
from samsa.clock import ManualClock
from samsa.protocol.errors import ErrorCode
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager
from samsa.storage.topic import TopicPartition

TP = TopicPartition("t", 0)


def test_a_commit_marker_is_one_control_batch_and_an_unknown_partition_is_refused(tmp_path: Path) -> None:
    clock = ManualClock()
    logs = LogManager([tmp_path], LogConfig(), clock)
    logs.startup()
    [plog] = logs.create_topic(TP.topic, 1)
    manager = ReplicaManager(logs, 1, clock)
    manager.startup()
    entry = TxnMarkerEntry(7, 2, True, 5, (TP, TopicPartition("missing", 0)))
    answers = asyncio.run(manager.write_txn_markers([entry]))
    assert answers[(7, TP)] is ErrorCode.NONE
    assert answers[(7, TopicPartition("missing", 0))] is not ErrorCode.NONE
    assert plog.log_end_offset == 1 and plog.high_watermark == 1
    [segment_file] = sorted((tmp_path / "t-0").glob("*.log"))
    data = segment_file.read_bytes()
    # v2 header by hand: attributes at 21 (transactional bit 4, control bit 5), producer id at 43, epoch at 51,
    # base sequence at 53 (-1); the record's key: version 0, type 1 (COMMIT); value: version 0, coordinator epoch 5
    assert struct.unpack_from(">h", data, 21)[0] & 0x30 == 0x30
    assert struct.unpack_from(">qhi", data, 43) == (7, 2, -1)
    assert b"\x00\x00\x00\x01" in data[61:] and b"\x00\x00\x00\x00\x00\x05" in data[61:]
    logs.shutdown()


def test_a_transactional_batch_opens_the_producers_transaction_and_its_marker_closes_it(
    tmp_path: Path,
) -> None:
    from samsa.records import build_batch

    clock = ManualClock()
    logs = LogManager([tmp_path], LogConfig(), clock)
    logs.startup()
    [plog] = logs.create_topic(TP.topic, 1)
    manager = ReplicaManager(logs, 1, clock)
    manager.startup()
    manager.append(TP, memoryview(bytearray(build_batch([b"x"]))), -1)
    batch = build_batch([b"a", b"b"], producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True)
    assert manager.append(TP, memoryview(bytearray(batch)), -1).error is ErrorCode.NONE
    assert plog.producer_state.producers[9].current_txn_first_offset == 1
    stale = TxnMarkerEntry(9, 0, False, 0, (TP,))
    assert asyncio.run(manager.write_txn_markers([stale]))[(9, TP)] is ErrorCode.NONE
    assert plog.producer_state.producers[9].current_txn_first_offset == -1 and plog.log_end_offset == 4
    logs.shutdown()


def test_a_marker_from_an_older_coordinator_epoch_is_fenced_with_nothing_written(tmp_path: Path) -> None:
    clock = ManualClock()
    logs = LogManager([tmp_path], LogConfig(), clock)
    logs.startup()
    [plog] = logs.create_topic(TP.topic, 1)
    manager = ReplicaManager(logs, 1, clock)
    manager.startup()
    assert (
        asyncio.run(manager.write_txn_markers([TxnMarkerEntry(3, 0, True, 4, (TP,))]))[(3, TP)]
        is ErrorCode.NONE
    )
    older = TxnMarkerEntry(3, 0, False, 2, (TP,))
    assert (
        asyncio.run(manager.write_txn_markers([older]))[(3, TP)] is ErrorCode.TRANSACTION_COORDINATOR_FENCED
    )
    assert plog.log_end_offset == 1
    logs.shutdown()


def test_a_control_batch_from_a_client_is_refused_with_invalid_record(tmp_path: Path) -> None:
    from samsa.records import build_batch

    clock = ManualClock()
    logs = LogManager([tmp_path], LogConfig(), clock)
    logs.startup()
    [plog] = logs.create_topic(TP.topic, 1)
    manager = ReplicaManager(logs, 1, clock)
    manager.startup()
    batch = build_batch([b"x"], producer_id=1, producer_epoch=0, is_transactional=True, is_control=True)
    assert manager.append(TP, memoryview(bytearray(batch)), -1).error is ErrorCode.INVALID_RECORD
    assert plog.log_end_offset == 0
    logs.shutdown()
