"""Brokers in cluster mode over a real ZooKeeper: one controller, Kafka's placement, the same metadata on every
broker, and the controller's work surviving the controller's own departure."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from tests.cluster.waiting import wait_for

import samsa
from samsa.cluster.assignment import assign_replicas
from samsa.cluster.zk_client import ZkClient

pytestmark = [pytest.mark.timeout(180), pytest.mark.clients]


def start_broker(zk_connect: str, node_id: int, **config: str) -> samsa.Broker:
    broker = samsa.Broker(
        config={
            "zookeeper.connect": zk_connect,
            "zookeeper.session.timeout.ms": "6000",
            "node.id": str(node_id),
            "offsets.topic.replication.factor": "3",
            **config,
        }
    )
    return broker.start_in_thread()


@pytest.fixture
def cluster(zk_connect: str) -> Iterator[list[samsa.Broker]]:
    brokers = [start_broker(zk_connect, node_id) for node_id in (1, 2, 3)]
    try:
        for broker in brokers:  # every broker's metadata cache has them all (the controller's own included)
            wait_for(
                "three brokers in every broker's metadata",
                lambda b=broker: len(admin(b).list_topics(timeout=10).brokers) == 3,
            )
        yield brokers
    finally:
        for broker in brokers:
            broker.stop_thread()


def admin(broker: samsa.Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def describe(client: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    metadata = client.list_topics(topic, timeout=10)
    found = metadata.topics[topic]
    if found.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in found.partitions.values()}


def test_one_controller_and_every_broker_listed(cluster: list[samsa.Broker], zk_connect: str) -> None:
    for broker in cluster:
        metadata = wait_for(
            "three brokers in the metadata",
            lambda b=broker: (m := admin(b).list_topics(timeout=10)) and len(m.brokers) == 3 and m,
        )
        assert {b.id: b.port for b in metadata.brokers.values()} == {i + 1: cluster[i].port for i in range(3)}
        assert metadata.controller_id in (1, 2, 3)
    zk = ZkClient(zk_connect)
    zk.start()
    try:
        assert zk.controller() == metadata.controller_id
        assert sorted(zk.live_brokers()) == [1, 2, 3]
    finally:
        zk.close()


def test_topic_placed_by_kafkas_algorithm_and_failover(cluster: list[samsa.Broker]) -> None:
    client = admin(cluster[0])
    wait_for("three brokers", lambda: len(client.list_topics(timeout=10).brokers) == 3)
    futures = client.create_topics([NewTopic("placed", num_partitions=6, replication_factor=3)])
    futures["placed"].result(30)
    for broker in cluster:  # every broker tells clients the same state
        state = wait_for(
            "leaders everywhere", lambda b=broker: (d := describe(admin(b), "placed")) and len(d) == 6 and d
        )
        assert all(
            leader == replicas[0] and sorted(isr) == [1, 2, 3] for leader, replicas, isr in state.values()
        )
    replicas = {p: r for p, (_, r, _) in state.items()}
    layouts = [
        assign_replicas(dict.fromkeys([1, 2, 3]), 6, 3, start_index=s, replica_shift=r)
        for s in range(3)
        for r in range(3)
    ]
    assert replicas in layouts  # Kafka's round-robin with a random start and shifted followers
    leaders = [leader for leader, _, _ in state.values()]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]  # spread evenly

    controller_id = client.list_topics(timeout=10).controller_id
    leaving = cluster[controller_id - 1]
    leaving.stop_thread()  # the controller stops: a new one is elected and moves its partitions' leadership
    survivor = admin(next(b for b in cluster if b is not leaving))
    new_controller = wait_for(
        "a new controller",
        lambda: (c := survivor.list_topics(timeout=10).controller_id) not in (-1, controller_id) and c,
    )
    assert new_controller != controller_id

    def moved() -> dict[int, tuple[int, list[int], list[int]]] | None:
        now = describe(survivor, "placed")
        ok = now and all(
            leader not in (-1, controller_id) and controller_id not in isr for leader, _, isr in now.values()
        )
        return now if ok else None

    after = wait_for("leaders moved off the stopped broker", moved)
    for p, (leader, replicas_now, isr) in after.items():
        assert replicas_now == replicas[p]  # the assignment does not change
        assert leader == next(r for r in replicas[p] if r != controller_id)  # first live replica in order
        assert sorted(isr) == sorted(r for r in replicas[p] if r != controller_id)


def test_producer_ids_unique_across_brokers(cluster: list[samsa.Broker], zk_connect: str) -> None:
    import asyncio

    from samsa.client.connection import BrokerConnection
    from samsa.protocol.messages.init_producer_id import InitProducerIdRequest

    async def ids_from(broker: samsa.Broker, count: int) -> list[int]:
        connection = BrokerConnection("127.0.0.1", broker.port, client_id="t", request_timeout_ms=10_000)
        await connection.open()
        try:
            answers = [
                await connection.request(
                    InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 22
                )
                for _ in range(count)
            ]
        finally:
            await connection.close()
        assert all(a.error_code == 0 for a in answers)
        return [a.producer_id for a in answers]

    async def all_ids() -> list[list[int]]:
        return list(await asyncio.gather(*(ids_from(b, 5) for b in cluster)))

    per_broker = asyncio.run(all_ids())
    flat = [pid for ids in per_broker for pid in ids]
    assert len(set(flat)) == 15
    blocks = {pid // 1000 for pid in flat}
    assert len(blocks) == 3  # one block of 1000 per broker
    zk = ZkClient(zk_connect)
    zk.start()
    try:
        data, _ = zk.kazoo.get("/latest_producer_id_block")
        assert json.loads(data)["block_end"] == str(max(blocks) * 1000 + 999)
    finally:
        zk.close()


def test_create_partitions_and_delete_topic(cluster: list[samsa.Broker], zk_connect: str) -> None:
    from confluent_kafka.admin import NewPartitions

    client = admin(cluster[1])
    wait_for("three brokers", lambda: len(client.list_topics(timeout=10).brokers) == 3)
    client.create_topics([NewTopic("grown", num_partitions=3, replication_factor=2)])["grown"].result(30)
    client.create_partitions([NewPartitions("grown", 5)])["grown"].result(30)
    for broker in cluster:
        state = wait_for(
            "five partitions", lambda b=broker: (d := describe(admin(b), "grown")) and len(d) == 5 and d
        )
        assert all(len(replicas) == 2 and leader == replicas[0] for leader, replicas, _ in state.values())
    with pytest.raises(Exception, match="INVALID_PARTITIONS"):
        client.create_partitions([NewPartitions("grown", 4)])["grown"].result(30)

    client.delete_topics(["grown"], operation_timeout=20)["grown"].result(30)
    for broker in cluster:
        wait_for("the topic gone", lambda b=broker: "grown" not in admin(b).list_topics(timeout=10).topics)
    zk = ZkClient(zk_connect)
    zk.start()
    try:
        wait_for(  # the znodes go once every replica answered StopReplica(delete), after the metadata changed
            "the topic's znodes gone",
            lambda: zk.topics() == [] and zk.topics_to_delete() == [] and zk.topic_config("grown") == {},
        )
    finally:
        zk.close()
    with pytest.raises(Exception, match="UNKNOWN_TOPIC_OR_PART"):
        client.delete_topics(["grown"], operation_timeout=20)["grown"].result(30)


def test_topic_configs_live_in_zookeeper(cluster: list[samsa.Broker], zk_connect: str) -> None:
    from confluent_kafka.admin import ConfigResource

    client = admin(cluster[0])
    wait_for("three brokers", lambda: len(client.list_topics(timeout=10).brokers) == 3)
    new = NewTopic("configured", num_partitions=1, replication_factor=1, config={"retention.ms": "60000"})
    client.create_topics([new])["configured"].result(30)
    resource = ConfigResource("topic", "configured")
    for broker in cluster:  # any broker describes it, hosting a replica or not
        wait_for("the topic", lambda b=broker: describe(admin(b), "configured"))
        other = admin(broker)
        configs = other.describe_configs([resource])[resource].result(30)
        assert (
            configs["retention.ms"].value == "60000" and configs["retention.ms"].source == 1
        )  # dynamic topic
    altered = ConfigResource(
        "topic", "configured", set_config={"retention.ms": "120000", "cleanup.policy": "compact"}
    )
    third = admin(cluster[2])
    third.alter_configs([altered])[altered].result(30)
    zk = ZkClient(zk_connect)
    zk.start()
    try:
        assert zk.topic_config("configured") == {"retention.ms": "120000", "cleanup.policy": "compact"}
        assert zk.config_changes()  # a change notification for the other brokers
    finally:
        zk.close()
    second = admin(cluster[1])
    configs = second.describe_configs([resource])[resource].result(30)
    assert configs["cleanup.policy"].value == "compact"


def test_samsa_topics_describe_like_kafkas_tool(cluster: list[samsa.Broker]) -> None:
    import subprocess
    import sys

    bootstrap = cluster[0].bootstrap_servers
    client = admin(cluster[0])
    wait_for("three brokers", lambda: len(client.list_topics(timeout=10).brokers) == 3)
    tool = [sys.executable, "-m", "samsa.cli", "topics", "--bootstrap-server", bootstrap]
    created = subprocess.run(
        [*tool, "--create", "--topic", "six", "--partitions", "6", "--replication-factor", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    wait_for("leaders", lambda: (d := describe(client, "six")) and len(d) == 6)
    out = subprocess.run([*tool, "--describe", "--topic", "six"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert (
        lines[0].startswith("Topic: six\tTopicId: ") and "PartitionCount: 6\tReplicationFactor: 3" in lines[0]
    )
    state = describe(client, "six")
    for p in range(6):
        leader, replicas, isr = state[p]
        expected = f"\tTopic: six\tPartition: {p}\tLeader: {leader}\tReplicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}\tElr: N/A\tLastKnownElr: N/A"
        assert expected in lines, (expected, lines)
