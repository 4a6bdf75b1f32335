"""The console over a 3-broker ZooKeeper cluster in headless Chromium: replicas and ISR as the cluster assigned
them, and the pages follow a broker that goes away (shown down, its leaderships moved, ISR shrunk)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import samsa
from tests.cluster.conftest import zk_connect, zookeeper  # noqa: F401 (fixtures)
from tests.console.browser import cells, text, wait_until

pytestmark = [pytest.mark.timeout(180), pytest.mark.clients, pytest.mark.xdist_group("cluster")]


def start_broker(zk: str, node_id: int) -> samsa.Broker:
    return samsa.Broker(
        config={
            "zookeeper.connect": zk,
            "zookeeper.session.timeout.ms": "6000",
            "node.id": str(node_id),
            "offsets.topic.replication.factor": "3",
        }
    ).start_in_thread()


@pytest.fixture
def cluster(zk_connect: str) -> Iterator[dict[int, samsa.Broker]]:  # noqa: F811
    brokers = {node_id: start_broker(zk_connect, node_id) for node_id in (1, 2, 3)}
    try:
        yield brokers
    finally:
        for broker in brokers.values():
            broker.stop_thread()


def describe(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    found = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    if found.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in found.partitions.values()}


def test_replicas_isr_and_a_broker_going_down(
    cluster: dict[int, samsa.Broker], console_factory: Any, browser: Any
) -> None:
    bootstrap = ",".join(b.bootstrap_servers for b in cluster.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})
    victim = next(node for node in cluster if node != _controller(bootstrap))
    admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result(30)
    admin.create_topics([NewTopic("solo", num_partitions=1, replica_assignment=[[victim]])])["solo"].result(
        30
    )
    expected = wait_until(
        "the topic's full ISR",
        lambda: (d := describe(bootstrap, "orders")) and all(len(v[2]) == 3 for v in d.values()) and d,
    )
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(30):
        producer.produce("orders", value=b"v%d" % i, partition=i % 3)
    assert producer.flush(30) == 0
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "enable.auto.commit": False})
    committer.commit(offsets=[KafkaTopicPartition("orders", p, 2 + p) for p in range(3)], asynchronous=False)
    committer.close()
    console = console_factory(bootstrap)

    browser.get(console.url + "#/groups")  # the group is found on its coordinator, wherever that is
    wait_until(
        "the group's lag", lambda: cells(browser, "section[data-group='billing'] td.lag") == ["8", "7", "6"]
    )

    browser.get(console.url + "#/topic/orders")
    wait_until("three partitions", lambda: len(cells(browser, "#partitions tbody tr")) == 3, timeout=30)
    wait_until(
        "the cluster's assignment",
        lambda: (
            cells(browser, "#partitions td.replicas")
            == [",".join(map(str, expected[p][1])) for p in range(3)]
        ),
    )
    assert cells(browser, "#partitions td.leader") == [str(expected[p][0]) for p in range(3)]

    cluster[victim].stop_thread()

    wait_until(
        "no leader on the stopped broker",
        lambda: all(leader not in (str(victim), "") for leader in cells(browser, "#partitions td.leader")),
        timeout=30,
    )
    wait_until(
        "the ISR without it",
        lambda: all(str(victim) not in isr.split(",") for isr in cells(browser, "#partitions td.isr")),
        timeout=30,
    )
    assert set(cells(browser, "#partitions td.status")) == {"under-replicated"}

    browser.get(console.url)
    wait_until(
        "the broker shown down",
        lambda: cells(browser, f"#brokers tr[data-broker='{victim}'] td.state") == ["down"],
    )
    assert text(browser, "#brokers-up") == "2 / 3"
    wait_until(
        "under-replicated partitions counted", lambda: int(text(browser, "#under-replicated-count")) >= 3
    )
    assert cells(browser, "#under-replicated tr[data-tp='orders-0'] td")
    # the partition whose only replica was on it has no leader: offline, shown as such
    assert cells(browser, "#offline tr[data-tp='solo-0'] td")[2:] == ["none", str(victim), str(victim)]
    assert int(text(browser, "#offline-count")) == 1

    browser.get(console.url + "#/topic/solo")
    wait_until("the offline partition", lambda: cells(browser, "#partitions td.status"))
    assert cells(browser, "#partitions td.leader") == ["none"]
    assert cells(browser, "#partitions td.status")[0].startswith("offline")


def test_brokers_that_stop_answering_metadata(
    cluster: dict[int, samsa.Broker], console_factory: Any, browser: Any
) -> None:
    """Every broker hangs on Metadata: the page says so; then one answers again: the console finds it (whichever
    broker its connection was on, one of the two phases moves it off a hanging one)."""
    bootstrap = ",".join(b.bootstrap_servers for b in cluster.values())
    console = console_factory(bootstrap)
    browser.get(console.url)
    wait_until("three brokers up", lambda: text(browser, "#brokers-up") == "3 / 3", timeout=30)
    try:
        for answering in (1, 2):
            for broker in cluster.values():
                broker.clear_injections()
                broker.inject_delay("Metadata", 30.0, count=None)
            wait_until(
                "the error line",
                lambda: text(browser, "#cluster-error").startswith("no broker answered Metadata"),
            )
            cluster[answering].clear_injections()
            wait_until(
                f"a picture through broker {answering}",
                lambda: not cells(browser, "#cluster-error") and text(browser, "#brokers-up") == "3 / 3",
                timeout=40,
            )
    finally:
        for broker in cluster.values():
            broker.clear_injections()


def _controller(bootstrap: str) -> int:
    return int(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).controller_id)
