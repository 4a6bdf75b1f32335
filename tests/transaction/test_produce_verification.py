"""KIP-890 part 1 on one ``samsa serve``: a transactional batch for a partition its transaction never added is
refused with INVALID_TXN_STATE and nothing is written (no open transaction appears to hold the LSO back); once
AddPartitionsToTxn added the partition the same batch is taken; a request without a transactional id is not
verified (as in Kafka). The check is on by default, as in Kafka; ``transaction.partition.verification.enable=false``
turns it off."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.protocol import ErrorCode
from samsa.protocol.messages import add_partitions_to_txn as ap
from samsa.protocol.messages.init_producer_id import InitProducerIdRequest
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.records import Record, build_batch
from tests.badinput.wire import Connection
from tests.clients.harness import BrokerProcess
from tests.transaction.test_read_committed import _latest

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(data_dir=tmp_path_factory.mktemp("samsa-verify"))
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def _topic(proc: BrokerProcess) -> str:
    name = f"v-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)
    return name


def _init(conn: Connection, tid: str) -> tuple[int, int]:
    deadline = time.monotonic() + 20
    while True:
        answer = conn.request(
            22, 4, InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000)
        )
        if answer.error_code == 0 or time.monotonic() > deadline:
            assert answer.error_code == 0, answer
            return answer.producer_id, answer.producer_epoch
        time.sleep(0.1)


def _produce(conn: Connection, topic: str, tid: str | None, pid: int, epoch: int) -> int:
    batch = build_batch(
        [Record(0, int(time.time() * 1000), None, b"v")],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=0,
        is_transactional=True,
    )
    request = ProduceRequest(
        transactional_id=tid,
        acks=-1,
        timeout_ms=5000,
        topic_data=[TopicProduceData(topic, [PartitionProduceData(0, batch)])],
    )
    return int(conn.request(0, 9, request).responses[0].partition_responses[0].error_code)


def _add(conn: Connection, topic: str, tid: str, pid: int, epoch: int) -> None:
    request = ap.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[ap.AddPartitionsToTxnTopic(topic, [0])],
    )
    answer = conn.request(24, 3, request)
    assert answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0


def test_a_partition_not_added_is_refused_and_nothing_written(broker: BrokerProcess) -> None:
    topic = _topic(broker)
    tid = f"t-{uuid.uuid4().hex[:6]}"
    with Connection(broker.port) as conn:
        pid, epoch = _init(conn, tid)
        assert _produce(conn, topic, tid, pid, epoch) == ErrorCode.INVALID_TXN_STATE
        assert _latest(broker.port, topic, 0) == 0  # nothing written
        assert _latest(broker.port, topic, 1) == 0  # and no open transaction holds readers back
        _add(conn, topic, tid, pid, epoch)
        assert _produce(conn, topic, tid, pid, epoch) == ErrorCode.NONE
        assert _latest(broker.port, topic, 0) == 1
        assert _latest(broker.port, topic, 1) == 0  # open now, as it should be
        other = f"t-{uuid.uuid4().hex[:6]}"
        stray_pid, stray_epoch = _init(conn, other)
        assert _produce(conn, topic, None, stray_pid, stray_epoch) == ErrorCode.NONE  # no id: not verified


def test_verification_can_be_turned_off(tmp_path: Path) -> None:
    proc = BrokerProcess(
        data_dir=tmp_path / "data", overrides={"transaction.partition.verification.enable": "false"}
    )
    proc.start()
    try:
        topic = _topic(proc)
        tid = f"t-{uuid.uuid4().hex[:6]}"
        with Connection(proc.port) as conn:
            pid, epoch = _init(conn, tid)
            assert _produce(conn, topic, tid, pid, epoch) == ErrorCode.NONE
    finally:
        proc.stop()
