"""SASL/PLAIN through real clients: confluent-kafka, kafka-python, aiokafka and kcat authenticate on a
SASL_PLAINTEXT listener and on a SASL_SSL one (users from the listener's JAAS configuration), the user is the
principal (seen through a user quota); a wrong password, an unknown user or mechanism, and a request before
authenticating get Kafka's error or a closed connection, and the broker serves everyone else."""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioPartition
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as PyPartition

from samsa.cli.app import cli
from tests.clients.harness import BrokerProcess, free_port
from tests.security.test_tls import Tls

pytestmark = [pytest.mark.timeout(120), pytest.mark.clients]

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" '
    'user_admin="admin-pw" user_alice="alice-pw";'
)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return Tls(tmp_path_factory.mktemp("sasl-tls"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, tls: Tls) -> Iterator[tuple[BrokerProcess, str, str]]:
    plain, sasl, sasl_ssl = free_port(), free_port(), free_port()
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("samsa-sasl"),
        port=plain,
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
            f"SASL_SSL://127.0.0.1:{sasl_ssl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server_file),
        },
    )
    proc.start()
    yield proc, f"127.0.0.1:{sasl}", f"127.0.0.1:{sasl_ssl}"
    proc.stop()


def confluent(
    bootstrap: str, user: str = "alice", password: str = "alice-pw", **extra: str
) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "sasl_plaintext",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def round_trip(settings: dict[str, str], topic: str) -> list[bytes]:
    producer = Producer(settings)
    producer.produce(topic, b"secret", partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**settings, "group.id": f"{topic}-readers"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while not got and time.monotonic() < deadline:
        got += [m.value() for m in consumer.consume(10, 0.5) if not m.error()]
    consumer.close()
    return got


def test_confluent_kafka_over_sasl_plaintext_and_sasl_ssl(
    broker: tuple[BrokerProcess, str, str], tls: Tls
) -> None:
    _, sasl, sasl_ssl = broker
    assert round_trip(confluent(sasl), "sasl-plain") == [b"secret"]
    over_tls = confluent(sasl_ssl, **{"security.protocol": "sasl_ssl", "ssl.ca.location": str(tls.ca_file)})
    assert round_trip(over_tls, "sasl-ssl") == [b"secret"]


def test_kafka_python_aiokafka_and_kcat(broker: tuple[BrokerProcess, str, str]) -> None:
    _, sasl, _ = broker
    login = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"}
    producer = KafkaProducer(
        bootstrap_servers=sasl, sasl_plain_username="alice", sasl_plain_password="alice-pw", **login
    )
    producer.send("sasl-clients", b"kafka-python", partition=0).get(timeout=30)
    producer.close()

    async def aio() -> list[bytes]:
        auth = {"sasl_plain_username": "admin", "sasl_plain_password": "admin-pw", **login}
        writer = AIOKafkaProducer(bootstrap_servers=sasl, **auth)
        await writer.start()
        try:
            await writer.send_and_wait("sasl-clients", b"aiokafka", partition=0)
        finally:
            await writer.stop()
        reader = AIOKafkaConsumer(bootstrap_servers=sasl, auto_offset_reset="earliest", **auth)
        await reader.start()
        try:
            reader.assign([AioPartition("sasl-clients", 0)])
            batches = await reader.getmany(timeout_ms=10_000, max_records=10)
            return [m.value for records in batches.values() for m in records]
        finally:
            await reader.stop()

    assert asyncio.run(aio()) == [b"kafka-python", b"aiokafka"]
    kcat_auth = ["-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=PLAIN", "-X",
                 "sasl.username=alice", "-X", "sasl.password=alice-pw"]  # fmt: skip
    read = subprocess.run(
        ["kcat", "-b", sasl, *kcat_auth, "-C", "-t", "sasl-clients", "-p", "0", "-o", "beginning", "-e"],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert read.stdout.split() == [b"kafka-python", b"aiokafka"], read.stderr
    consumer = KafkaConsumer(
        bootstrap_servers=sasl, sasl_plain_username="alice", sasl_plain_password="alice-pw",
        auto_offset_reset="earliest", consumer_timeout_ms=10_000, **login,
    )  # fmt: skip
    consumer.assign([PyPartition("sasl-clients", 0)])
    assert next(consumer).value == b"kafka-python"
    consumer.close()


def test_the_user_is_the_principal(broker: tuple[BrokerProcess, str, str]) -> None:
    proc, sasl, _ = broker
    quota = ["configs", "--bootstrap-server", proc.bootstrap, "--user", "admin", "--alter", "--add-config"]
    assert CliRunner().invoke(cli, [*quota, "producer_byte_rate=1000"]).exit_code == 0

    def throttled(user: str, password: str) -> bool:
        throttles: list[float] = []
        settings: dict[str, object] = {
            **confluent(sasl, user, password, **{"batch.size": "1000"}),
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
        producer = Producer(settings)
        for _ in range(25):
            producer.produce("sasl-principal", b"x" * 900, partition=0)
            producer.flush(10)
            if throttles:
                break
        return bool(throttles)

    assert throttled("admin", "admin-pw")
    assert not throttled("alice", "alice-pw")


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-pw")])
def test_bad_credentials_fail_with_kafkas_error(
    broker: tuple[BrokerProcess, str, str], user: str, password: str
) -> None:
    proc, sasl, _ = broker
    errors: list[KafkaError] = []
    producer = Producer(confluent(sasl, user, password, error_cb=errors.append))  # type: ignore[arg-type]
    producer.produce("sasl-denied", b"x")
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert "Invalid username or password" in errors[0].str()
    assert round_trip(confluent(sasl), f"sasl-after-{user}") == [b"secret"]  # others are served
    assert "failed authentication with 127.0.0.1" in "".join(proc.output)


def frame(api_key: int, version: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, 7, -1)
    return struct.pack(">i", len(header) + len(body)) + header + body


def test_a_request_before_authenticating_closes_the_connection(
    broker: tuple[BrokerProcess, str, str],
) -> None:
    _, sasl, _ = broker
    host, port = sasl.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(frame(3, 1, struct.pack(">i", 0)))  # Metadata v1, no topics: not before SASL
        assert sock.recv(64) == b""
    with socket.create_connection((host, int(port)), timeout=10) as sock:  # an unknown mechanism
        sock.sendall(frame(17, 1, struct.pack(">h", 8) + b"GSSAPI!!"))
        size = struct.unpack(">i", sock.recv(4))[0]
        answer = sock.recv(size)
        assert struct.unpack(">h", answer[4:6])[0] == 33  # UNSUPPORTED_SASL_MECHANISM
        assert b"PLAIN" in answer


def test_unsupported_mechanism_in_the_config_stops_the_start(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    port = free_port()
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("sasl-bad"),
        port=port,
        overrides={
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "GSSAPI",
        },
    )
    with pytest.raises(RuntimeError, match=r"sasl\.enabled\.mechanisms GSSAPI not supported"):
        proc.start(timeout=10)


def test_the_unwrapped_token_after_a_v0_handshake(broker: tuple[BrokerProcess, str, str]) -> None:
    """Clients before Kafka 1.0 send SaslHandshake v0 and then the token as a bare frame; Kafka answers it bare."""
    _, sasl, _ = broker
    host, port = sasl.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(frame(17, 0, struct.pack(">h", 5) + b"PLAIN"))
        size = struct.unpack(">i", sock.recv(4))[0]
        assert struct.unpack(">h", sock.recv(size)[4:6])[0] == 0
        token = b"\x00alice\x00alice-pw"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert sock.recv(4) == b"\x00\x00\x00\x00"  # an empty bare answer: authenticated
        sock.sendall(frame(3, 1, struct.pack(">i", 0)))  # now Metadata is served
        size = struct.unpack(">i", sock.recv(4))[0]
        assert size > 8
