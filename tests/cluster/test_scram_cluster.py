"""SCRAM credentials in a 3-broker ZooKeeper cluster: a credential added through one broker is kept where Kafka
keeps it (``/config/users/<user>``, a ``config_change_`` notification) and authenticates on another broker within a
second; a deletion through a third stops it there as fast; real clients produce and consume with it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition
from tests.security.test_scram_clients import scram_login

import samsa
from samsa.cli.app import cli
from samsa.cluster.zk_client import ZkClient

pytestmark = [pytest.mark.timeout(180), pytest.mark.clients]

LISTENERS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
}


@pytest.fixture
def cluster(zk_connect: str) -> Iterator[list[samsa.Broker]]:
    brokers = [
        samsa.Broker(
            config={
                "zookeeper.connect": zk_connect,
                "zookeeper.session.timeout.ms": "6000",
                "node.id": str(node_id),
                "offsets.topic.replication.factor": "3",
                **LISTENERS,
            }
        ).start_in_thread()
        for node_id in (1, 2, 3)
    ]
    try:
        yield brokers
    finally:
        for broker in brokers:
            broker.stop_thread()


def address(broker: samsa.Broker, listener: str) -> str:
    return next(f"{host}:{port}" for name, host, port in broker.core.bound_addresses if name == listener)


def configs(broker: samsa.Broker, *args: str) -> None:
    done = CliRunner().invoke(
        cli, ["configs", "--bootstrap-server", address(broker, "PLAINTEXT"), "--entity-type", "users", *args]
    )
    assert done.exit_code == 0, done.output


def logs_in(bootstrap: str, user: str, password: str) -> bool:
    async def attempt() -> bool:
        connection = await scram_login(bootstrap, user, password)
        if connection is None:
            return False
        await connection.close()
        return True

    return asyncio.run(attempt())


def seconds_until(condition: bool, check: Callable[[], bool]) -> float:
    """How long until ``check()`` returns ``condition`` (at most 5 s)."""
    started = time.monotonic()
    while time.monotonic() - started < 5:
        if check() is condition:
            break
        time.sleep(0.02)
    return time.monotonic() - started


def test_a_credential_added_on_one_broker_authenticates_on_another_within_a_second(
    cluster: list[samsa.Broker], zk_connect: str
) -> None:
    first, second, third = cluster
    on_second = address(second, "SASL_PLAINTEXT")
    assert not logs_in(on_second, "dave", "dave-pw")
    configs(first, "--entity-name", "dave", "--alter", "--add-config", "SCRAM-SHA-256=[password=dave-pw]")
    added = seconds_until(True, lambda: logs_in(on_second, "dave", "dave-pw"))
    print(f"added on broker 1, authenticates on broker 2 after {added * 1000:.0f} ms")
    assert added < 1.0
    assert logs_in(address(third, "SASL_PLAINTEXT"), "dave", "dave-pw")
    assert not logs_in(on_second, "dave", "wrong")

    zk = ZkClient(zk_connect)
    zk.start()
    try:  # where Kafka keeps it, so Kafka's tools reading ZooKeeper see it
        data, _ = zk.kazoo.get("/config/users/dave")
        stored = json.loads(data)
        assert stored["version"] == 1 and list(stored["config"]) == ["SCRAM-SHA-256"]
        fields = [part.split("=", 1)[0] for part in stored["config"]["SCRAM-SHA-256"].split(",")]
        assert fields == ["salt", "stored_key", "server_key", "iterations"]
        assert "dave-pw" not in data.decode()
        changes = [
            json.loads(zk.kazoo.get(f"/config/changes/{n}")[0])
            for n in zk.kazoo.get_children("/config/changes")
        ]
        assert {"version": 2, "entity_path": "users/dave"} in changes
    finally:
        zk.close()

    settings = {
        "bootstrap.servers": on_second,
        "security.protocol": "sasl_plaintext",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "dave",
        "sasl.password": "dave-pw",
    }
    producer = Producer(settings)
    producer.produce("scram-cluster", b"secret", partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**settings, "group.id": "scram-cluster-readers"})
    consumer.assign([TopicPartition("scram-cluster", 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while not got and time.monotonic() < deadline:
        got += [m.value() for m in consumer.consume(10, 0.5) if not m.error()]
    consumer.close()
    assert got == [b"secret"]

    configs(third, "--entity-name", "dave", "--alter", "--delete-config", "SCRAM-SHA-256")
    deleted = seconds_until(False, lambda: logs_in(on_second, "dave", "dave-pw"))
    print(f"deleted on broker 3, refused on broker 2 after {deleted * 1000:.0f} ms")
    assert deleted < 1.0
