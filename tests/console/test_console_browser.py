"""The console in headless Chromium against a broker started in the test: what the pages show is what the
broker holds (partitions, leader, replicas, ISR, offsets, sizes, configs, segments, consumer lag)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import samsa
from tests.console.browser import cells, row_cells, text, wait_until

NO_VALUE = "\u2013"  # what the page shows for a value it does not have (an en dash)
pytestmark = [pytest.mark.timeout(120), pytest.mark.clients]


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, value=b"v%d" % i, partition=partition)
    assert producer.flush(10) == 0


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit as a consumer of ``group`` that then leaves: its lag is frozen where it stopped."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    consumer.close()


def test_cluster_topic_segments_and_lag_pages(
    samsa_broker: samsa.Broker, console_factory: Any, browser: Any
) -> None:
    samsa_broker.create_topic("orders", partitions=3, config={"retention.ms": "3600000"})
    produce(samsa_broker.bootstrap_servers, "orders", {0: 10, 1: 20, 2: 30})
    commit(samsa_broker.bootstrap_servers, "billing", {("orders", 0): 4, ("orders", 1): 20})
    member = Consumer({"bootstrap.servers": samsa_broker.bootstrap_servers, "group.id": "live"})
    member.subscribe(["orders"])
    wait_until("an assignment", lambda: member.poll(0.2) is None and member.assignment())
    console = console_factory(samsa_broker.bootstrap_servers)

    browser.get(console.url)
    wait_until("the broker row", lambda: cells(browser, "#brokers tr[data-broker='1'] td.state") == ["up"])
    assert text(browser, "#controller") == "1"
    assert text(browser, "#partition-count") == "4"  # orders' 3 and __consumer_offsets' 1
    assert row_cells(browser, "#topics tr[data-topic='orders']")[2] == "3"
    assert row_cells(browser, "#topics tr[data-topic='orders']")[6] == "60"  # messages: end - start
    assert row_cells(browser, "#group-summary tr[data-group='billing']")[3] == "6"  # 10-4 + 20-20

    browser.get(console.url + "#/topic/orders")
    wait_until("the partitions", lambda: len(cells(browser, "#partitions tbody tr")) == 3)
    assert cells(browser, "#partitions td.leader") == ["1", "1", "1"]
    assert cells(browser, "#partitions td.replicas") == ["1", "1", "1"]
    assert cells(browser, "#partitions td.isr") == ["1", "1", "1"]
    assert cells(browser, "#partitions td.end") == ["10", "20", "30"]
    assert row_cells(browser, "#configs tr[data-config='retention.ms']")[1:] == ["3600000", "set"]

    browser.get(console.url + "#/segments/orders/2")
    wait_until("the segments", lambda: cells(browser, "#segments tbody tr"))
    segment = row_cells(browser, "#segments tbody tr")
    assert segment[0] == "0" and segment[1] == "29"  # base offset, last offset

    browser.get(console.url + "#/groups")
    wait_until("the group", lambda: cells(browser, "section[data-group='billing'] td.lag"))
    assert cells(browser, "section[data-group='billing'] td.lag") == ["6", "0"]
    assert text(browser, "section[data-group='billing'] .total-lag") == "6"
    # a live member with its assignment and nothing committed: partitions listed with no lag yet
    wait_until(
        "the live group stable", lambda: text(browser, "section[data-group='live'] .state") == "Stable"
    )
    live_rows = "section[data-group='live'] tr[data-tp]"
    wait_until(
        "its assigned partitions",
        lambda: (
            [r.split()[:3] for r in cells(browser, live_rows)]
            == [["orders", "0", NO_VALUE], ["orders", "1", NO_VALUE], ["orders", "2", NO_VALUE]]
        ),
    )
    member.close()
