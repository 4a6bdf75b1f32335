"""The follower's side of the replication throttle: a move throttled only where the new replica fetches copies at
about ``follower.replication.throttled.rate``, while the same fetcher keeps its unthrottled partitions in step, and
``samsa reassign-partitions --verify`` lifts the throttle once the move is done.

Real ZooKeeper, real ``samsa serve`` brokers, real confluent-kafka clients; the bytes copied are measured on the new
replica's log dir as the copy runs.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from test_replication import partitions, wait_for

from samsa.cli.app import cli
from samsa.client.sync import SyncClient
from samsa.cluster.launcher import LocalCluster
from samsa.cluster.zk_client import ZkClient

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow, pytest.mark.clients]

RATE = 1_000_000  # B/s
SIZE = 4_000_000  # the throttled copy: about 4 s at RATE
FETCH_MAX = 262_144  # replica.fetch.max.bytes: the throttle's step
BROKER_RESOURCE = 4


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path / "cluster",
        broker_config={"replica.lag.time.max.ms": "5000", "replica.fetch.max.bytes": str(FETCH_MAX)},
    )
    local.up(3)
    try:
        yield local
    finally:
        local.down()


def log_size(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> int:
    directory = cluster.directory / f"broker-{broker_id}" / "data" / f"{topic}-{partition}"
    return sum(p.stat().st_size for p in directory.glob("*.log"))


def fill(cluster: LocalCluster, topic: str, size: int) -> int:
    """``size`` bytes of 1000-byte values into partition 0; the leader's log size after."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for _ in range(size // 1000):
        producer.produce(topic, b"v" * 1000, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    return log_size(cluster, 1, topic, 0)


def reassign(cluster: LocalCluster, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["reassign-partitions", "--bootstrap-server", cluster.bootstrap_servers, *args]
    )
    return result.exit_code, result.stdout, result.stderr


def move(cluster: LocalCluster, tmp_path: Path, topic: str, replicas: list[int]) -> Path:
    plan = tmp_path / f"{topic}.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]})
    )
    code, _, err = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert code == 0, err
    return plan


def follower_rate(broker_out: Path) -> str | None:
    """The follower replication rate the broker applied last, as its log says."""
    lines = [line for line in broker_out.read_text().splitlines() if "replication throttle as leader" in line]
    return lines[-1].rsplit("as follower ", 1)[1] if lines else None


def copied_by(cluster: LocalCluster, broker_id: int, topic: str, size: int) -> tuple[float, float]:
    """(first byte, last byte) times of ``topic``-0's copy onto ``broker_id``, polled every 20 ms."""
    first = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now, copied = time.monotonic(), log_size(cluster, broker_id, topic, 0)
        if copied and first is None:
            first = now
        if copied >= size:
            assert first is not None
            return first, now
        time.sleep(0.02)
    raise AssertionError(f"{topic}-0 not copied onto broker {broker_id} within 60 s")


class Steady(threading.Thread):
    """acks=all writes to a partition that broker 3 follows from broker 1 (the throttled move's fetcher), one
    every 50 ms, keeping each write's time to acknowledgement."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
        self.latencies: list[tuple[float, float]] = []  # (sent at, seconds to acknowledgement)
        self.failed = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            sent = time.monotonic()

            def done(error: object, _: object, sent: float = sent) -> None:
                if error is None:
                    self.latencies.append((sent, time.monotonic() - sent))
                else:
                    self.failed += 1

            self.producer.produce("steady", b"s", partition=0, on_delivery=done)
            self.producer.poll(0.05)
        self.producer.flush(30)


def test_follower_throttle_alone_paces_a_move_and_verify_lifts_it(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for topic, replicas in (("moving", [1]), ("steady", [1, 3]), ("again", [1])):
        admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[replicas])])[topic].result(
            30
        )
        wait_for(f"{topic}'s leader", lambda t=topic: (p := partitions(admin, t)) and p[0][0] == 1)
    size = fill(cluster, "moving", SIZE)
    again = fill(cluster, "again", SIZE // 2)
    with SyncClient(cluster.bootstrap_servers) as client:
        # the follower's side only: its list names the new replica, its rate is set on that broker alone
        assert not any(
            client.incremental_alter_configs(
                {
                    "moving": {"follower.replication.throttled.replicas": "0:3"},
                    "again": {"follower.replication.throttled.replicas": "*"},
                }
            ).values()
        )
        assert not any(
            client.incremental_alter_configs(
                {"3": {"follower.replication.throttled.rate": str(RATE)}}, resource_type=BROKER_RESOURCE
            ).values()
        )
    out = cluster.directory / "broker-3" / "broker.out"
    wait_for("broker 3 applying its rate", lambda: follower_rate(out) == f"{RATE} B/s")
    steady = Steady(cluster.bootstrap_servers)
    steady.start()
    time.sleep(1)  # steady's replica in step before the move starts

    started = time.monotonic()
    plan = move(cluster, tmp_path, "moving", [1, 3])
    _, finished = copied_by(cluster, 3, "moving", size)
    elapsed = finished - started
    print(f"throttled copy: {size} B in {elapsed:.2f} s = {size / elapsed:.0f} B/s (rate {RATE} B/s)")
    steady.stop.set()
    steady.join(30)
    assert elapsed >= 0.6 * size / RATE, f"{size} B copied in {elapsed:.2f} s: not throttled to {RATE} B/s"
    assert elapsed < 4 * size / RATE
    # the same fetcher kept the unthrottled partition in step: every write acknowledged by both replicas, promptly
    during = [latency for sent, latency in steady.latencies if started <= sent <= finished]
    assert steady.failed == 0 and len(during) > 20
    print(
        f"steady acks=all during the copy: median {statistics.median(during) * 1000:.0f} ms, "
        f"max {max(during) * 1000:.0f} ms"
    )
    assert statistics.median(during) < 0.1 and max(during) < 1.5
    assert partitions(admin, "steady")[0][2] == [1, 3]

    def verified() -> str | None:
        out = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))[1]
        return out if "is completed." in out else None

    out_text = wait_for("the move completed and verified", verified)
    assert "Clearing broker-level throttles on brokers 1,2,3" in out_text
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        assert zk.broker_config("3") == {}
        assert "follower.replication.throttled.replicas" not in zk.topic_config("moving")
    finally:
        zk.close()
    wait_for("broker 3 lifting its rate", lambda: follower_rate(out) == "off")
    # "again" still names every replica as throttled, but no broker has a rate any more: it copies at full speed
    move(cluster, tmp_path, "again", [1, 3])
    first, last = copied_by(cluster, 3, "again", again)
    assert last - first < 0.6 * again / RATE, f"{again} B copied in {last - first:.2f} s: still throttled"
