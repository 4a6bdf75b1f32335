"""A 3-broker cluster whose one listener, the inter-broker one too, is SASL_SSL (``samsa cluster up --security``'s
setup: a new CA, PLAIN between brokers, ACLs with ``User:admin`` the super user): brokers authenticate to each
other for controller requests, follower fetches and ISR changes. Under acks=all load from a SCRAM-SHA-256 client
allowed by ACLs, the controller is killed with SIGKILL and started again: no acknowledged record is lost, the ISR
heals to every replica, and the SCRAM credential and the ACLs still hold on every broker after the controller
changed (the restarted broker included)."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from tests.cluster.waiting import wait_for

from samsa.cluster.launcher import LocalCluster
from samsa.cluster.local_security import LISTENER, SecureSetup, secure_setup

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow, pytest.mark.clients]

TOPIC = "payments"
PARTITIONS = 3


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, SecureSetup]]:
    directory = tmp_path_factory.mktemp("secure-cluster")
    setup = secure_setup(directory)
    local = LocalCluster(
        directory / "cluster",
        broker_config={**setup.broker_config, "offsets.topic.num.partitions": "3"},
        listener=LISTENER,
        client_config=setup.client_config,
    )
    local.up(3)
    try:
        yield local, setup
    finally:
        local.down()


def librdkafka(setup: SecureSetup, bootstrap: str, **extra: str) -> dict[str, str]:
    """The admin's client settings from ``librdkafka.properties``, with ``extra`` on top."""
    lines = setup.librdkafka_properties.read_text().splitlines()
    props = dict(line.split("=", 1) for line in lines if "=" in line)
    return {**props, "bootstrap.servers": bootstrap, **extra}


def as_alice(setup: SecureSetup, bootstrap: str, **extra: str) -> dict[str, str]:
    return librdkafka(
        setup,
        bootstrap,
        **{"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": "alice-scram"},
        **extra,
    )


def _alice_sees_the_topic_everywhere(setup: SecureSetup, local: LocalCluster) -> bool:
    """Whether each broker, asked alone as alice, answers Metadata for ``TOPIC`` without an error."""
    for broker in local.brokers:
        client = Producer(as_alice(setup, broker.address))
        try:
            topic = client.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
        except KafkaException:
            return False
        finally:
            client.flush(0)
            del client
        if topic is None or topic.error is not None:
            return False
    return True


def _allow(kind: ResourceType, name: str, operation: AclOperation) -> AclBinding:
    return AclBinding(
        kind, name, ResourcePatternType.LITERAL, "User:alice", "*", operation, AclPermissionType.ALLOW
    )


def _controller(admin: AdminClient) -> int:
    """The controller's id; -1 while no answer comes: the broker asked is the one just killed (its request fails
    with a transport error), or librdkafka is still connecting (TLS and SASL) to a live one after the kill, which
    the last CI failure showed taking more than 20 s once (the future's wait ran out, no error came)."""
    try:
        return int(admin.describe_cluster(request_timeout=15).result(20).controller.id)
    except (KafkaException, concurrent.futures.TimeoutError):
        return -1


def _full_isr(admin: AdminClient) -> bool:
    partitions = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.values()
    return len(partitions) == PARTITIONS and all(len(p.isrs) == 3 and p.leader >= 0 for p in partitions)


class Load(threading.Thread):
    """alice's idempotent acks=all producer, writing numbered records until stopped; what was acknowledged."""

    def __init__(self, config: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(
            {
                **config,
                "acks": "all",
                "enable.idempotence": "true",
                "linger.ms": "5",
                "message.timeout.ms": "60000",
            }
        )
        self.acked: set[bytes] = set()
        self.failed: list[KafkaError] = []
        self.halt = threading.Event()

    def _done(self, err: KafkaError | None, msg: object) -> None:
        if err is None:
            self.acked.add(msg.value())  # type: ignore[attr-defined]
        else:
            self.failed.append(err)

    def run(self) -> None:
        n = 0
        while not self.halt.is_set():
            self.producer.produce(TOPIC, f"record-{n}".encode(), on_delivery=self._done)
            self.producer.poll(0)
            n += 1
            time.sleep(0.002)
        self.producer.flush(60)


def _read_all(setup: SecureSetup, bootstrap: str) -> set[bytes]:
    consumer = Consumer(librdkafka(setup, bootstrap, **{"group.id": "audit", "enable.auto.commit": "false"}))
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    seen: set[bytes] = set()
    idle_since = time.monotonic()
    try:
        while time.monotonic() - idle_since < 5:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.add(msg.value())
                idle_since = time.monotonic()
    finally:
        consumer.close()
    return seen


def test_controller_killed_under_acks_all_load_over_sasl_ssl(
    secured: tuple[LocalCluster, SecureSetup],
) -> None:
    local, setup = secured
    admin = AdminClient(librdkafka(setup, local.bootstrap_servers))
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(
        60
    )
    wait_for("the topic's full ISR", lambda: _full_isr(admin), timeout=60)
    scram = UserScramCredentialUpsertion(
        "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"alice-scram"
    )
    for future in admin.alter_user_scram_credentials([scram]).values():
        future.result(20)
    grants = [_allow(ResourceType.TOPIC, TOPIC, op) for op in (AclOperation.WRITE, AclOperation.DESCRIBE)]
    for future in admin.create_acls(grants).values():
        future.result(20)

    # the grants and alice's credential reach each broker through ZooKeeper's change notifications, a moment after
    # the admin's answer (as in Kafka): the load starts once every broker lets alice see the topic
    wait_for(
        "alice allowed on every broker", lambda: _alice_sees_the_topic_everywhere(setup, local), timeout=60
    )
    load = Load(as_alice(setup, local.bootstrap_servers))
    load.start()
    wait_for("alice's first acknowledgements", lambda: len(load.acked) > 50, timeout=60)
    victim = _controller(admin)
    local.kill(victim)
    wait_for("a new controller", lambda: _controller(admin) not in (victim, -1), timeout=60)
    time.sleep(1.0)
    local.start_broker(victim)
    local.wait_controller_known([victim])
    wait_for("the ISR healed", lambda: _full_isr(admin), timeout=90)
    acked_before_stop = len(load.acked)
    wait_for(
        "acknowledgements after the restart", lambda: len(load.acked) > acked_before_stop + 50, timeout=60
    )
    load.halt.set()
    load.join(90)

    assert not load.failed, load.failed[:3]
    lost = load.acked - _read_all(setup, local.bootstrap_servers)
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:3]}"

    # the credential and the ACLs, kept in ZooKeeper, hold on the restarted broker under the new controller
    restarted = local.broker(victim).address
    producer = Producer(as_alice(setup, restarted, **{"message.timeout.ms": "10000", "retries": "0"}))
    errors: list[KafkaError | None] = []
    producer.produce(TOPIC, b"after", on_delivery=lambda err, _m: errors.append(err))
    producer.produce("unlisted", b"denied", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(20)
    codes = sorted(e.code() if e is not None else 0 for e in errors)
    assert codes[0] == 0 and codes[1] in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._MSG_TIMED_OUT)
    wrong = Producer(librdkafka(setup, restarted, **{"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                                                     "sasl.password": "wrong", "message.timeout.ms": "5000"}))  # fmt: skip
    refused: list[KafkaError] = []
    wrong.produce(TOPIC, b"x", on_delivery=lambda err, _m: refused.append(err))
    wrong.flush(10)
    assert refused and refused[0] is not None


def test_cluster_up_security_prints_how_to_connect_and_its_files_work(tmp_path: Path) -> None:
    """`samsa cluster up --security`: the printed bootstrap, client.properties for samsa's tools (and Kafka's),
    librdkafka.properties for kcat; alice is refused until an ACL lets her write."""
    directory = tmp_path / "cluster"
    up = samsa_cli("cluster", "up", "--security", "--brokers", "1", "--port", "0", "--dir", str(directory))
    try:
        assert up.returncode == 0, up.stderr
        lines = up.stdout.splitlines()
        bootstrap = next(x for x in lines if x.startswith("bootstrap servers: ")).removeprefix(
            "bootstrap servers: "
        )
        password = next(x for x in lines if "alice's PLAIN password: " in x).split(": ", 1)[1].split(";")[0]
        home = directory / "security"
        config = str(home / "client.properties")
        assert f"--command-config {config}" in up.stdout
        created = samsa_cli("topics", "--bootstrap-server", bootstrap, "--command-config", config,
                            "--create", "--topic", "t")  # fmt: skip
        assert created.returncode == 0, created.stderr
        listed = subprocess.run(
            ["kcat", "-F", str(home / "librdkafka.properties"), "-b", bootstrap, "-L", "-t", "t"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert listed.returncode == 0 and 'topic "t" with 1 partitions' in listed.stdout, listed.stderr

        alice = {
            "bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": password, "ssl.ca.location": str(home / "ca.pem"),
            "message.timeout.ms": "10000",
        }  # fmt: skip
        assert _produce(alice) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        granted = samsa_cli("acls", "--bootstrap-server", bootstrap, "--command-config", config, "--add",
                            "--allow-principal", "User:alice", "--producer", "--topic", "t")  # fmt: skip
        assert granted.returncode == 0, granted.stderr
        assert wait_for("alice allowed", lambda: _produce(alice) == 0 or None, timeout=20) is not None
    finally:
        samsa_cli("cluster", "down", "--dir", str(directory))


def _produce(config: dict[str, str]) -> int:
    errors: list[KafkaError | None] = []
    producer = Producer(config)
    producer.produce("t", b"v", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(15)
    return errors[0].code() if errors and errors[0] is not None else 0


def samsa_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "samsa.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )
