"""confluent-kafka's cooperative-sticky assignor and static membership (``group.instance.id``) through the broker:
the assignor's bytes pass untouched, and a static member that restarts within its session timeout gets its
partitions back without the other member being rebalanced."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.harness import BrokerProcess

TOPIC = "coop"
GROUP = "coop-group"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(data_dir=tmp_path / "data")
    proc.start()
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 6)])[TOPIC].result(20)
    yield proc
    proc.stop()


class Member:
    def __init__(self, bootstrap: str, instance: str) -> None:
        from confluent_kafka import Consumer

        self.owned: set[int] = set()
        self.callbacks = 0
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "group.instance.id": instance,
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([TOPIC], on_assign=self._assign, on_revoke=self._revoke)

    def _assign(self, consumer: Any, partitions: list[Any]) -> None:
        self.callbacks += 1
        self.owned |= {p.partition for p in partitions}

    def _revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self.callbacks += 1
        self.owned -= {p.partition for p in partitions}


def pump(members: list[Member], until: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            m.consumer.poll(0.05)
        if until():
            return
    raise AssertionError("timed out")


def settle(members: list[Member], seconds: float = 2.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for m in members:
            m.consumer.poll(0.05)


def test_cooperative_sticky_static_member_restarts_without_moving_partitions(broker: BrokerProcess) -> None:
    a = Member(broker.bootstrap, "static-a")
    b = Member(broker.bootstrap, "static-b")
    try:
        pump([a, b], lambda: len(a.owned) == 3 and len(b.owned) == 3)
        assert a.owned | b.owned == set(range(6))
        settle([a, b])  # the cooperative protocol's follow-up rebalance ends with more callbacks
        before_a, before_b = set(a.owned), set(b.owned)
        callbacks_a = a.callbacks
        b.consumer.close()  # a static member sends no LeaveGroup: its partitions wait for it
        b2 = Member(broker.bootstrap, "static-b")
        try:
            pump([a, b2], lambda: bool(b2.owned))
            settle([a, b2])
            assert b2.owned == before_b
            assert a.owned == before_a
            assert a.callbacks == callbacks_a, "the other member was not rebalanced"
        finally:
            b2.consumer.close()
    finally:
        a.consumer.close()
