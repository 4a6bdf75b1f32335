"""Operating a cluster: growing it and moving partitions onto new brokers, cancelling a move, refusing a move onto
a broker that does not exist, deleting a topic while a broker is down, a topic config change reaching every broker.

Real ZooKeeper, real ``samsa serve`` brokers on loopback, real confluent-kafka clients, and ``samsa
reassign-partitions`` run as an operator runs it.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from samsa.cli.app import cli
from samsa.client import BrokerError, KafkaClient
from samsa.cluster.local import LocalCluster
from samsa.cluster.zk_client import ZkClient
from samsa.topic_partition import TopicPartition

from test_replication import Acked, controller_of, create, partitions, read_all, wait_for

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.clients]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path / "cluster",
        broker_config={"replica.lag.time.max.ms": "2000", "log.flush.interval.messages": "1"},
    )
    local.up(4)
    try:
        yield local
    finally:
        local.down()


def reassign(cluster: LocalCluster, *args: str, via: int | None = None) -> tuple[int, str, str]:
    bootstrap = cluster.broker(via).address if via is not None else cluster.bootstrap_servers
    result = CliRunner().invoke(cli, ["reassign-partitions", "--bootstrap-server", bootstrap, *args])
    return result.exit_code, result.stdout, result.stderr


def replica_dirs(cluster: LocalCluster, broker_id: int, topic: str) -> list[str]:
    """The broker's live logs of ``topic`` (a deleted one is renamed ``<topic>-<p>.<id>-delete`` first)."""
    data = cluster.directory / f"broker-{broker_id}" / "data"
    return sorted(
        p.name for p in data.glob(f"{topic}-*") if p.is_dir() and re.fullmatch(rf"{topic}-\d+", p.name)
    )


class Reader(threading.Thread):
    """A consumer in a group reading ``topic`` until stopped, keeping each partition's values in order."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.got: dict[int, list[bytes]] = {}
        self.stop = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "movers",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
            }
        )
        self.consumer.subscribe([topic])

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                message = self.consumer.poll(0.2)
                if message is not None and not message.error():
                    self.got.setdefault(message.partition(), []).append(message.value())
        finally:
            self.consumer.close()


def test_grown_cluster_takes_partitions_while_clients_write_and_read(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "two", 6, 2, **{"min.insync.replicas": "1"})
    create(admin, "three", 6, 3, **{"min.insync.replicas": "2"})
    producers = {t: Acked(cluster.bootstrap_servers, t) for t in ("two", "three")}
    reader = Reader(cluster.bootstrap_servers, "three")
    reader.start()
    for producer in producers.values():
        producer.send(2000)
    added = [cluster.add_broker(), cluster.add_broker()]
    assert added == [5, 6]

    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": "two"}, {"topic": "three"}], "version": 1}))
    code, out, err = reassign(
        cluster, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2,3,4,5,6"
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(proposed))

    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            for producer in producers.values():
                producer.send(50, pause=0.001)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    code, out, err = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert code == 0, err
    assert out.splitlines()[0] == "Current partition replica assignment"
    assert "Successfully started partition reassignments for " in out

    def verified() -> bool:
        code, out, _ = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
        return code == 0 and "still in progress" not in out and out.count("is completed.") == 12

    wait_for("every move completed", verified, timeout=120)
    stop.set()
    writer.join(30)
    for producer in producers.values():
        producer.flush()
        assert not producer.errors, producer.errors[:5]

    # the new placement is the proposed one, and balanced: each broker holds 2 + 3 replicas and is the preferred
    # leader of 2 partitions (leaders stay where they were when still in the target, until a preferred election)
    want = {(p["topic"], p["partition"]): p["replicas"] for p in proposed["partitions"]}
    placed: Counter[int] = Counter()
    preferred: Counter[int] = Counter()
    for topic in ("two", "three"):
        found = wait_for(
            f"{topic} on its new replicas",
            lambda t=topic: (
                (p := partitions(admin, t))
                and all(
                    sorted(v[1]) == sorted(want[(t, n)]) and sorted(v[2]) == sorted(want[(t, n)])
                    for n, v in p.items()
                )
                and p
            ),
        )
        for leader, replicas, _ in found.values():
            placed.update(replicas)
            preferred[replicas[0]] += 1
            assert leader in replicas
    assert placed == {b: 5 for b in range(1, 7)}
    assert preferred == {b: 2 for b in range(1, 7)}
    for topic in ("two", "three"):  # replicas moved away were deleted
        for broker in range(1, 7):
            held = {f"{topic}-{n}" for (t, n), r in want.items() if t == topic and broker in r}
            wait_for(
                f"broker {broker} holding only its {topic} replicas",
                lambda b=broker, t=topic, h=held: set(replica_dirs(cluster, b, t)) == h,
            )

    # every acknowledged record is there, in order, once; the group consumer saw them in order too
    for topic, producer in producers.items():
        total = sum(len(v) for v in producer.acked.values())
        got = read_all(cluster.bootstrap_servers, topic, total)
        assert got == producer.acked, f"{topic}: lost, duplicated or reordered records"
    total = sum(len(v) for v in producers["three"].acked.values())
    wait_for("the group consumer caught up", lambda: sum(len(v) for v in reader.got.values()) >= total, 60)
    reader.stop.set()
    reader.join(30)
    for partition, values in producers["three"].acked.items():
        seen = list(dict.fromkeys(reader.got.get(partition, [])))  # a rebalance may re-deliver, never reorder
        assert seen == values


def test_cancelled_move_returns_to_the_old_replicas(cluster: LocalCluster, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "stay", 1, 2)
    old = partitions(admin, "stay")[0][1]
    producer = Acked(cluster.bootstrap_servers, "stay")
    producer.send(500)
    producer.flush()
    controller = controller_of(cluster)
    spare = next(b for b in (1, 2, 3, 4) if b not in old and b != controller)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": "stay", "partition": 0, "replicas": [spare, old[0]]}]}
        )
    )
    cluster.pause(spare)  # registered, but it cannot copy: the move stays in progress
    try:
        code, out, err = reassign(cluster, "--execute", "--reassignment-json-file", str(plan), via=old[0])
        assert code == 0, err
        code, out, _ = reassign(cluster, "--list", via=old[0])
        assert out.splitlines() == [
            "Current partition reassignments:",
            f"stay-0: replicas: {spare},{old[0]},{old[1]}. adding: {spare}. removing: {old[1]}.",
        ]
        code, out, _ = reassign(cluster, "--verify", "--reassignment-json-file", str(plan), via=old[0])
        assert "Reassignment of partition stay-0 is still in progress." in out
        code, out, err = reassign(cluster, "--cancel", "--reassignment-json-file", str(plan), via=old[0])
        assert code == 0, err
        assert out.strip() == "Successfully cancelled partition reassignments for: stay-0"
    finally:
        cluster.resume(spare)
    code, out, _ = reassign(cluster, "--list", via=old[0])
    assert out.strip() == "No partition reassignments found."
    wait_for(
        "the old replicas back",
        lambda: (
            (p := partitions(admin, "stay"))
            and sorted(p[0][1]) == sorted(old)
            and sorted(p[0][2]) == sorted(old)
        ),
    )
    wait_for("the cancelled replica deleted", lambda: replica_dirs(cluster, spare, "stay") == [])
    code, out, _ = reassign(cluster, "--verify", "--reassignment-json-file", str(plan), via=old[0])
    assert "There is no active reassignment of partition stay-0, but replica set is" in out
    assert read_all(cluster.bootstrap_servers, "stay", 500) == producer.acked


def test_move_onto_a_broker_that_does_not_exist_is_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "here", 2, 2)
    before = partitions(admin, "here")
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "here", "partition": 0, "replicas": [1, 9]}]})
    )
    code, out, err = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert code == 1
    assert "Unknown broker id(s): 9" in err

    async def direct() -> BrokerError | None:  # the controller refuses it too, when asked directly
        async with KafkaClient(cluster.bootstrap_servers) as client:
            tp = TopicPartition("here", 0)
            return (await client.alter_partition_reassignments({tp: [1, 9]}))[tp]

    error = asyncio.run(direct())
    assert error is not None and error.name == "INVALID_REPLICA_ASSIGNMENT"
    assert partitions(admin, "here") == before


def test_deletion_reaches_a_broker_that_was_down(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "gone", 4, 3)
    producer = Acked(cluster.bootstrap_servers, "gone")
    producer.send(400)
    producer.flush()
    holders = {b for _, replicas, _ in partitions(admin, "gone").values() for b in replicas}
    down = max(holders)
    assert replica_dirs(cluster, down, "gone")
    cluster.stop_broker(down)
    admin.delete_topics(["gone"])["gone"].result(30)
    for broker in holders - {down}:
        wait_for(
            f"gone's logs deleted on broker {broker}", lambda b=broker: replica_dirs(cluster, b, "gone") == []
        )
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        assert zk.topics_to_delete() == ["gone"]  # held until the broker that is down answers
        cluster.start_broker(down)
        wait_for(
            "gone's logs deleted on the returning broker", lambda: replica_dirs(cluster, down, "gone") == []
        )
        wait_for("the deletion finished", lambda: not zk.topics_to_delete() and "gone" not in zk.topics())
    finally:
        zk.close()
    create(admin, "gone", 2, 3)  # the name can be used again


def test_topic_config_change_reaches_every_broker(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "sized", 4, 2)
    leaders = {v[0] for v in partitions(admin, "sized").values()}
    assert len(leaders) >= 3
    resource = ConfigResource(
        "topic",
        "sized",
        incremental_configs=[
            ConfigEntry("max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "retries": 0})

    def every_leader_refuses() -> bool:  # a record over the new limit, on every partition
        errors: dict[int, int] = {}

        def report(error: KafkaError | None, message: Any) -> None:
            errors[message.partition()] = error.code() if error is not None else 0

        for partition in range(4):
            producer.produce("sized", b"x" * 5000, partition=partition, on_delivery=report)
        producer.flush(30)
        return errors == {p: KafkaError.MSG_SIZE_TOO_LARGE for p in range(4)}

    wait_for("every broker applying the new max.message.bytes", every_leader_refuses, timeout=20)
