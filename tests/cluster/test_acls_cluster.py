"""ACLs in a 3-broker ZooKeeper cluster, kept where Kafka's ZooKeeper authorizer keeps them (``/kafka-acl``,
``/kafka-acl-extended/prefixed``, with ``acl_changes_`` notifications): an ACL created through one broker allows or
denies on another within a second, for real clients authenticated with SCRAM; the ACLs outlive the controller's
broker and are loaded by a broker that starts later."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

import samsa
from samsa.cli.app import cli
from samsa.cluster.zk_client import ZkClient

pytestmark = [pytest.mark.timeout(180), pytest.mark.clients]

TOPIC = "acl-topic"


def start(zk_connect: str, node_id: int) -> samsa.Broker:
    return samsa.Broker(
        config={
            "zookeeper.connect": zk_connect,
            "zookeeper.session.timeout.ms": "6000",
            "node.id": str(node_id),
            "offsets.topic.replication.factor": "3",
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",  # the PLAINTEXT listener: brokers and the test's admin
        }
    ).start_in_thread()


@pytest.fixture
def cluster(zk_connect: str) -> Iterator[list[samsa.Broker]]:
    brokers = [start(zk_connect, node_id) for node_id in (1, 2, 3)]
    try:
        yield brokers
    finally:
        for broker in brokers:
            broker.stop_thread()  # a second stop of one stopped already does nothing


def address(broker: samsa.Broker, listener: str) -> str:
    return next(f"{host}:{port}" for name, host, port in broker.core.bound_addresses if name == listener)


def admin(broker: samsa.Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": address(broker, "PLAINTEXT")})


def as_alice(broker: samsa.Broker, **extra: object) -> dict[str, object]:
    return {
        "bootstrap.servers": address(broker, "SASL_PLAINTEXT"),
        "security.protocol": "sasl_plaintext",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": "alice-pw",
        **extra,
    }


def produce_error(broker: samsa.Broker) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer(as_alice(broker, **{"message.timeout.ms": 5000, "retries": 0}))
    producer.produce(TOPIC, b"v", partition=0, on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(10)
    return errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT)


def create(broker: samsa.Broker, *bindings: AclBinding) -> None:
    client = admin(broker)
    for future in client.create_acls(list(bindings)).values():
        assert future.result(10) is None


def seconds_until_described(broker: samsa.Broker, wanted: AclBinding) -> float:
    """How long until ``broker``'s own authorizer holds ``wanted`` (read in-process: an admin client may send
    DescribeAcls to any broker of the cluster)."""
    started = time.monotonic()
    while time.monotonic() - started < 5 and not holds(broker, wanted):
        time.sleep(0.01)
    return time.monotonic() - started


def holds(broker: samsa.Broker, wanted: AclBinding) -> bool:
    authorizer = broker.core.services.authorizer
    assert authorizer is not None
    return any(
        b.pattern.name == wanted.name
        and b.pattern.resource_type.name == wanted.restype.name
        and b.pattern.pattern_type.name == wanted.resource_pattern_type.name
        and b.entry.principal == wanted.principal
        and b.entry.operation.name == wanted.operation.name
        and b.entry.permission.name == wanted.permission_type.name
        for b in authorizer.bindings()
    )


def binding(
    resource: ResourceType,
    name: str,
    operation: AclOperation,
    pattern: ResourcePatternType,
    allow: bool = True,
) -> AclBinding:
    permission = AclPermissionType.ALLOW if allow else AclPermissionType.DENY
    return AclBinding(resource, name, pattern, "User:alice", "*", operation, permission)


def wait(condition: Callable[[], bool], seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)
    return condition()


def test_an_acl_created_through_one_broker_decides_on_another_within_a_second(
    cluster: list[samsa.Broker], zk_connect: str
) -> None:
    first, second, third = cluster
    added = CliRunner().invoke(
        cli, ["configs", "--bootstrap-server", address(first, "PLAINTEXT"), "--entity-type", "users",
              "--entity-name", "alice", "--alter", "--add-config", "SCRAM-SHA-256=[password=alice-pw]"],
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    topics = admin(first)  # kept: a collected client ends its futures
    for future in topics.create_topics([NewTopic(TOPIC, 1, 3)]).values():
        future.result(20)
    assert wait(lambda: produce_error(second) is not None)
    err = produce_error(second)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err

    write = binding(ResourceType.TOPIC, TOPIC, AclOperation.WRITE, ResourcePatternType.LITERAL)
    create(first, write)
    took = seconds_until_described(second, write)
    print(f"an ACL created through broker 1 is applied on broker 2 after {took * 1000:.0f} ms")
    assert took < 1.0
    assert all(seconds_until_described(b, write) < 1.0 for b in cluster)  # the leader among them
    assert produce_error(second) is None

    read = binding(ResourceType.TOPIC, "acl-", AclOperation.READ, ResourcePatternType.PREFIXED)
    group = binding(ResourceType.GROUP, "acl-", AclOperation.READ, ResourcePatternType.PREFIXED)
    create(third, read, group)
    assert seconds_until_described(second, group) < 1.0
    consumer = Consumer(as_alice(second, **{"group.id": "acl-readers", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while not got and time.monotonic() < deadline:
        got += [m.value() for m in consumer.consume(10, 0.5) if not m.error()]
    consumer.close()
    assert got and set(got) == {b"v"}

    zk = ZkClient(zk_connect)
    zk.start()
    try:  # as Kafka's ZooKeeper authorizer keeps them
        literal = json.loads(zk.kazoo.get(f"/kafka-acl/Topic/{TOPIC}")[0])
        assert literal == {"version": 1, "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}]}  # fmt: skip
        prefixed = json.loads(zk.kazoo.get("/kafka-acl-extended/prefixed/Group/acl-")[0])
        assert prefixed["acls"][0]["operation"] == "Read"
        literal_changes = [
            zk.kazoo.get(f"/kafka-acl-changes/{n}")[0] for n in zk.kazoo.get_children("/kafka-acl-changes")
        ]
        assert f"TOPIC:{TOPIC}".encode() in literal_changes
        extended = [
            json.loads(zk.kazoo.get(f"/kafka-acl-extended-changes/{n}")[0])
            for n in zk.kazoo.get_children("/kafka-acl-extended-changes")
        ]
        assert {"version": 1, "resourceType": "GROUP", "name": "acl-", "patternType": "PREFIXED"} in extended
        controller = json.loads(zk.kazoo.get("/controller")[0])["brokerid"]
    finally:
        zk.close()

    # the controller's broker goes; a DENY made through another still reaches the third at once
    gone = cluster[controller - 1]
    gone.stop_thread()
    left = [b for b in cluster if b is not gone]
    for b in left:  # an admin client sends CreateAcls to any broker its metadata lists: not to the gone one
        assert wait(lambda b=b: len(admin(b).list_topics(timeout=5).brokers) == 2)  # type: ignore[misc]
    deny = binding(ResourceType.TOPIC, TOPIC, AclOperation.WRITE, ResourcePatternType.LITERAL, allow=False)
    create(left[0], deny)
    assert seconds_until_described(left[1], deny) < 1.0
    assert wait(
        lambda: (
            (e := produce_error(left[1])) is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        )
    )

    # a broker that starts now loads every ACL from ZooKeeper
    later = start(zk_connect, 4)
    try:
        assert seconds_until_described(later, deny) < 5.0
        assert seconds_until_described(later, group) < 5.0
    finally:
        later.stop_thread()
