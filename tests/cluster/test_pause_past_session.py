"""A partition leader paused (SIGSTOP) past its ZooKeeper session: who holds its partitions' writes.

The controller sees the paused broker's session expire (6 s) and moves its leaderships; the brokers that take them
answer at once. What held the writes for the whole pause (15 s of 15 s, issue 28) is the client: librdkafka's
requests to the paused broker stay in flight until ``socket.timeout.ms`` (60 s by default) and it asks for new
metadata only when one fails (its debug log shows no Metadata request during the pause, then a "fast leader query"
when the broker resumes and answers NOT_LEADER_OR_FOLLOWER). Kafka's clients behave the same against Kafka. With
``socket.timeout.ms`` at the session timeout the in-flight requests time out, the client finds the new leaders, and
the paused broker's partitions take writes again within session timeout + 2 s of the pause: what this test holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from tests.cluster.failover import leaders
from tests.cluster.waiting import wait_for

from samsa.cluster.launcher import LocalCluster

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow, pytest.mark.clients]

TOPIC = "paused"
PARTITIONS = 6
SESSION_MS = 6000
PAUSE_S = 15.0


@pytest.fixture
def cluster(tmp_path: Path, zk_connect: str) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path / "cluster",
        zookeeper=zk_connect,
        broker_config={"min.insync.replicas": "2"},
        session_timeout_ms=SESSION_MS,
    )
    local.up(3)
    try:
        yield local
    finally:
        local.down()


def test_a_paused_leaders_partitions_take_writes_within_the_session_and_two_seconds(
    cluster: LocalCluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
    led = wait_for(
        "every partition led",
        lambda: (
            (found := leaders(cluster.broker(1).port, TOPIC))
            and len(found) == PARTITIONS
            and all(b > 0 for b in found.values())
            and found
        ),
    )
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
            "socket.timeout.ms": SESSION_MS,
        }
    )
    acked: dict[int, list[float]] = {p: [] for p in range(PARTITIONS)}
    stop = threading.Event()

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked[msg.partition()].append(time.monotonic())  # type: ignore[attr-defined]

    def write() -> None:
        n = 0
        while not stop.is_set():
            producer.produce(TOPIC, value=b"v", partition=n % PARTITIONS, on_delivery=delivered)
            n += 1
            producer.poll(0.01)
        producer.flush(60)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    victim = led[0]
    theirs = [p for p, broker in led.items() if broker == victim]
    try:
        wait_for("writes acknowledged", lambda: all(len(a) > 10 for a in acked.values()))
        paused_at = time.monotonic()
        cluster.pause(victim)
        time.sleep(PAUSE_S)
        cluster.resume(victim)
        time.sleep(3)
    finally:
        stop.set()
        writer.join(90)
    bound = SESSION_MS / 1000 + 2
    for partition in theirs:
        first = next(t for t in acked[partition] if t > paused_at)
        assert first - paused_at <= bound, (
            f"partition {partition} of paused broker {victim} took a write {first - paused_at:.1f} s after the "
            f"pause (bound {bound:.0f} s)"
        )
