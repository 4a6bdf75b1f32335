"""SSL listeners through real clients: confluent-kafka, kafka-python, aiokafka and kcat produce and read over TLS
beside a PLAINTEXT listener; a client certificate (mTLS) becomes the principal through Kafka's mapping rules,
seen here by a client quota set for that user; plaintext, garbage and untrusted certificates on the TLS port get
a closed connection while the broker serves everyone else; a listener without its keystore stops the start."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer

from samsa.cli.app import cli
from tests.clients.harness import BrokerProcess, free_port

pytestmark = [pytest.mark.timeout(120), pytest.mark.clients]


class Tls:
    """A CA, the broker's certificate for 127.0.0.1, and a client certificate for alice, as PEM files."""

    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA()
        self.ca_file = directory / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        server = self.ca.issue_cert("127.0.0.1", "localhost")
        self.server_file = directory / "server.pem"
        server.private_key_and_cert_chain_pem.write_to_path(str(self.server_file))
        alice = self.ca.issue_cert("alice@example.com", common_name="alice", organization_name="acme")
        self.alice_cert, self.alice_key = directory / "alice.pem", directory / "alice.key"
        alice.cert_chain_pems[0].write_to_path(str(self.alice_cert))
        alice.private_key_pem.write_to_path(str(self.alice_key))
        stranger = trustme.CA().issue_cert("stranger@example.com", common_name="stranger")
        self.stranger_cert, self.stranger_key = directory / "stranger.pem", directory / "stranger.key"
        stranger.cert_chain_pems[0].write_to_path(str(self.stranger_cert))
        stranger.private_key_pem.write_to_path(str(self.stranger_key))


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return Tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, tls: Tls) -> Iterator[tuple[BrokerProcess, str]]:
    plain, secure = free_port(), free_port()
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("samsa-tls"),
        port=plain,
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server_file),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls.ca_file),
            "ssl.client.auth": "requested",
            "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT",
        },
    )
    proc.start()
    yield proc, f"127.0.0.1:{secure}"
    proc.stop()


def confluent_ssl(tls: Tls, bootstrap: str, **extra: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "ssl",
        "ssl.ca.location": str(tls.ca_file),
        **extra,
    }


def test_confluent_kafka_produces_and_reads_over_tls(broker: tuple[BrokerProcess, str], tls: Tls) -> None:
    _, secure = broker
    producer = Producer(confluent_ssl(tls, secure))
    for i in range(100):
        producer.produce("tls-confluent", f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(confluent_ssl(tls, secure, **{"group.id": "tls-readers"}))
    consumer.assign([TopicPartition("tls-confluent", 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 100 and time.monotonic() < deadline:
        got += [m.value() for m in consumer.consume(100, 0.5) if not m.error()]
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(100)]  # fetched data, sent without sendfile under TLS


def test_kafka_python_and_aiokafka_over_tls(broker: tuple[BrokerProcess, str], tls: Tls) -> None:
    _, secure = broker
    producer = KafkaProducer(bootstrap_servers=secure, security_protocol="SSL", ssl_cafile=str(tls.ca_file))
    producer.send("tls-python", b"from kafka-python", partition=0).get(timeout=30)
    producer.close()

    async def with_aiokafka() -> list[bytes]:
        context = ssl.create_default_context(cafile=str(tls.ca_file))
        aio = AIOKafkaProducer(bootstrap_servers=secure, security_protocol="SSL", ssl_context=context)
        await aio.start()
        try:
            await aio.send_and_wait("tls-python", b"from aiokafka", partition=0)
        finally:
            await aio.stop()
        reader = AIOKafkaConsumer(
            bootstrap_servers=secure,
            security_protocol="SSL",
            ssl_context=context,
            auto_offset_reset="earliest",
        )
        await reader.start()
        try:
            reader.assign([__import__("aiokafka").TopicPartition("tls-python", 0)])
            batches = await reader.getmany(timeout_ms=10_000, max_records=10)
            return [m.value for records in batches.values() for m in records]
        finally:
            await reader.stop()

    assert asyncio.run(with_aiokafka()) == [b"from kafka-python", b"from aiokafka"]
    consumer = KafkaConsumer(
        bootstrap_servers=secure, security_protocol="SSL", ssl_cafile=str(tls.ca_file),
        auto_offset_reset="earliest", consumer_timeout_ms=10_000,
    )  # fmt: skip
    consumer.assign([__import__("kafka").TopicPartition("tls-python", 0)])
    assert [next(consumer).value, next(consumer).value] == [b"from kafka-python", b"from aiokafka"]
    consumer.close()


def test_kcat_over_tls(broker: tuple[BrokerProcess, str], tls: Tls) -> None:
    _, secure = broker
    ssl_args = ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={tls.ca_file}"]
    produced = subprocess.run(
        ["kcat", "-b", secure, *ssl_args, "-P", "-t", "tls-kcat", "-p", "0"],
        input=b"one\ntwo\n", capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    read = subprocess.run(
        ["kcat", "-b", secure, *ssl_args, "-C", "-t", "tls-kcat", "-p", "0", "-o", "beginning", "-e"],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert read.stdout.split() == [b"one", b"two"], read.stderr


def test_a_client_certificate_is_the_principal(broker: tuple[BrokerProcess, str], tls: Tls) -> None:
    """alice's certificate maps to User:alice (the listener's rule); a quota for user alice slows her alone."""
    proc, secure = broker
    quota = CliRunner().invoke(
        cli,
        ["configs", "--bootstrap-server", proc.bootstrap, "--user", "alice", "--alter", "--add-config",
         "producer_byte_rate=1000"],
    )  # fmt: skip
    assert quota.exit_code == 0, quota.output

    def throttled(**cert: str) -> bool:
        throttles: list[float] = []
        producer = Producer(
            confluent_ssl(tls, secure, **cert, **{"batch.size": "1000", "linger.ms": "0"})
            | {"throttle_cb": lambda event: throttles.append(event.throttle_time)}  # type: ignore[dict-item]
        )
        for _ in range(25):  # 10 s of 1,000 B/s pass at once, the next batches are over the quota
            producer.produce("tls-principal", b"x" * 900, partition=0)
            producer.flush(10)
            if throttles:
                break
        return bool(throttles)

    assert throttled(
        **{"ssl.certificate.location": str(tls.alice_cert), "ssl.key.location": str(tls.alice_key)}
    )
    assert not throttled()  # User:ANONYMOUS has no quota


def test_bad_tls_clients_are_closed_and_others_served(broker: tuple[BrokerProcess, str], tls: Tls) -> None:
    proc, secure = broker
    host, port = secure.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as plain:  # a Kafka request in plaintext
        plain.sendall(bytes.fromhex("0000000a0012000000000001ffff"))
        assert _closed(plain)
    with socket.create_connection((host, int(port)), timeout=10) as garbage:
        garbage.sendall(b"\x16\x03\x01" + bytes(range(256)) * 4)
        assert _closed(garbage)
    context = ssl.create_default_context(cafile=str(tls.ca_file))
    context.load_cert_chain(str(tls.stranger_cert), str(tls.stranger_key))  # a certificate of an unknown CA
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        refused = False
        try:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as wrapped:
                wrapped.sendall(bytes.fromhex("0000000a0012000000000001ffff"))
                refused = wrapped.recv(4) == b""
        except (ssl.SSLError, OSError):
            refused = True
        assert refused
    producer = Producer(confluent_ssl(tls, secure))
    producer.produce("tls-after", b"still served")
    assert producer.flush(30) == 0
    assert "TLS handshake with 127.0.0.1" in "".join(proc.output)


def _closed(sock: socket.socket) -> bool:
    """Whether the broker closes the connection within 10 s (a TLS alert may come first)."""
    sock.settimeout(10)
    try:
        while sock.recv(4096):
            pass
    except ConnectionError:
        return True
    except TimeoutError:
        return False
    return True


def test_an_ssl_listener_without_its_keystore_stops_the_start(tmp_path: Path) -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "samsa.cli", "serve", "--override", f"listeners=SSL://127.0.0.1:{port}",
         "--override", f"log.dirs={tmp_path}", "--override", "ssl.keystore.type=PEM"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert (
        "listener SSL: an SSL listener needs ssl.keystore.type=PEM with ssl.keystore.location" in done.stderr
    )
