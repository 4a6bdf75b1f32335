"""AllocateProducerIds (KIP-730) on the controller: Kafka's ZooKeeper-mode brokers (``inter.broker.protocol.version``
3.0 and later) ask the controller for their producer id blocks instead of writing ``/latest_producer_id_block``
themselves; a Samsa controller takes them from that znode, as Kafka's does, so the blocks never overlap the ones
Samsa's brokers take directly (a mixed cluster, ``tests/apache_kafka/test_mixed_cluster.py``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

import samsa
from samsa.client import SyncClient
from samsa.cluster import znodes
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.allocate_producer_ids import AllocateProducerIdsRequest


@pytest.fixture
def controller(zk_connect: str, tmp_path: Path) -> Iterator[tuple[samsa.Broker, KazooClient]]:
    with samsa.Broker(
        log_dir=tmp_path / "data",
        config={"zookeeper.connect": zk_connect, "node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0"},
    ) as broker:
        zk = KazooClient(zk_connect)
        zk.start(timeout=10)
        try:
            yield broker, zk
        finally:
            zk.stop()


def allocate(broker: samsa.Broker, broker_id: int, broker_epoch: int) -> object:
    with SyncClient(broker.bootstrap_servers) as client:
        return client.send(
            AllocateProducerIdsRequest(broker_id=broker_id, broker_epoch=broker_epoch),
            api_key=ApiKey.ALLOCATE_PRODUCER_IDS,
            version=0,
        )


def test_the_controller_hands_out_blocks_from_the_znode_kafka_uses(
    controller: tuple[samsa.Broker, KazooClient],
) -> None:
    broker, zk = controller
    _, stat = zk.get(znodes.broker_path(1))
    epoch = stat.czxid  # the broker epoch, as Kafka's brokers send it
    deadline = time.monotonic() + 10
    while (first := allocate(broker, 1, epoch)).error_code == ErrorCode.NOT_CONTROLLER:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "broker 1 never became the controller"
        time.sleep(0.1)
    second = allocate(broker, 1, epoch)
    starts = [first.producer_id_start, second.producer_id_start]  # type: ignore[attr-defined]
    assert [first.error_code, second.error_code] == [ErrorCode.NONE, ErrorCode.NONE]  # type: ignore[attr-defined]
    assert first.producer_id_len == second.producer_id_len == 1000  # type: ignore[attr-defined]
    assert starts[1] == starts[0] + 1000
    stored = znodes.ProducerIdBlock.from_json(zk.get(znodes.PRODUCER_ID_BLOCK)[0])
    assert stored is not None and (stored.broker_id, stored.block_start) == (1, starts[1])

    stale = allocate(broker, 1, epoch - 1)
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH  # type: ignore[attr-defined]
    unknown = allocate(broker, 7, epoch)
    assert unknown.error_code == ErrorCode.STALE_BROKER_EPOCH  # type: ignore[attr-defined]
