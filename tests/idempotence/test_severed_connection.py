"""confluent-kafka with ``enable.idempotence=true`` through a proxy that severs its connection several times in
the middle of the produce stream: each record is stored exactly once, in order.

Some cuts drop a Produce response after the broker wrote the batch (the producer must retry a batch that is
already in the log: the broker answers with the original offset and writes nothing); others cut a request
half-way (the broker never sees it; the retry is a normal append). The oracle is the partition's content, read
back in full, and the offsets the producer was told.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.harness import BrokerProcess, ck_consume, free_port

from .cutting_proxy import CuttingProxy

pytestmark = pytest.mark.clients

COUNT = 3000


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[BrokerProcess, CuttingProxy]]:
    proxy_port = free_port()
    broker = BrokerProcess(
        data_dir=tmp_path / "data",
        overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}", "num.partitions": "1"},
    )
    broker.start()
    proxy = CuttingProxy(proxy_port, broker.port, cut_requests=(9, 31), cut_responses=(4, 14, 22, 40))
    proxy.start()
    try:
        yield broker, proxy
    finally:
        proxy.stop()
        broker.stop()


def test_idempotent_producer_writes_each_record_once_in_order_across_cut_connections(
    proxied: tuple[BrokerProcess, CuttingProxy],
) -> None:
    from confluent_kafka import Producer

    _broker, proxy = proxied
    bootstrap = f"127.0.0.1:{proxy.listen_port}"
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 2,
            "batch.num.messages": 40,
            "max.in.flight.requests.per.connection": 5,
            "retry.backoff.ms": 20,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 200,
            "message.timeout.ms": 60000,
        }
    )
    delivered: list[tuple[int, bytes]] = []
    errors: list[str] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append((msg.offset(), msg.value()))  # type: ignore[attr-defined]

    values = [f"record-{i:05d}".encode() for i in range(COUNT)]
    for i, value in enumerate(values):
        producer.produce("severed", value=value, partition=0, on_delivery=on_delivery)
        if i % 100 == 99:
            producer.poll(0.01)
    assert producer.flush(60) == 0
    assert not errors, errors[:5]

    assert len(proxy.stats.cut_responses) >= 3 and len(proxy.stats.cut_requests) >= 1, proxy.stats
    assert sorted(delivered) == [(i, v) for i, v in enumerate(values)]
    consumed = ck_consume(bootstrap, "severed", COUNT, timeout=20)
    assert [(c.offset, c.value) for c in consumed] == [(i, v) for i, v in enumerate(values)]
    assert high_watermark(bootstrap, "severed") == COUNT  # and nothing after them


def high_watermark(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    return int(high)
