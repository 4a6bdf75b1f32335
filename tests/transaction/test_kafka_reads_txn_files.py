"""Kafka's own ``DumpLogSegments`` (4.4) reads what Samsa writes for transactions: the ``.txnindex`` entries (each
aborted transaction with its first and last offset and the LSO after it) and the COMMIT/ABORT control records with
their coordinator epoch. Skipped when Kafka's jars are not in the cache (``make kafka-jars``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from samsa.clock import ManualClock
from samsa.records import Record, build_batch
from samsa.records.batch import build_end_txn_marker_batch
from samsa.records.control import ControlRecordType, EndTransactionMarker
from samsa.storage.config import LogConfig
from samsa.storage.log import Log

DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"


def _jars() -> object:
    try:
        from tests.apache_kafka.jars import KAFKA_4, KafkaJars, jar_dir
    except ImportError:
        pytest.skip("tests.apache_kafka is not importable")
    if not (jar_dir(KAFKA_4) / ".complete").exists():
        pytest.skip(f"Kafka {KAFKA_4} jars not fetched (make kafka-jars)")
    return KafkaJars(KAFKA_4, jar_dir(KAFKA_4))


def test_dump_log_reads_txnindex_and_markers(tmp_path: Path) -> None:
    jars = _jars()
    clock = ManualClock(1_700_000_000_000)
    log = Log.open(tmp_path / "t-0", LogConfig(), clock)
    sequences: dict[int, int] = {}

    def data(pid: int, count: int) -> None:
        seq = sequences.get(pid, 0)
        records = [Record(i, clock.milliseconds(), None, b"v") for i in range(count)]
        batch = build_batch(
            records, producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True
        )
        log.append_as_leader(bytearray(batch))
        sequences[pid] = seq + count

    def end(pid: int, commit: bool) -> None:
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        marker = EndTransactionMarker(kind, 5)
        log.append_as_leader(
            bytearray(build_end_txn_marker_batch(marker, producer_id=pid, producer_epoch=0, timestamp=1))
        )

    data(7, 2)  # 0-1
    data(8, 1)  # 2: open while 7 aborts, so the LSO after 7's abort is 2
    end(7, commit=False)  # 3
    data(7, 1)  # 4
    end(8, commit=True)  # 5
    end(7, commit=False)  # 6
    log.close()
    directory = tmp_path / "t-0"
    index = jars.run(DUMP_LOG, "--files", str(directory / "00000000000000000000.txnindex")).stdout  # type: ignore[attr-defined]
    entries = re.findall(
        r"version: (\d+) producerId: (\d+) firstOffset: (\d+) lastOffset: (\d+) lastStableOffset: (\d+)",
        index,
    )
    assert entries == [("0", "7", "0", "3", "2"), ("0", "7", "4", "6", "7")], index
    records = jars.run(
        DUMP_LOG, "--deep-iteration", "--files", str(directory / "00000000000000000000.log")
    ).stdout  # type: ignore[attr-defined]
    markers = re.findall(r"offset: (\d+) .*endTxnMarker: (\w+) coordinatorEpoch: (\d+)", records)
    assert markers == [("3", "ABORT", "5"), ("5", "COMMIT", "5"), ("6", "ABORT", "5")], records
