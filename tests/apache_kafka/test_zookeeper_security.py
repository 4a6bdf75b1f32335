"""SCRAM credentials and ACLs through ZooKeeper between Kafka 3.9's own tools (the last with ZooKeeper mode) and a
Samsa cluster broker: a credential ``kafka-configs --zookeeper`` writes authenticates on Samsa, ACLs ``kafka-acls
--authorizer-properties zookeeper.connect=...`` writes decide on Samsa, and an ACL created through Samsa is listed by
Kafka's tool reading ZooKeeper. Each side reads what the other wrote, notifications included."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
)
from confluent_kafka.admin import ResourceType as AdminResourceType

import samsa
from samsa.cluster.zookeeper import ZooKeeperServer
from tests.security.test_scram_clients import scram_login

from .jars import KafkaJars

CONFIG_COMMAND = "kafka.admin.ConfigCommand"  # Kafka 3.9's, with --zookeeper for SCRAM credentials
ACL_COMMAND = "kafka.admin.AclCommand"  # Kafka 3.9's, with --authorizer-properties zookeeper.connect=


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def broker(zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[tuple[samsa.Broker, str]]:
    connect = f"{zookeeper.connect_string}/samsa-kafka39"
    with samsa.Broker(
        log_dir=tmp_path / "data",
        config={
            "zookeeper.connect": connect,
            "node.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
        },
    ) as b:
        yield b, connect


def address(broker: samsa.Broker, listener: str) -> str:
    return next(f"{host}:{port}" for name, host, port in broker.core.bound_addresses if name == listener)


def within(seconds: float, condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_credentials_and_acls_written_by_kafka_39_through_zookeeper_apply_on_samsa_and_back(
    kafka3: KafkaJars, broker: tuple[samsa.Broker, str]
) -> None:
    b, connect = broker
    sasl = address(b, "SASL_PLAINTEXT")

    def logs_in() -> bool:
        async def attempt() -> bool:
            connection = await scram_login(sasl, "erin", "kafka-made", "SCRAM-SHA-512")
            if connection is not None:
                await connection.close()
            return connection is not None

        return asyncio.run(attempt())

    assert not logs_in()
    kafka3.run(CONFIG_COMMAND, "--zookeeper", connect, "--alter", "--add-config",
               "SCRAM-SHA-512=[password=kafka-made]", "--entity-type", "users", "--entity-name", "erin")  # fmt: skip
    assert within(2, logs_in)

    producer_settings = {
        "bootstrap.servers": sasl, "security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "erin", "sasl.password": "kafka-made", "message.timeout.ms": 5000, "retries": 0,
    }  # fmt: skip
    admin = AdminClient({"bootstrap.servers": address(b, "PLAINTEXT")})
    for future in admin.create_topics([NewTopic("from-39", 1, 1)]).values():
        future.result(20)

    def produced() -> KafkaError | None:
        errors: list[KafkaError | None] = []
        producer = Producer(producer_settings)
        producer.produce("from-39", b"v", on_delivery=lambda err, _msg: errors.append(err))
        producer.flush(10)
        return errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT)

    denied = produced()
    assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    authorizer = ["--authorizer-properties", f"zookeeper.connect={connect}"]
    kafka3.run(ACL_COMMAND, *authorizer, "--add", "--allow-principal", "User:erin", "--operation", "Write",
               "--topic", "from-", "--resource-pattern-type", "prefixed")  # fmt: skip
    held = b.core.services.authorizer
    assert held is not None
    assert within(2, lambda: any(x.pattern.name == "from-" for x in held.bindings()))
    assert produced() is None

    deny = AclBinding(AdminResourceType.GROUP, "samsa-made", ResourcePatternType.LITERAL, "User:erin", "*",
                      AclOperation.READ, AclPermissionType.DENY)  # fmt: skip
    for future in admin.create_acls([deny]).values():
        assert future.result(10) is None
    listed = kafka3.run(ACL_COMMAND, *authorizer, "--list", "--group", "samsa-made").stdout
    assert "ResourcePattern(resourceType=GROUP, name=samsa-made, patternType=LITERAL)" in listed
    assert "(principal=User:erin, host=*, operation=READ, permissionType=DENY)" in listed
