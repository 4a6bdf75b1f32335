"""SASL/SCRAM through real clients: credentials made with ``samsa configs`` (AlterUserScramCredentials), then
confluent-kafka, kafka-python, aiokafka and kcat produce and consume with SCRAM-SHA-256 and SCRAM-SHA-512 over
SASL_PLAINTEXT and SASL_SSL; a wrong password, an unknown user and a deleted credential get Kafka's error while the
broker serves everyone else; a session re-authenticates (``connections.max.reauth.ms``); the credentials survive a
restart."""

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
from aiokafka.helpers import create_ssl_context
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as PyPartition

from samsa.cli.app import cli
from samsa.client.connection import BrokerConnection
from samsa.client.errors import KafkaError as ClientError
from samsa.protocol import ApiKey
from samsa.protocol.messages.metadata import MetadataRequest
from samsa.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from samsa.protocol.messages.sasl_handshake import SaslHandshakeRequest
from samsa.security.scram import MECHANISMS as SCRAM
from samsa.security.scram import ScramClient
from tests.clients.harness import BrokerProcess, free_port
from tests.security.test_tls import Tls

pytestmark = [pytest.mark.timeout(120), pytest.mark.clients]

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
FAILURE = "Authentication failed during authentication due to invalid credentials with SASL mechanism"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return Tls(tmp_path_factory.mktemp("scram-tls"))


class ScramBroker:
    """A broker process with PLAINTEXT (for the admin steps), SASL_PLAINTEXT and SASL_SSL listeners serving both
    SCRAMs."""

    def __init__(self, proc: BrokerProcess, sasl: str, sasl_ssl: str) -> None:
        self.proc, self.sasl, self.sasl_ssl = proc, sasl, sasl_ssl

    def configs(self, *args: str) -> str:
        done = CliRunner().invoke(
            cli, ["configs", "--bootstrap-server", self.proc.bootstrap, "--entity-type", "users", *args]
        )
        assert done.exit_code == 0, done.output
        return done.stdout


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, tls: Tls) -> Iterator[ScramBroker]:
    plain, sasl, sasl_ssl = free_port(), free_port(), free_port()
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("samsa-scram"),
        port=plain,
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
            f"SASL_SSL://127.0.0.1:{sasl_ssl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server_file),
            "connections.max.reauth.ms": "1500",
        },
    )
    proc.start()
    scram = ScramBroker(proc, f"127.0.0.1:{sasl}", f"127.0.0.1:{sasl_ssl}")
    for mechanism in MECHANISMS:
        scram.configs("--entity-name", "alice", "--alter", "--add-config", f"{mechanism}=[password=alice-pw]")
    scram.configs(
        "--entity-name", "bob", "--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=b]"
    )
    yield scram
    proc.stop()


def confluent(
    bootstrap: str, mechanism: str, user: str = "alice", password: str = "alice-pw", **extra: object
) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "sasl_plaintext",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def round_trip(settings: dict[str, object], topic: str) -> list[bytes]:
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


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_over_sasl_plaintext_and_sasl_ssl(
    broker: ScramBroker, tls: Tls, mechanism: str
) -> None:
    assert round_trip(confluent(broker.sasl, mechanism), f"scram-{mechanism}") == [b"secret"]
    over_tls = confluent(
        broker.sasl_ssl, mechanism, **{"security.protocol": "sasl_ssl", "ssl.ca.location": str(tls.ca_file)}
    )
    assert round_trip(over_tls, f"scram-ssl-{mechanism}") == [b"secret"]


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
     ("SASL_SSL", "SCRAM-SHA-256")],
)  # fmt: skip
def test_kafka_python_aiokafka_and_kcat(broker: ScramBroker, tls: Tls, protocol: str, mechanism: str) -> None:
    topic = f"scram-clients-{protocol}-{mechanism}"
    bootstrap = broker.sasl if protocol == "SASL_PLAINTEXT" else broker.sasl_ssl
    over_tls = protocol == "SASL_SSL"
    login = {"security_protocol": protocol, "sasl_mechanism": mechanism}
    auth: dict[str, object] = {"sasl_plain_username": "alice", "sasl_plain_password": "alice-pw", **login}
    kp_tls = {"ssl_cafile": str(tls.ca_file)} if over_tls else {}
    producer = KafkaProducer(bootstrap_servers=bootstrap, **auth, **kp_tls)
    producer.send(topic, b"kafka-python", partition=0).get(timeout=30)
    producer.close()

    async def aio() -> list[bytes]:
        aio_tls = {"ssl_context": create_ssl_context(cafile=str(tls.ca_file))} if over_tls else {}
        writer = AIOKafkaProducer(bootstrap_servers=bootstrap, **auth, **aio_tls)
        await writer.start()
        try:
            await writer.send_and_wait(topic, b"aiokafka", partition=0)
        finally:
            await writer.stop()
        reader = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, auto_offset_reset="earliest", **auth, **aio_tls
        )
        await reader.start()
        try:
            reader.assign([AioPartition(topic, 0)])
            batches = await reader.getmany(timeout_ms=10_000, max_records=10)
            return [m.value for records in batches.values() for m in records]
        finally:
            await reader.stop()

    assert asyncio.run(aio()) == [b"kafka-python", b"aiokafka"]
    kcat_auth = ["-X", f"security.protocol={protocol.lower()}", "-X", f"sasl.mechanisms={mechanism}",
                 "-X", "sasl.username=alice", "-X", "sasl.password=alice-pw"]  # fmt: skip
    if over_tls:
        kcat_auth += ["-X", f"ssl.ca.location={tls.ca_file}"]
    read = subprocess.run(
        ["kcat", "-b", bootstrap, *kcat_auth, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e"],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert read.stdout.split() == [b"kafka-python", b"aiokafka"], read.stderr
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
        **auth,
        **kp_tls,
    )
    consumer.assign([PyPartition(topic, 0)])
    assert next(consumer).value == b"kafka-python"
    consumer.close()


def authentication_error(settings: dict[str, object]) -> KafkaError:
    errors: list[KafkaError] = []
    producer = Producer({**settings, "error_cb": errors.append})
    producer.produce("scram-denied", b"x")
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "no error"
    return errors[0]


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("SCRAM-SHA-256", "alice", "wrong"),
        ("SCRAM-SHA-512", "mallory", "alice-pw"),
        ("SCRAM-SHA-256", "bob", "b"),  # bob has a SCRAM-SHA-512 credential only
    ],
)
def test_bad_credentials_fail_with_kafkas_error(
    broker: ScramBroker, mechanism: str, user: str, password: str
) -> None:
    error = authentication_error(confluent(broker.sasl, mechanism, user, password))
    assert error.code() == KafkaError._AUTHENTICATION, error
    assert f"{FAILURE} {mechanism}" in error.str()
    assert round_trip(confluent(broker.sasl, mechanism), f"scram-after-{user}") == [b"secret"]
    assert "failed authentication with 127.0.0.1" in "".join(broker.proc.output)


def test_a_deleted_credential_no_longer_authenticates(broker: ScramBroker) -> None:
    broker.configs("--entity-name", "carol", "--alter", "--add-config", "SCRAM-SHA-256=[password=c]")
    assert round_trip(confluent(broker.sasl, "SCRAM-SHA-256", "carol", "c"), "scram-carol") == [b"secret"]
    broker.configs("--entity-name", "carol", "--alter", "--delete-config", "SCRAM-SHA-256")
    error = authentication_error(confluent(broker.sasl, "SCRAM-SHA-256", "carol", "c"))
    assert f"{FAILURE} SCRAM-SHA-256" in error.str()
    described = broker.configs("--describe")
    assert "'carol'" not in described and "'bob' are SCRAM-SHA-512=iterations=8192" in described


def test_clients_re_authenticate_with_scram(broker: ScramBroker) -> None:
    """connections.max.reauth.ms=1500: librdkafka and kafka-python re-authenticate (KIP-368) on their
    connections, SCRAM's two round trips again, and keep producing for longer than two sessions, never closed."""
    errors: list[KafkaError] = []
    settings = confluent(
        broker.sasl, "SCRAM-SHA-512", error_cb=errors.append, **{"client.id": "reauth-rdkafka"}
    )
    producer = Producer(settings)
    kp = KafkaProducer(
        bootstrap_servers=broker.sasl, client_id="reauth-kp", security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice", sasl_plain_password="alice-pw",
    )  # fmt: skip
    deadline = time.monotonic() + 4
    sent = 0
    while time.monotonic() < deadline:
        producer.produce("scram-reauth", b"x", partition=0)
        producer.flush(10)
        kp.send("scram-reauth", b"y", partition=0).get(timeout=30)
        sent += 1
        time.sleep(0.1)
    kp.flush()
    assert producer.flush(10) == 0 and not errors, errors
    assert sent > 20
    assert "expired: it did not re-authenticate" not in "".join(broker.proc.output)
    kp.close()


async def scram_login(
    bootstrap: str, user: str, password: str, mechanism: str = "SCRAM-SHA-256", client_id: str = "scram-login"
) -> BrokerConnection | None:
    """A connection authenticated with samsa's own SCRAM client (the server's signature checked), or None when
    the broker refused the credentials (it closes the connection, as Kafka)."""
    host, port = bootstrap.rsplit(":", 1)
    connection = BrokerConnection(host, int(port), client_id=client_id, request_timeout_ms=10_000)
    await connection.open()
    await connection.request(SaslHandshakeRequest(mechanism), ApiKey.SASL_HANDSHAKE, 1)
    scram = ScramClient(SCRAM[mechanism], user, password)
    first = await connection.request(SaslAuthenticateRequest(scram.first()), ApiKey.SASL_AUTHENTICATE, 1)
    if first.error_code == 0:
        final = await connection.request(
            SaslAuthenticateRequest(scram.final(first.auth_bytes)), ApiKey.SASL_AUTHENTICATE, 1
        )
        if final.error_code == 0:
            scram.verify(final.auth_bytes)  # the broker proved it holds the user's ServerKey
            connection.session_lifetime_ms = final.session_lifetime_ms  # type: ignore[attr-defined]
            return connection
    await connection.close()
    return None


def test_a_session_not_re_authenticated_is_closed(broker: ScramBroker) -> None:
    """A client that authenticated with SCRAM and does not re-authenticate is served until its session ends, and
    its connection is closed at its first request after (one log line)."""

    async def session() -> tuple[int, str]:
        host, port = broker.sasl.split(":")
        connection = BrokerConnection(host, int(port), client_id="no-reauth", request_timeout_ms=10_000)
        await connection.open()
        try:
            await connection.request(SaslHandshakeRequest("SCRAM-SHA-256"), ApiKey.SASL_HANDSHAKE, 1)
            scram = ScramClient(SCRAM["SCRAM-SHA-256"], "alice", "alice-pw")
            first = await connection.request(
                SaslAuthenticateRequest(scram.first()), ApiKey.SASL_AUTHENTICATE, 1
            )
            final = await connection.request(
                SaslAuthenticateRequest(scram.final(first.auth_bytes)), ApiKey.SASL_AUTHENTICATE, 1
            )
            scram.verify(final.auth_bytes)  # the broker proved it holds the user's ServerKey
            served = await connection.request(MetadataRequest(topics=[]), ApiKey.METADATA, 1)
            await asyncio.sleep(final.session_lifetime_ms / 1000 + 0.2)
            with pytest.raises(ClientError, match="closed"):
                await connection.request(MetadataRequest(topics=[]), ApiKey.METADATA, 1)
            return final.session_lifetime_ms, served.controller_id
        finally:
            await connection.close()

    lifetime, _ = asyncio.run(session())
    assert lifetime == 1500
    time.sleep(0.2)
    assert "session of User:alice (client no-reauth)" in "".join(broker.proc.output)


def test_credentials_survive_a_restart(broker: ScramBroker) -> None:
    proc = broker.proc
    proc.stop()
    proc.start()
    assert round_trip(confluent(broker.sasl, "SCRAM-SHA-512", "bob", "b"), "scram-restart") == [b"secret"]
    assert "SCRAM-SHA-256=iterations=4096" in broker.configs("--entity-name", "alice", "--describe")


def test_scram_with_bare_tokens_after_a_v0_handshake(broker: ScramBroker) -> None:
    """Clients before Kafka 1.0 send SaslHandshake v0, then SCRAM's messages as bare frames, and read the broker's
    answers bare too."""

    def bare(sock: socket.socket, token: bytes) -> bytes:
        sock.sendall(struct.pack(">i", len(token)) + token)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        return sock.recv(size, socket.MSG_WAITALL)

    host, port = broker.sasl.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        header = struct.pack(">hhih", 17, 0, 1, -1)
        body = struct.pack(">h", 13) + b"SCRAM-SHA-256"
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        assert struct.unpack(">h", sock.recv(size, socket.MSG_WAITALL)[4:6])[0] == 0
        scram = ScramClient(SCRAM["SCRAM-SHA-256"], "alice", "alice-pw")
        scram.verify(bare(sock, scram.final(bare(sock, scram.first()))))
        header = struct.pack(">hhih", 3, 1, 2, -1)  # Metadata v1, no topics: served now
        sock.sendall(struct.pack(">i", len(header) + 4) + header + struct.pack(">i", 0))
        assert struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0] > 8
