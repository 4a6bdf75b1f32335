"""Idempotence on the wire, against a ``samsa serve`` process: InitProducerId, a retried batch answered with its
original offset, a sequence gap (OUT_OF_ORDER_SEQUENCE_NUMBER, 45), a stale epoch (INVALID_PRODUCER_EPOCH, 47), and
the same answers after a clean restart and after kill -9 (state rebuilt from snapshots and the log)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from samsa.protocol import ApiKey
from samsa.protocol.errors import ErrorCode
from samsa.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from samsa.protocol.messages.init_producer_id import InitProducerIdRequest
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.records import build_batch
from tests.clients.harness import BrokerProcess, ck_consume, running_broker
from tests.embedded.wire import WireClient


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory.mktemp("idempotence")) as proc:
        yield proc


def create_topic(wire: WireClient, name: str) -> None:
    request = CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)])
    response = wire.call(ApiKey.CREATE_TOPICS, 5, request)
    assert response.topics[0].error_code == ErrorCode.NONE


def init_producer_id(wire: WireClient, version: int = 4) -> tuple[int, int]:
    response = wire.call(
        ApiKey.INIT_PRODUCER_ID,
        version,
        InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000),
    )
    assert response.error_code == ErrorCode.NONE
    return response.producer_id, response.producer_epoch


def produce(wire: WireClient, topic: str, pid: int, epoch: int, seq: int, count: int = 2) -> tuple[int, int]:
    """(error code, base offset) of one batch of ``count`` records carrying ``pid``, ``epoch`` and ``seq``."""
    values = [f"{topic}-{pid}-{epoch}-{seq + i}".encode() for i in range(count)]
    # a real timestamp: a producer whose last batch is older than producer.id.expiration.ms is forgotten
    batch = build_batch(
        values, producer_id=pid, producer_epoch=epoch, base_sequence=seq, timestamp=int(time.time() * 1000)
    )
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])
        ],
    )
    response = wire.call(ApiKey.PRODUCE, 9, request)
    partition = response.responses[0].partition_responses[0]
    return partition.error_code, partition.base_offset


@pytest.mark.parametrize("version", range(0, 5))
def test_init_producer_id_hands_out_fresh_ids_at_epoch_zero(broker: BrokerProcess, version: int) -> None:
    with WireClient(broker.bootstrap) as wire:
        first, second = init_producer_id(wire, version), init_producer_id(wire, version)
    assert first[1] == second[1] == 0
    assert first[0] != second[0] and min(first[0], second[0]) >= 0


def test_a_retried_batch_gets_its_original_offset_and_is_stored_once(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as wire:
        create_topic(wire, "retried")
        pid, epoch = init_producer_id(wire)
        assert produce(wire, "retried", pid, epoch, 0) == (ErrorCode.NONE, 0)
        assert produce(wire, "retried", pid, epoch, 2) == (ErrorCode.NONE, 2)
        assert produce(wire, "retried", pid, epoch, 0) == (ErrorCode.NONE, 0)
        assert produce(wire, "retried", pid, epoch, 2) == (ErrorCode.NONE, 2)
        assert produce(wire, "retried", pid, epoch, 4) == (ErrorCode.NONE, 4)
    values = [c.value for c in ck_consume(broker.bootstrap, "retried", 6, timeout=5)]
    assert values == [f"retried-{pid}-0-{i}".encode() for i in range(6)]


def test_a_sequence_gap_is_out_of_order(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as wire:
        create_topic(wire, "gap")
        pid, epoch = init_producer_id(wire)
        assert produce(wire, "gap", pid, epoch, 0) == (ErrorCode.NONE, 0)
        assert produce(wire, "gap", pid, epoch, 3)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
        assert produce(wire, "gap", pid, epoch, 2) == (ErrorCode.NONE, 2)


def test_a_stale_epoch_is_fenced(broker: BrokerProcess) -> None:
    with WireClient(broker.bootstrap) as wire:
        create_topic(wire, "fenced")
        pid, _ = init_producer_id(wire)
        assert produce(wire, "fenced", pid, 0, 0) == (ErrorCode.NONE, 0)
        assert produce(wire, "fenced", pid, 1, 0) == (ErrorCode.NONE, 2)  # the producer bumped its epoch
        assert produce(wire, "fenced", pid, 0, 2)[0] == ErrorCode.INVALID_PRODUCER_EPOCH == 47
        assert (
            produce(wire, "fenced", pid, 2, 5)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        )  # new epoch: seq 0
        assert produce(wire, "fenced", pid, 1, 2) == (ErrorCode.NONE, 4)


@pytest.mark.parametrize("how", ["clean", "kill -9"])
def test_a_retry_after_a_restart_is_still_a_duplicate(tmp_path: Path, how: str) -> None:
    proc = BrokerProcess(data_dir=tmp_path / "data", overrides={"log.segment.bytes": "1024"})
    proc.start()
    try:
        with WireClient(proc.bootstrap) as wire:
            create_topic(wire, "restart")
            pid, epoch = init_producer_id(wire)
            offsets = [produce(wire, "restart", pid, epoch, 2 * i)[1] for i in range(30)]
        assert offsets == list(range(0, 60, 2))
        if how == "clean":
            assert proc.stop() == 0
        else:
            proc.kill()
        proc.start()
        with WireClient(proc.bootstrap) as wire:
            assert produce(wire, "restart", pid, epoch, 58) == (ErrorCode.NONE, 58)
            if how == "kill -9":  # replayed from the last roll snapshot: older retries are recognised too
                assert produce(wire, "restart", pid, epoch, 56) == (ErrorCode.NONE, 56)
            assert produce(wire, "restart", pid, epoch, 62)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert produce(wire, "restart", pid, epoch, 60) == (ErrorCode.NONE, 60)
        snapshots = sorted((tmp_path / "data" / "restart-0").glob("*.snapshot"))
        assert snapshots and all(len(p.name) == len("00000000000000000000.snapshot") for p in snapshots)
    finally:
        proc.stop()
