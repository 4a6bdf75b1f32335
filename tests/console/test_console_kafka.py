"""The console against Apache Kafka itself (KRaft, Kafka 4's jars): it uses the Kafka protocol only, and reads
the segments Kafka wrote with ``--log-dirs``."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.apache_kafka.conftest import kafka4  # noqa: F401 (fixture)
from tests.apache_kafka.jars import KafkaJars
from tests.apache_kafka.kafka_broker import KafkaBroker
from tests.console.browser import wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.xdist_group("kafka"), pytest.mark.timeout(180)]


@pytest.fixture
def kafka(kafka4: KafkaJars, tmp_path: Path) -> Iterator[KafkaBroker]:  # noqa: F811
    broker = KafkaBroker(kafka4, tmp_path / "kafka")
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_console_reads_apache_kafka(kafka: KafkaBroker, console_factory: Any) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})  # kept: its futures die with it
    admin.create_topics([NewTopic("orders", 3, 1)])["orders"].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(30):
        producer.produce("orders", value=b"v%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": kafka.bootstrap, "group.id": "billing", "enable.auto.commit": False}
    )
    consumer.commit(offsets=[TopicPartition("orders", 0, 4)], asynchronous=False)
    consumer.close()
    console = console_factory(kafka.bootstrap, log_dirs=[kafka.log_dir])

    cluster = wait_until("Kafka's picture", lambda: (c := get(console.url + "api/cluster"))["groups"] and c)
    assert cluster["error"] is None
    assert [(b["id"], b["up"]) for b in cluster["brokers"]] == [(1, True)]
    assert cluster["controller"] >= 0  # KRaft: Metadata names a broker as controller, not the quorum
    [orders] = [t for t in cluster["topics"] if t["name"] == "orders"]
    assert (orders["partitions"], orders["messages"]) == (3, 30)
    topic = get(console.url + "api/topic?name=orders")
    assert [(p["leader"], p["replicas"], p["isr"], p["log_end_offset"]) for p in topic["partitions"]] == [
        (1, [1], [1], 10)
    ] * 3
    assert all(p["size"] > 0 for p in topic["partitions"])
    assert any(c["name"] == "retention.ms" for c in topic["configs"])
    segments = get(console.url + "api/segments?topic=orders&partition=1")
    assert segments["available"] is True
    [segment] = segments["replicas"][0]["segments"]
    assert (segment["base_offset"], segment["last_offset"]) == (0, 9)
    [group] = get(console.url + "api/groups")["groups"]
    assert group["group_id"] == "billing" and group["lag"] == 6
