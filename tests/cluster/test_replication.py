"""Replication on a real cluster: ZooKeeper and three ``samsa serve`` processes on loopback, driven by real clients.

What each test shows: acks=all records reach every replica byte for byte; every acknowledged record survives
``kill -9`` of a leader and then of the controller, read back once and in order; a paused follower leaves the ISR
and comes back; ``min.insync.replicas`` refuses acks=all while too few replicas are in sync; and a former leader
that holds records nobody else has truncates them when it returns, ending identical to the new leader.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from resends import read_without_resent
from tests.cluster.waiting import wait_for

from samsa.cluster.launcher import LocalCluster
from samsa.cluster.zk_client import ZkClient
from samsa.coordinator.offsets_topic import partition_for

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.clients]


QUICK_ISR = {"replica.lag.time.max.ms": "2000", "log.flush.interval.messages": "1"}


@contextlib.contextmanager
def running_cluster(
    directory: Path, brokers: int, config: Mapping[str, str] | None = None
) -> Iterator[LocalCluster]:
    """``brokers`` brokers and their ZooKeeper, quick to shrink an ISR (``QUICK_ISR``, then ``config``), stopped
    after: the cluster fixture of these modules."""
    local = LocalCluster(directory, broker_config={**QUICK_ISR, **(config or {})})
    local.up(brokers)
    try:
        yield local
    finally:
        local.down()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", 3) as local:
        yield local


def partitions(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, isr) as the metadata says."""
    found = admin.list_topics(topic, timeout=10).topics[topic]
    if found.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), sorted(p.isrs)) for p in found.partitions.values()}


def create(admin: AdminClient, topic: str, count: int, rf: int, **config: str) -> None:
    admin.create_topics([NewTopic(topic, count, rf, config=config)])[topic].result(60)
    wait_for(
        f"leaders of {topic}",
        lambda: (p := partitions(admin, topic)) and len(p) == count and all(v[0] >= 0 for v in p.values()),
    )


def controller_of(cluster: LocalCluster) -> int:
    zk = ZkClient(cluster.zookeeper_connect)
    zk.start()
    try:
        controller = zk.controller()
    finally:
        zk.close()
    assert controller is not None
    return controller


def log_bytes(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> bytes:
    directory = cluster.directory / f"broker-{broker_id}" / "data" / f"{topic}-{partition}"
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


def read_all(
    bootstrap: str, topic: str, expected: int, timeout: float = 60.0, partitions: int | None = None
) -> dict[int, list[bytes]]:
    """Every record of ``topic`` from the start, by partition in offset order: through a consumer group, or with
    ``partitions`` assigned directly (no group coordinator needed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    if partitions is None:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[bytes]] = {}
    deadline = time.monotonic() + timeout
    try:
        while sum(len(v) for v in got.values()) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            got.setdefault(message.partition(), []).append(message.value())
        idle = time.monotonic() + 2  # anything beyond what was expected (duplicates) shows up too
        while time.monotonic() < idle:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                got.setdefault(message.partition(), []).append(message.value())
    finally:
        consumer.close()
    return got


IDEMPOTENT_ACKS_ALL = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "message.timeout.ms": 120_000,
}
"""The producer the cluster tests write with: what they check is that nothing it was told is stored gets lost."""


class Acked:
    """A confluent-kafka producer (idempotent, acks=all) that remembers what was acknowledged, per partition."""

    def __init__(self, bootstrap: str, topic: str, **config: Any) -> None:
        self.topic = topic
        self.acked: dict[int, list[bytes]] = {}
        self.errors: list[str] = []
        self.sent = 0
        self.producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT_ACKS_ALL, **config})

    def _report(self, error: Any, message: Any) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            self.acked.setdefault(message.partition(), []).append(message.value())

    def send(self, count: int, pause: float = 0.0) -> None:
        for _ in range(count):
            value = f"{self.sent:08d}".encode()
            self.producer.produce(self.topic, value, key=value, on_delivery=self._report)
            self.sent += 1
            self.producer.poll(0)
            if pause:
                time.sleep(pause)

    def flush(self, timeout: float = 120.0) -> None:
        assert self.producer.flush(timeout) == 0, "records left unacknowledged"

    def close(self) -> None:
        """Stop the producer: one left running asks again for the metadata of a topic deleted under it, and a
        broker with ``auto.create.topics.enable`` (the default) creates the topic again, as Kafka does."""
        self.producer.close()


def test_acks_all_reaches_every_replica_byte_for_byte(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "copies", 6, 3)
    producer = Acked(cluster.bootstrap_servers, "copies")
    producer.send(3000)
    producer.flush()
    assert not producer.errors
    state = wait_for(
        "full ISRs",
        lambda: (p := partitions(admin, "copies")) and all(v[2] == [1, 2, 3] for v in p.values()) and p,
    )
    assert sorted(leader for leader, _, _ in state.values()) == [1, 1, 2, 2, 3, 3]
    got = read_all(cluster.bootstrap_servers, "copies", 3000)
    assert got == producer.acked  # each record once, in the order acknowledged
    for partition in range(6):  # followers hold the leader's batches unchanged: the same bytes
        wait_for(
            f"replicas of copies-{partition} alike",
            lambda p=partition: len({log_bytes(cluster, b, "copies", p) for b in (1, 2, 3)}) == 1,
        )
        assert log_bytes(cluster, 1, "copies", partition)


def test_no_acknowledged_record_lost_when_the_leader_then_the_controller_is_killed(
    cluster: LocalCluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "kills", 3, 3, **{"min.insync.replicas": "2"})
    producer = Acked(cluster.bootstrap_servers, "kills")
    producer.send(500, pause=0.001)
    leader = partitions(admin, "kills")[0][0]
    cluster.kill(leader)  # kill -9 while records are in flight
    producer.send(1000, pause=0.002)
    wait_for("a new leader", lambda: partitions(admin, "kills")[0][0] not in (-1, leader), timeout=40)
    producer.send(500, pause=0.001)
    cluster.start_broker(leader)
    controller = controller_of(cluster)
    wait_for(
        "the restarted broker back in every ISR",
        lambda: all(leader in isr for _, _, isr in partitions(admin, "kills").values()),
        timeout=60,
    )
    cluster.kill(controller)
    producer.send(1000, pause=0.002)
    producer.flush()
    cluster.start_broker(controller)
    assert not producer.errors, producer.errors[:5]
    assert sum(len(v) for v in producer.acked.values()) == 3000
    got, _ = read_without_resent(cluster, "kills", read_all(cluster.bootstrap_servers, "kills", 3000))
    for partition, values in producer.acked.items():
        assert got.get(partition) == values, f"partition {partition}: lost, duplicated or reordered records"


def test_paused_follower_leaves_the_isr_and_min_isr_refuses_acks_all(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "paused", 1, 3, **{"min.insync.replicas": "2"})
    leader, replicas, _ = partitions(admin, "paused")[0]
    follower = next(r for r in replicas if r not in (leader, controller_of(cluster)))  # ISR changes need it
    producer = Acked(cluster.bootstrap_servers, "paused", **{"message.timeout.ms": 30_000})
    cluster.pause(follower)  # under the session timeout: only replication notices
    try:
        producer.send(200, pause=0.01)  # the leader's log moves on without the paused follower
        wait_for(
            "the paused follower out of the ISR", lambda: follower not in partitions(admin, "paused")[0][2]
        )
    finally:
        cluster.resume(follower)
    producer.send(100, pause=0.005)
    wait_for("the follower back in the ISR", lambda: partitions(admin, "paused")[0][2] == sorted(replicas))
    producer.flush()
    assert not producer.errors

    others = [r for r in replicas if r != leader]
    for broker_id in others:
        cluster.stop_broker(broker_id)
    wait_for("the leader alone in the ISR", lambda: partitions(admin, "paused")[0][2] == [leader], timeout=40)
    refused = Acked(
        cluster.bootstrap_servers,
        "paused",
        **{"message.timeout.ms": 3000, "retries": 0, "enable.idempotence": False},
    )
    refused.producer.produce("paused", b"refused", on_delivery=refused._report)
    refused.producer.flush(20)
    assert refused.errors and "NOT_ENOUGH_REPLICAS" in refused.errors[0], refused.errors
    cluster.start_broker(others[0])
    wait_for("a follower back in the ISR", lambda: len(partitions(admin, "paused")[0][2]) == 2, timeout=60)
    accepted = Acked(cluster.bootstrap_servers, "paused")
    accepted.send(10)
    accepted.flush(60)
    assert not accepted.errors and len(accepted.acked[0]) == 10


def test_a_former_leader_truncates_what_was_never_replicated(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "diverge", 1, 3)
    leader, replicas, _ = partitions(admin, "diverge")[0]
    followers = [r for r in replicas if r != leader]
    first = Acked(cluster.bootstrap_servers, "diverge")
    first.send(100)
    first.flush()
    wait_for("followers caught up", lambda: partitions(admin, "diverge")[0][2] == sorted(replicas))
    time.sleep(1)  # followers learn the high watermark one fetch late
    for broker_id in followers:
        cluster.pause(broker_id)
    # A follower's fetch parked at the leader when it was paused would still carry new records to it (they wait
    # in its socket): let those fetches end empty (replica.fetch.wait.max.ms, 500 ms) before producing.
    time.sleep(1.5)
    # acks=1: the leader alone takes these; nobody else ever gets them
    lonely = Producer({"bootstrap.servers": cluster.broker(leader).address, "acks": 1, "linger.ms": 0})
    for i in range(50):
        lonely.produce("diverge", f"lonely-{i}".encode(), partition=0)
    assert lonely.flush(10) == 0
    cluster.kill(leader)
    for broker_id in followers:
        cluster.resume(broker_id)
    wait_for("a new leader", lambda: partitions(admin, "diverge")[0][0] in followers, timeout=40)
    second = Acked(cluster.bootstrap_servers, "diverge")
    second.send(30)
    second.flush()
    cluster.start_broker(leader)
    wait_for(
        "the old leader back in the ISR",
        lambda: partitions(admin, "diverge")[0][2] == sorted(replicas),
        timeout=60,
    )
    new_leader = partitions(admin, "diverge")[0][0]
    wait_for(
        "the old leader identical to the new one",
        lambda: log_bytes(cluster, leader, "diverge", 0) == log_bytes(cluster, new_leader, "diverge", 0),
        timeout=30,
    )
    values = read_all(cluster.bootstrap_servers, "diverge", 130)[0]
    assert values == first.acked[0] + second.acked[0]
    assert not any(v.startswith(b"lonely") for v in values)
    assert "truncating" in cluster.output(leader, limit=20000)


def test_committed_offsets_survive_the_coordinators_death(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "groups", 3, 3)
    producer = Acked(cluster.bootstrap_servers, "groups")
    producer.send(300)
    producer.flush()
    config = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": "survivors",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    consumer = Consumer(config)
    consumer.subscribe(["groups"])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 150 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen += 1
    consumer.commit(asynchronous=False)
    committed = {
        tp.partition: tp.offset
        for tp in consumer.committed([TopicPartition("groups", p) for p in range(3)], 10)
    }
    consumer.close()
    assert sum(max(o, 0) for o in committed.values()) == seen

    offsets_partitions = partitions(admin, "__consumer_offsets")
    coordinator = offsets_partitions[partition_for("survivors", len(offsets_partitions))][0]
    cluster.kill(coordinator)
    again = Consumer(config)

    def fetched() -> dict[int, int] | None:
        try:
            answer = again.committed([TopicPartition("groups", p) for p in range(3)], 5)
        except KafkaException:  # the coordinator is moving
            return None
        return {tp.partition: tp.offset for tp in answer}

    try:
        found = wait_for("committed offsets from the new coordinator", fetched, timeout=60)
    finally:
        again.close()
    assert found == committed


def test_kafka_python_and_aiokafka_through_a_leader_change(cluster: LocalCluster) -> None:
    import asyncio

    import aiokafka
    import kafka

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "moving", 1, 3)
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=20)
    for i in range(100):
        producer.send("moving", f"kp-{i}".encode())
    producer.flush(30)
    leader = partitions(admin, "moving")[0][0]
    cluster.stop_broker(leader)  # a leader change; the clients must follow it
    wait_for("a new leader", lambda: partitions(admin, "moving")[0][0] not in (-1, leader), timeout=40)
    futures = [producer.send("moving", f"kp-{i}".encode()) for i in range(100, 200)]
    producer.flush(60)
    assert all(f.get(30).offset >= 100 for f in futures)
    producer.close()

    async def with_aiokafka() -> list[bytes]:
        sender = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
        await sender.start()
        try:
            for i in range(100):
                await sender.send_and_wait("moving", f"aio-{i}".encode())
        finally:
            await sender.stop()
        reader = aiokafka.AIOKafkaConsumer(
            "moving", bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
        )
        await reader.start()
        values: list[bytes] = []
        try:
            while len(values) < 300:
                batch = await asyncio.wait_for(reader.getmany(timeout_ms=1000), 30)
                values += [m.value for records in batch.values() for m in records]
        finally:
            await reader.stop()
        return values

    values = asyncio.run(with_aiokafka())
    expected = [f"kp-{i}".encode() for i in range(200)] + [f"aio-{i}".encode() for i in range(100)]
    assert values == expected
    cluster.start_broker(leader)


def test_wrong_broker_and_too_many_replicas_are_answered_with_kafkas_errors(cluster: LocalCluster) -> None:
    from samsa.client import NewTopic as NewTopic_
    from samsa.client import SyncClient
    from samsa.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
    from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from samsa.records import Record, build_batch

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "routed", 1, 2)
    leader, replicas, _ = partitions(admin, "routed")[0]
    follower = next(r for r in replicas if r != leader)
    outsider = next(b.broker_id for b in cluster.brokers if b.broker_id not in replicas)
    batch = build_batch([Record(0, int(time.time() * 1000), b"k", b"v", ())])
    with SyncClient(cluster.bootstrap_servers) as client:
        for node in (
            follower,
            outsider,
        ):  # a replica that does not lead it, and a broker that holds none of it
            produced = client.send(
                ProduceRequest(
                    acks=-1,
                    timeout_ms=5000,
                    topic_data=[TopicProduceData("routed", [PartitionProduceData(0, batch)])],
                ),
                api_key=0,
                node_id=node,
            )
            assert produced.responses[0].partition_responses[0].error_code == 6  # NOT_LEADER_OR_FOLLOWER
            fetched = client.send(
                FetchRequest(
                    max_wait_ms=10,
                    topics=[
                        FetchTopic(
                            topic="routed", partitions=[FetchPartition(partition=0, partition_max_bytes=1024)]
                        )
                    ],
                ),
                api_key=1,
                node_id=node,
            )
            assert fetched.responses[0].partitions[0].error_code == 6
        refused = client.create_topics([NewTopic_("wide", 1, 4)])
        assert refused["wide"] is not None and refused["wide"].error_code == 38  # INVALID_REPLICATION_FACTOR


def test_leaders_keep_serving_while_zookeeper_is_down(tmp_path: Path) -> None:
    from samsa.cluster.zookeeper import ZooKeeperServer

    zookeeper = ZooKeeperServer(tmp_path / "zookeeper")
    zookeeper.start()
    local = LocalCluster(tmp_path / "cluster", zookeeper=zookeeper.connect_string)
    try:
        local.up(3)
        admin = AdminClient({"bootstrap.servers": local.bootstrap_servers})
        create(admin, "zkless", 3, 3)
        zookeeper.stop()  # longer than the session timeout: metadata changes must wait, the data path must not
        try:
            producer = Acked(local.bootstrap_servers, "zkless")
            producer.send(300)
            producer.flush(30)
            assert not producer.errors and sum(len(v) for v in producer.acked.values()) == 300
            got = read_all(local.bootstrap_servers, "zkless", 300, timeout=30, partitions=3)
            assert got == producer.acked
            time.sleep(8)  # past zookeeper.session.timeout.ms (6 s) with ZooKeeper away
            more = Acked(local.bootstrap_servers, "zkless")
            more.send(100)
            more.flush(30)
            assert not more.errors
        finally:
            zookeeper.start()
        # In ZooKeeper itself: the brokers' metadata caches kept all three while ZooKeeper was away, so the
        # metadata would say "three" before the brokers whose sessions expired have registered again.
        local.wait_registered([b.broker_id for b in local.brokers], timeout=60)

        def created() -> bool:
            try:
                create(admin, "after", 2, 3)
            except KafkaException as exc:
                # REQUEST_TIMED_OUT while the broker asked has not reconnected yet; INVALID_REPLICATION_FACTOR
                # while its view of the registrations still misses a broker whose session was renewed
                assert exc.args[0].code() in (
                    KafkaError.REQUEST_TIMED_OUT,
                    KafkaError.TOPIC_ALREADY_EXISTS,
                    KafkaError.INVALID_REPLICATION_FACTOR,
                )
                return exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
            return True

        wait_for("metadata changes to work again", created, timeout=60)
        again = Acked(local.bootstrap_servers, "after")
        again.send(50)
        again.flush(60)
        assert not again.errors
    finally:
        local.down()
        zookeeper.stop()


def test_a_consumer_group_carries_on_when_a_leader_and_its_coordinator_die(cluster: LocalCluster) -> None:
    from tests.groups.test_group_clients import Worker

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, "grouped", 6, 3, **{"min.insync.replicas": "2"})
    producer = Acked(cluster.bootstrap_servers, "grouped")
    producer.send(600)
    producer.flush()
    workers = [Worker("confluent-kafka", cluster.bootstrap_servers, "grouped", "trio") for _ in range(3)]

    def consumed() -> list[tuple[int, int, str]]:
        records: list[tuple[int, int, str]] = []
        for worker in workers:
            with worker.lock:
                records += worker.consumed
        return records

    try:
        wait_for("the group consuming", lambda: len(consumed()) >= 200, timeout=90)
        offsets = partitions(admin, "__consumer_offsets")
        coordinator = offsets[partition_for("trio", len(offsets))][0]
        cluster.kill(coordinator)  # the coordinator, and the leader of some of "grouped"'s partitions
        producer.send(600, pause=0.002)
        producer.flush()
        cluster.start_broker(coordinator)
        wait_for(
            "every acknowledged record delivered",
            lambda: len({value for w in workers for _, value in w.delivered()}) >= 1200,
            timeout=120,
        )
    finally:
        for worker in workers:
            worker.leave()
    records = consumed()
    positions = [(partition, offset) for partition, offset, _ in records]
    assert len(positions) == len(set(positions)), "a record was reported twice: a committed offset was lost"
    acked = {value.decode() for values in producer.acked.values() for value in values}
    assert {value for w in workers for _, value in w.delivered()} == acked
