"""confluent-kafka's cooperative-sticky assignor and static membership (``group.instance.id``) through the broker:
the assignor's bytes pass untouched, and a static member that restarts within its session timeout gets its
partitions back without the other member being rebalanced."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
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
    """A confluent-kafka consumer in the group that records what its rebalance callbacks were given."""

    def __init__(
        self,
        bootstrap: str,
        instance: str | None,
        strategy: str = "cooperative-sticky",
        session_timeout_ms: int = 10000,
    ) -> None:
        from confluent_kafka import Consumer

        self.owned: set[int] = set()
        self.callbacks = 0
        self.revoked: list[set[int]] = []
        self.records = 0
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "partition.assignment.strategy": strategy,
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": 500,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if instance is not None:
            config["group.instance.id"] = instance
        self.consumer = Consumer(config)
        self.consumer.subscribe([TOPIC], on_assign=self._assign, on_revoke=self._revoke)

    def _assign(self, consumer: Any, partitions: list[Any]) -> None:
        self.callbacks += 1
        self.owned |= {p.partition for p in partitions}

    def _revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self.callbacks += 1
        self.revoked.append({p.partition for p in partitions})
        self.owned -= {p.partition for p in partitions}

    def poll(self, timeout: float) -> None:
        message = self.consumer.poll(timeout)
        if message is not None and message.error() is None:
            self.records += 1

    def unsubscribe(self) -> None:
        self.consumer.unsubscribe()

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonMember:
    """The same for kafka-python (its ``group_instance_id`` and ``CooperativeStickyAssignor``). The consumer polls on
    a thread of its own, as an application runs it: kafka-python joins a group only inside ``poll``, so members
    polled one after another on one thread would keep each other's joins waiting; and a poll that ends in the
    middle of a join makes it join again, so each poll is given time for a whole JoinGroup and SyncGroup."""

    def __init__(self, bootstrap: str, instance: str | None, session_timeout_ms: int = 10000) -> None:
        import queue
        import threading

        self.owned: set[int] = set()
        self.callbacks = 0
        self.revoked: list[set[int]] = []
        self.records = 0
        self._actions: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(
            target=self._run, args=(bootstrap, instance, session_timeout_ms), daemon=True
        )
        self._thread.start()

    def _run(self, bootstrap: str, instance: str | None, session_timeout_ms: int) -> None:
        import queue

        from kafka import ConsumerRebalanceListener, KafkaConsumer
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                member.callbacks += 1
                member.revoked.append({tp.partition for tp in revoked})
                member.owned -= {tp.partition for tp in revoked}

            def on_partitions_assigned(self, assigned: Any) -> None:
                member.callbacks += 1
                member.owned |= {tp.partition for tp in assigned}

        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=GROUP,
            group_instance_id=instance,
            partition_assignment_strategy=[CooperativeStickyAssignor],
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=500,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        consumer.subscribe([TOPIC], listener=Listener())
        subscribed = True
        while True:
            try:
                action = self._actions.get_nowait()
            except queue.Empty:
                action = ""
            if action == "close":
                consumer.close()
                return
            if action == "unsubscribe":
                consumer.unsubscribe()
                subscribed = False
            if subscribed:
                batches = consumer.poll(timeout_ms=1000)  # room for a whole join: see the class doc
                self.records += sum(len(records) for records in batches.values())
            else:
                time.sleep(0.05)

    def poll(self, timeout: float) -> None:
        time.sleep(timeout)  # the member's own thread polls

    def unsubscribe(self) -> None:
        self._actions.put("unsubscribe")

    def close(self) -> None:
        self._actions.put("close")
        self._thread.join(30)


AnyMember = Member | KafkaPythonMember
MEMBER_KINDS = ["confluent-kafka", "kafka-python"]


def new_member(kind: str, bootstrap: str, instance: str | None, session_timeout_ms: int = 10000) -> AnyMember:
    if kind == "kafka-python":
        return KafkaPythonMember(bootstrap, instance, session_timeout_ms=session_timeout_ms)
    return Member(bootstrap, instance, session_timeout_ms=session_timeout_ms)


def pump(members: Sequence[AnyMember], until: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            m.poll(0.05)
        if until():
            return
    raise AssertionError("timed out")


def settle(members: Sequence[AnyMember], seconds: float = 2.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for m in members:
            m.poll(0.05)


def test_cooperative_sticky_static_member_restarts_without_moving_partitions(broker: BrokerProcess) -> None:
    a = Member(broker.bootstrap, "static-a")
    b = Member(broker.bootstrap, "static-b")
    try:
        pump([a, b], lambda: len(a.owned) == 3 and len(b.owned) == 3)
        assert a.owned | b.owned == set(range(6))
        settle([a, b])  # the cooperative protocol's follow-up rebalance ends with more callbacks
        before_a, before_b = set(a.owned), set(b.owned)
        callbacks_a = a.callbacks
        b.close()  # a static member sends no LeaveGroup: its partitions wait for it
        b2 = Member(broker.bootstrap, "static-b")
        try:
            pump([a, b2], lambda: bool(b2.owned))
            settle([a, b2])
            assert b2.owned == before_b
            assert a.owned == before_a
            assert a.callbacks == callbacks_a, "the other member was not rebalanced"
        finally:
            b2.close()
    finally:
        a.close()


def test_static_member_restart_under_eager_range_revokes_nothing_elsewhere(broker: BrokerProcess) -> None:
    a = Member(broker.bootstrap, "eager-a", strategy="range")
    b = Member(broker.bootstrap, "eager-b", strategy="range")
    try:
        pump([a, b], lambda: len(a.owned) == 3 and len(b.owned) == 3)
        settle([a, b])
        before_a, before_b, revokes_a = set(a.owned), set(b.owned), len(a.revoked)
        b.close()
        b2 = Member(broker.bootstrap, "eager-b", strategy="range")
        try:
            pump([a, b2], lambda: bool(b2.owned))
            settle([a, b2])
            assert (a.owned, b2.owned) == (before_a, before_b)
            assert len(a.revoked) == revokes_a, f"member a saw a revoke: {a.revoked[revokes_a:]}"
        finally:
            b2.close()
    finally:
        a.close()


@pytest.mark.parametrize("kind", MEMBER_KINDS)
def test_static_member_leaving_rebalances_only_when_its_session_expires(
    broker: BrokerProcess, kind: str
) -> None:
    session_ms = 6000
    a = new_member(kind, broker.bootstrap, "leave-a", session_timeout_ms=session_ms)
    b = new_member(kind, broker.bootstrap, "leave-b", session_timeout_ms=session_ms)
    try:
        pump([a, b], lambda: len(a.owned) == 3 and len(b.owned) == 3)
        settle([a, b])
        before_a, callbacks_a, revokes_a = set(a.owned), a.callbacks, len(a.revoked)
        closed_at = time.monotonic()
        b.close()  # no LeaveGroup from a static member
        settle([a], seconds=session_ms / 1000 * 0.6)
        assert (a.owned, a.callbacks) == (before_a, callbacks_a), "rebalanced before the session expired"
        pump([a], lambda: a.owned == set(range(6)), timeout=30)
        # the session runs from the last heartbeat, at most one heartbeat interval (0.5 s) before the close
        assert time.monotonic() - closed_at >= (session_ms - 500) / 1000
        assert all(not r for r in a.revoked[revokes_a:]), "a cooperative member keeps what it had"
    finally:
        a.close()


@pytest.mark.parametrize("kind", MEMBER_KINDS)
def test_cooperative_member_unsubscribing_revokes_only_its_own_partitions(
    broker: BrokerProcess, kind: str
) -> None:
    from confluent_kafka import Producer

    members = [new_member(kind, broker.bootstrap, None) for _ in range(3)]
    a, b, c = members
    try:
        pump(members, lambda: all(len(m.owned) == 2 for m in members))
        settle(members)
        before = {id(m): set(m.owned) for m in (a, b)}
        revokes = {id(m): len(m.revoked) for m in (a, b)}
        leaving = set(c.owned)
        c.unsubscribe()  # a dynamic member leaves the group (LeaveGroup)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for p in range(6):
            for i in range(20):
                producer.produce(TOPIC, b"v%d" % i, partition=p)
        producer.flush(10)
        pump([a, b], lambda: a.owned | b.owned == set(range(6)))
        pump([a, b], lambda: a.records + b.records == 120)
        for m in (a, b):
            assert before[id(m)] <= m.owned, "kept every partition it had"
            assert all(not r for r in m.revoked[revokes[id(m)] :]), f"revoked {m.revoked[revokes[id(m)] :]}"
        assert (a.owned - before[id(a)]) | (b.owned - before[id(b)]) == leaving
    finally:
        for m in members:
            m.close()


def test_kafka_python_static_member_restarts_without_moving_partitions(broker: BrokerProcess) -> None:
    a = KafkaPythonMember(broker.bootstrap, "kp-a")
    b = KafkaPythonMember(broker.bootstrap, "kp-b")
    try:
        pump([a, b], lambda: len(a.owned) == 3 and len(b.owned) == 3)
        settle([a, b])
        before_a, before_b, callbacks_a = set(a.owned), set(b.owned), a.callbacks
        b.close()  # kafka-python sends no LeaveGroup for a static member
        b2 = KafkaPythonMember(broker.bootstrap, "kp-b")
        try:
            pump([a, b2], lambda: bool(b2.owned))
            settle([a, b2])
            assert (a.owned, b2.owned) == (before_a, before_b)
            assert a.callbacks == callbacks_a, "the other member was not rebalanced"
        finally:
            b2.close()
    finally:
        a.close()
