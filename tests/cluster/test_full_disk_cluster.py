"""A full disk in a cluster: ZooKeeper and three ``samsa serve`` processes, one broker's log dir on a small tmpfs,
filled while an idempotent acks=all producer writes (min.insync.replicas=2).

When the full broker leads, it asks the controller (a log dir event, as Kafka's broker writes for a failed log dir)
to move its leaderships to in-sync followers: producers carry on there instead of waiting for space. The full
broker stays their follower, says its failed appends once a minute, and rejoins every ISR by itself once space is
freed. Not one acknowledged record is lost or moved. Needs root (to mount the tmpfs); skipped otherwise.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from test_replication import IDEMPOTENT_ACKS_ALL
from tests.cluster.waiting import wait_for
from tests.small_disk import fill, small_tmpfs

from samsa.cluster.launcher import LocalCluster
from samsa.cluster.zk_client import ZkClient

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.clients]

TOPIC = "filling"
PARTITIONS = 3
FULL = 1  # the broker whose disk fills: every partition's preferred leader


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    directory = tmp_path / "cluster"
    with small_tmpfs(directory / f"broker-{FULL}" / "data", 16):
        local = LocalCluster(
            directory,
            broker_config={
                "replica.lag.time.max.ms": "2000",
                "log.segment.bytes": str(1024 * 1024),
                "offsets.topic.num.partitions": "3",
            },
        )
        try:
            local.up(3)
            yield local
        finally:
            local.down()


class Writer(threading.Thread):
    """An idempotent acks=all producer at a steady rate: every acknowledged value and where it was stored."""

    def __init__(self, bootstrap: str, partitions: int = PARTITIONS) -> None:
        super().__init__(daemon=True)
        self.partitions = partitions
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, **IDEMPOTENT_ACKS_ALL, "retry.backoff.ms": 100}
        )
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed = 0
        self.last_ack = time.monotonic()
        self.halt = threading.Event()

    def on_delivery(self, err: object, msg: object) -> None:
        if err is not None:
            self.failed += 1
            return
        self.acked[msg.value()] = (msg.partition(), msg.offset())  # type: ignore[attr-defined]
        self.last_ack = time.monotonic()

    def run(self) -> None:
        serial = 0
        while not self.halt.is_set():
            serial += 1
            value = f"{serial:09d}".encode().ljust(500, b".")
            try:
                self.producer.produce(
                    TOPIC, value=value, partition=serial % self.partitions, on_delivery=self.on_delivery
                )
            except BufferError:
                self.producer.poll(0.1)
                continue
            self.producer.poll(0)
            time.sleep(0.0025)  # about 400 records a second
        self.producer.flush(60)

    def stop(self) -> None:
        self.halt.set()
        self.join(90)


def states(zk: ZkClient) -> dict[int, tuple[int, tuple[int, ...]]]:
    """partition -> (leader, ISR) as ZooKeeper holds them."""
    found = {}
    for p in range(PARTITIONS):
        state = zk.partition_state(TOPIC, p)
        assert state is not None
        found[p] = (state[0].leader, tuple(sorted(state[0].isr)))
    return found


def read_all(bootstrap: str, expect: int, partitions: int = PARTITIONS) -> dict[tuple[int, int], bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen: dict[tuple[int, int], bytes] = {}
    deadline, idle = time.monotonic() + 60, 0
    try:
        while time.monotonic() < deadline and (len(seen) < expect or idle < 4):
            batch = consumer.consume(num_messages=5000, timeout=0.5)
            idle = 0 if batch else idle + 1
            for msg in batch:
                assert not msg.error(), msg.error()
                assert (msg.partition(), msg.offset()) not in seen, "an offset read twice"
                seen[(msg.partition(), msg.offset())] = msg.value()
    finally:
        consumer.close()
    return seen


def test_a_leader_whose_disk_fills_hands_its_leaderships_to_in_sync_followers(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(
        TOPIC,
        num_partitions=PARTITIONS,
        replication_factor=-1,
        replica_assignment=[[FULL, 2, 3], [FULL, 3, 2], [FULL, 2, 3]],
        config={"min.insync.replicas": "2"},
    )
    admin.create_topics([topic])[TOPIC].result(30)
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    writer = Writer(cluster.bootstrap_servers)
    disk = cluster.directory / f"broker-{FULL}" / "data"
    try:
        wait_for(
            "the preferred leaders", lambda: all(s == (FULL, (1, 2, 3)) for s in states(zk).values()), 30
        )
        space = fill(disk / "ballast", leave=3 * 1024 * 1024)
        writer.start()

        # the disk fills; the leaderships move and producers carry on with the two brokers left in the ISRs
        wait_for(
            "a full disk", lambda: os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize < 256 * 1024, 60
        )
        wait_for(
            "the leaderships moved off the full broker",
            lambda: all(leader != FULL and FULL not in isr for leader, isr in states(zk).values()),
            30,
        )
        acked_when_moved = len(writer.acked)
        time.sleep(5)
        assert len(writer.acked) > acked_when_moved + 500, "producers did not carry on with the new leaders"
        assert time.monotonic() - writer.last_ack < 2

        # space freed: the full broker catches up and rejoins every ISR by itself
        space.unlink()
        wait_for(
            "the full broker rejoining the ISRs",
            lambda: all(FULL in isr for _, isr in states(zk).values()),
            90,
        )
        writer.stop()
        assert writer.failed == 0

        seen = read_all(cluster.bootstrap_servers, len(writer.acked))
        by_value = {value: where for where, value in seen.items()}
        lost = [v for v in writer.acked if v not in by_value]
        moved = [v for v, where in writer.acked.items() if v in by_value and by_value[v] != where]
        assert not lost and not moved, f"{len(lost)} acknowledged records lost, {len(moved)} moved"
        log = (cluster.directory / f"broker-{FULL}" / "broker.out").read_text()
        assert "asking the controller to move this broker's leaderships" in log
        refused = [line for line in log.splitlines() if "No space left" in line and "replica of" in line]
        assert len(refused) <= 2 * PARTITIONS, refused[:5]  # a follower's failed appends: once a minute each
        assert "Traceback" not in log
    finally:
        if writer.is_alive():
            writer.stop()
        zk.close()


def test_a_broker_elected_leader_on_a_full_disk_takes_its_followers_back_once_they_return(
    cluster: LocalCluster,
) -> None:
    """The in-sync broker with the full disk is the only one left to lead: it takes the leadership (its new epoch's
    checkpoint comes out of the space reserve) instead of being left half a leader, and once the others return
    and space is freed they rejoin its ISR and acks=all writes go on."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(
        TOPIC,
        num_partitions=1,
        replication_factor=-1,
        replica_assignment=[[2, 3, FULL]],
        config={"min.insync.replicas": "2"},
    )
    admin.create_topics([topic])[TOPIC].result(30)
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    disk = cluster.directory / f"broker-{FULL}" / "data"

    def state() -> tuple[int, tuple[int, ...]]:
        found = zk.partition_state(TOPIC, 0)
        assert found is not None
        return found[0].leader, tuple(sorted(found[0].isr))

    try:
        wait_for("a full ISR", lambda: state() == (2, (1, 2, 3)), 30)
        first = Writer(cluster.bootstrap_servers, partitions=1)
        first.start()
        wait_for("some records", lambda: len(first.acked) >= 500, 30)
        first.stop()
        wait_for("a full ISR", lambda: state() == (2, (1, 2, 3)), 30)
        space = fill(disk / "ballast")
        assert cluster.stop_broker(2) == 0 and cluster.stop_broker(3) == 0
        wait_for("the full broker leading", lambda: state() == (FULL, (FULL,)), 30)
        space.unlink()
        cluster.start_broker(2)
        cluster.start_broker(3)
        wait_for("the others back in its ISR", lambda: state() == (FULL, (1, 2, 3)), 60)
        second = Writer(cluster.bootstrap_servers, partitions=1)
        second.start()
        wait_for("acks=all writes going on", lambda: len(second.acked) >= 500, 30)
        second.stop()
        assert first.failed == 0 and second.failed == 0
        acked = {**first.acked, **second.acked}
        seen = read_all(cluster.bootstrap_servers, len(acked), partitions=1)
        by_value = {value: where for where, value in seen.items()}
        assert all(by_value.get(v) == where for v, where in acked.items()), (
            "acknowledged records lost or moved"
        )
        log = (cluster.directory / f"broker-{FULL}" / "broker.out").read_text()
        assert "space reserve" in log and "Traceback" not in log
    finally:
        zk.close()
