"""Operating a cluster: growing it and moving partitions onto new brokers while clients write and read, draining a
broker, cancelling a move, refusing a move onto a broker that does not exist, a throttled move, moves and pending
deletions that outlive their controller, deleting a topic while a broker is down, a topic config change reaching
every broker, and the operator views (partition reports, cluster status, log dirs across brokers).

Real ZooKeeper, real ``samsa serve`` brokers on loopback, real confluent-kafka clients, and ``samsa
reassign-partitions`` run as an operator runs it.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from resends import read_without_resent
from test_replication import Acked, controller_of, create, partitions, read_all, running_cluster, wait_for

from samsa.cli.app import cli
from samsa.client import BrokerError, KafkaClient
from samsa.cluster.launcher import LocalCluster
from samsa.cluster.zk_client import ZkClient
from samsa.topic_partition import TopicPartition

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.clients]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", 4) as local:
        yield local


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


def current_controller(cluster: LocalCluster) -> int | None:
    """The controller's id, None while there is none (a handover)."""
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        return zk.controller()
    finally:
        zk.close()


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
        got, _ = read_without_resent(cluster, topic, read_all(cluster.bootstrap_servers, topic, total))
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
        assert out.splitlines() == [
            "Successfully cancelled partition reassignments for: stay-0",
            "",
            "Clearing broker-level throttles on brokers 1,2,3,4",
            "Clearing topic-level throttles on topic stay",
        ]
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
    code, _out, err = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
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
    producer.close()  # else its metadata requests create "gone" again once deleted (auto-creation)
    holders = {b for _, replicas, _ in partitions(admin, "gone").values() for b in replicas}
    down = max(holders)
    assert replica_dirs(cluster, down, "gone")
    cluster.stop_broker(down)
    admin.delete_topics(["gone"])["gone"].result(30)
    for broker in holders - {down}:
        wait_for(
            f"gone's logs deleted on broker {broker}",
            lambda b=broker: replica_dirs(cluster, b, "gone") == [],
            timeout=60,
        )
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        assert zk.topics_to_delete() == ["gone"]  # held until the broker that is down answers
        cluster.start_broker(down)
        wait_for(
            "gone's logs deleted on the returning broker",
            lambda: replica_dirs(cluster, down, "gone") == [],
            timeout=60,
        )
        wait_for(
            "the deletion finished",
            lambda: not zk.topics_to_delete() and "gone" not in zk.topics(),
            timeout=60,
        )
    finally:
        zk.close()
    create(admin, "gone", 2, 3)  # the name can be used again


def test_pending_deletion_survives_a_controller_change(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    controller = controller_of(cluster)
    x, y, z = sorted({1, 2, 3, 4} - {controller})
    admin.create_topics([NewTopic("doomed", num_partitions=2, replica_assignment=[[x, y, z], [y, z, x]])])[
        "doomed"
    ].result(30)
    wait_for(
        "doomed's leaders",
        lambda: (p := partitions(admin, "doomed")) and all(v[0] >= 0 for v in p.values()),
        timeout=60,
    )
    cluster.stop_broker(z)
    admin.delete_topics(["doomed"])["doomed"].result(30)
    for broker in (x, y):
        wait_for(
            f"doomed deleted on broker {broker}",
            lambda b=broker: replica_dirs(cluster, b, "doomed") == [],
            timeout=60,
        )
    cluster.stop_broker(controller)  # the next controller finds the deletion in ZooKeeper and finishes it
    wait_for("a new controller", lambda: current_controller(cluster) not in (controller, None), timeout=60)
    cluster.start_broker(z)
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        wait_for(
            "the deletion finished",
            lambda: not zk.topics_to_delete() and "doomed" not in zk.topics(),
            timeout=60,
        )
    finally:
        zk.close()
    for broker in (x, y, z):
        wait_for(
            f"no doomed log on broker {broker}",
            lambda b=broker: replica_dirs(cluster, b, "doomed") == [],
            timeout=60,
        )


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


def test_new_partitions_go_where_the_request_places_them(cluster: LocalCluster) -> None:
    """CreatePartitions with replica assignments (kafka-topics --alter --replica-assignment, the Java admin's
    NewPartitions.increaseTo(n, assignments)): the new partitions are led and replicated where it says; an
    assignment of the wrong size, with a broker twice, another replication factor or an unknown broker is
    INVALID_REPLICA_ASSIGNMENT with Kafka's message, and changes nothing."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "grown", 2, 2)
    for placement, message in (
        ([[3, 4]], "Increasing the number of partitions by 2 but 1 assignments provided."),
        ([[3, 3], [4, 1]], "Duplicate brokers not allowed in replica assignment: 3, 3 for partition id 2."),
        ([[3, 4], [4]], "partition 0 has 2 while partitions [3] have replication factors [1]"),
        ([[3, 9], [4, 1]], "Unknown broker(s) in replica assignment: 9."),
    ):
        future = admin.create_partitions([NewPartitions("grown", 4, placement)])["grown"]
        with pytest.raises(KafkaException) as refused:
            future.result(30)
        assert refused.value.args[0].name() == "INVALID_REPLICA_ASSIGNMENT", refused.value
        assert message in refused.value.args[0].str(), refused.value
    assert len(partitions(admin, "grown")) == 2
    admin.create_partitions([NewPartitions("grown", 4, [[3, 4], [4, 1]])])["grown"].result(30)
    wait_for(
        "the new partitions led where they were placed",
        lambda: (
            {p: v[:2] for p, v in partitions(admin, "grown").items() if p >= 2}
            == {2: (3, [3, 4]), 3: (4, [4, 1])}
        ),
        timeout=20,
    )
    exit_code, _, stderr = samsa(
        "topics", "--bootstrap-server", cluster.bootstrap_servers, "--alter", "--topic", "grown", "--partitions",
        "5", "--replica-assignment", "1:2,2:3,3:4,4:1,2:1",
    )  # fmt: skip
    assert exit_code == 0, stderr
    wait_for(
        "the CLI's partition placed",
        lambda: partitions(admin, "grown").get(4, ())[:2] == (2, [2, 1]),
        timeout=20,
    )


def samsa(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def throttles(admin: AdminClient, topic: str) -> dict[str, str]:
    """The topic's replication throttle configs that are set."""
    resource = ConfigResource("topic", topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return {k: v.value for k, v in entries.items() if "throttled" in k and v.value}


def test_throttled_move_is_reported_and_its_throttles_cleared(cluster: LocalCluster, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("slow", num_partitions=1, replica_assignment=[[1, 2]])])["slow"].result(30)
    wait_for("slow's leader", lambda: (p := partitions(admin, "slow")) and p[0][0] >= 0)
    producer = Acked(cluster.bootstrap_servers, "slow")
    for _ in range(40):
        producer.send(50)
        producer.producer.flush(30)
    payload = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for _ in range(2000):  # 2 MB to copy
        payload.produce("slow", b"p" * 1000)
    assert payload.flush(60) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "slow", "partition": 0, "replicas": [3, 1]}]})
    )
    code, out, err = reassign(
        cluster, "--execute", "--reassignment-json-file", str(plan), "--throttle", "20000"
    )
    assert code == 0, err
    assert "The inter-broker throttle limit was set to 20000 B/s" in out
    assert throttles(admin, "slow") == {
        "leader.replication.throttled.replicas": "0:1,0:2",
        "follower.replication.throttled.replicas": "0:3",
    }
    time.sleep(2)  # past the first 1 MB fetch, 1 MB more at 20 kB/s takes 50 s: still copying
    code, out, _ = reassign(cluster, "--list")
    assert out.splitlines()[1:] == ["slow-0: replicas: 3,1,2. adding: 3. removing: 2."]
    code, out, _ = samsa(
        "topics",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--describe",
        "--topic",
        "slow",
        "--under-replicated-partitions",
    )
    assert code == 0
    assert out.splitlines() == [
        "\tTopic: slow\tPartition: 0\tLeader: 1\tReplicas: 3,1,2\tIsr: 1,2\tAdding Replicas: 3\tRemoving Replicas: 2"
        "\tElr: N/A\tLastKnownElr: N/A"
    ]
    code, out, _ = samsa(
        "topics", "--bootstrap-server", cluster.bootstrap_servers, "--describe", "--topic", "slow"
    )
    assert "\tReplicationFactor: 2\t" in out.splitlines()[0]
    code, out, _ = samsa("cluster", "status", "--dir", str(cluster.directory))
    assert "moving slow-0: adding 3, removing 2" in out

    # the same move again, with a throttle high enough to finish it now
    code, out, err = reassign(
        cluster,
        "--execute",
        "--reassignment-json-file",
        str(plan),
        "--additional",
        "--throttle",
        "1000000000",
    )
    assert code == 0, err

    def verified() -> str | None:
        _, out, _ = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
        return out if "is completed." in out else None

    out = wait_for("the move completed", verified, timeout=60)
    assert out.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition slow-0 is completed.",
        "",
        "Clearing broker-level throttles on brokers 1,2,3,4",
        "Clearing topic-level throttles on topic slow",
    ]
    assert throttles(admin, "slow") == {}
    got = read_all(cluster.bootstrap_servers, "slow", 4000)
    assert [v for v in got[0] if not v.startswith(b"p")] == producer.acked[0]
    assert len(got[0]) == 4000


def test_partition_reports_and_log_dirs_across_brokers(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics(
        [
            NewTopic("solo", num_partitions=1, replica_assignment=[[4]]),
            NewTopic(
                "pair", num_partitions=1, replica_assignment=[[3, 4]], config={"min.insync.replicas": "2"}
            ),
            NewTopic("fine", num_partitions=1, replica_assignment=[[1, 2]]),
        ]
    )["pair"].result(30)
    for topic in ("solo", "pair", "fine"):
        wait_for(f"{topic}'s leader", lambda t=topic: (p := partitions(admin, t)) and p[0][0] >= 0)
    code, out, _ = samsa("log-dirs", "--bootstrap-server", cluster.bootstrap_servers, "--describe")
    assert code == 0
    described = json.loads(out.splitlines()[-1])
    held = {
        b["broker"]: sorted(
            p["partition"] for d in b["logDirs"] for p in d["partitions"] if "__" not in p["partition"]
        )
        for b in described["brokers"]
    }
    assert held == {1: ["fine-0"], 2: ["fine-0"], 3: ["pair-0"], 4: ["pair-0", "solo-0"]}

    cluster.stop_broker(4)
    wait_for("pair without broker 4", lambda: partitions(admin, "pair")[0][2] == [3])

    def report(option: str) -> list[str]:
        code, out, err = samsa(
            "topics",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--describe",
            "--exclude-internal",
            option,
        )
        assert code == 0, err
        return sorted(out.splitlines())

    assert report("--under-replicated-partitions") == [
        "\tTopic: pair\tPartition: 0\tLeader: 3\tReplicas: 3,4\tIsr: 3\tElr: N/A\tLastKnownElr: N/A",
    ]
    assert report("--unavailable-partitions") == [
        "\tTopic: solo\tPartition: 0\tLeader: none\tReplicas: 4\tIsr: 4\tElr: N/A\tLastKnownElr: N/A",
    ]
    assert report("--under-min-isr-partitions") == [
        "\tTopic: pair\tPartition: 0\tLeader: 3\tReplicas: 3,4\tIsr: 3\tElr: N/A\tLastKnownElr: N/A",
        "\tTopic: solo\tPartition: 0\tLeader: none\tReplicas: 4\tIsr: 4\tElr: N/A\tLastKnownElr: N/A",
    ]
    code, out, _ = samsa("log-dirs", "--bootstrap-server", cluster.bootstrap_servers, "--describe")
    assert out.splitlines()[1] == "Received log directory information from brokers 1,2,3"


def test_move_survives_a_controller_change(cluster: LocalCluster, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    controller = controller_of(cluster)
    x, y, z = sorted({1, 2, 3, 4} - {controller})
    admin.create_topics([NewTopic("moved", num_partitions=1, replica_assignment=[[x, y]])])["moved"].result(
        30
    )
    wait_for("moved's leader", lambda: (p := partitions(admin, "moved")) and p[0][0] == x)
    producer = Acked(cluster.broker(x).address, "moved", **{"linger.ms": 20})
    for _ in range(20):
        producer.send(100)
        producer.producer.poll(0)
    producer.flush()
    filler = Producer({"bootstrap.servers": cluster.broker(x).address, "acks": "all"})
    for _ in range(2000):
        filler.produce("moved", b"f" * 1000)
    assert filler.flush(60) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "moved", "partition": 0, "replicas": [z, x]}]})
    )
    code, _, err = reassign(
        cluster, "--execute", "--reassignment-json-file", str(plan), "--throttle", "10000", via=x
    )
    assert code == 0, err
    cluster.kill(controller)  # the move is in ZooKeeper: the next controller carries it on
    wait_for("a new controller", lambda: current_controller(cluster) not in (controller, None), timeout=30)
    expected = [f"moved-0: replicas: {z},{x},{y}. adding: {z}. removing: {y}."]
    wait_for(  # once the new controller has loaded the move from ZooKeeper (its failover may still be running)
        "the new controller to list the move",
        lambda: reassign(cluster, "--list", via=x)[1].splitlines()[1:] == expected,
        timeout=30,
    )

    async def unthrottle() -> None:
        async with KafkaClient(cluster.broker(x).address) as client:
            rates = {
                str(b): {
                    "leader.replication.throttled.rate": None,
                    "follower.replication.throttled.rate": None,
                }
                for b in (x, y, z)
            }
            assert not any((await client.incremental_alter_configs(rates, resource_type=4)).values())

    asyncio.run(unthrottle())
    wait_for(
        "the move completed by the new controller",
        lambda: (
            "is completed." in reassign(cluster, "--verify", "--reassignment-json-file", str(plan), via=x)[1]
        ),
        timeout=60,
    )
    found = partitions(admin, "moved")[0]
    assert found[1] == [z, x] and sorted(found[2]) == sorted([z, x])
    wait_for("the removed replica deleted", lambda: replica_dirs(cluster, y, "moved") == [])
    got = read_all(cluster.broker(x).address, "moved", 4000)[0]
    assert len(got) == 4000
    assert [v for v in got if not v.startswith(b"f")] == producer.acked[0]


def test_a_drained_broker_can_be_retired(cluster: LocalCluster, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "kept", 4, 2)
    producer = Acked(cluster.bootstrap_servers, "kept")
    producer.send(1000)
    producer.flush()
    assert any(4 in replicas for _, replicas, _ in partitions(admin, "kept").values())
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": "kept"}], "version": 1}))
    code, out, err = reassign(
        cluster, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2,3"
    )
    assert code == 0, err
    plan = tmp_path / "plan.json"
    plan.write_text(out.splitlines()[4])
    code, _, err = reassign(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert code == 0, err
    wait_for(
        "kept moved off broker 4",
        lambda: (
            reassign(cluster, "--verify", "--reassignment-json-file", str(plan))[1].count("is completed.")
            == 4
        ),
    )
    wait_for("broker 4 holding nothing of kept", lambda: replica_dirs(cluster, 4, "kept") == [])
    cluster.stop_broker(4)  # retired: every partition keeps its full ISR
    found = partitions(admin, "kept")
    assert all(4 not in replicas and sorted(isr) == sorted(replicas) for _, replicas, isr in found.values())
    producer.send(1000)
    producer.flush()
    assert not producer.errors
    assert read_all(cluster.bootstrap_servers, "kept", 2000) == producer.acked
