"""TLS, mTLS and SASL PLAIN listeners side by side on one in-process broker, driven by confluent-kafka,
kafka-python, aiokafka and kcat; bad input gets Kafka's error or a closed connection and the broker serves on."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import samsa

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="b0b";'


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a broker certificate for 127.0.0.1/localhost and a client certificate (CN=alice,OU=eng), as PEM."""
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=samsa-test-ca", cwd=d)  # fmt: skip
    for name, subj, ext in (
        ("broker", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
        ("client", "/OU=eng/CN=alice", "basicConstraints=CA:FALSE"),
    ):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", subj, cwd=d)  # fmt: skip
        (d / f"{name}.ext").write_text(ext + "\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=d)  # fmt: skip
        (d / f"{name}-keystore.pem").write_text(
            (d / f"{name}.key").read_text() + (d / f"{name}.pem").read_text()
        )
    return d


@pytest.fixture(scope="module")
def broker(pki: Path) -> Iterator[samsa.Broker]:
    config = {
        "listeners": ",".join(
            f"{name}://127.0.0.1:0" for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "MTLS")
        ),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
        "SASL_SSL:SASL_SSL,MTLS:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki / "broker-keystore.pem"),
        # PEM text in the key itself, as Kafka's ssl.truststore.certificates takes it
        "listener.name.mtls.ssl.truststore.type": "PEM",
        "listener.name.mtls.ssl.truststore.certificates": (pki / "ca.pem").read_text(),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=.*$/$1/L,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": "600000",
    }
    with samsa.Broker(config=config) as b:
        yield b


def _port(broker: samsa.Broker, listener: str) -> int:
    return next(port for name, _, port in broker.core.bound_addresses if name == listener)


def _confluent_config(broker: samsa.Broker, pki: Path, listener: str) -> dict[str, str]:
    protocol = {"MTLS": "SSL"}.get(listener, listener)
    conf = {"bootstrap.servers": f"127.0.0.1:{_port(broker, listener)}", "security.protocol": protocol}
    if "SSL" in protocol:
        conf["ssl.ca.location"] = str(pki / "ca.pem")
    if listener == "MTLS":
        conf |= {
            "ssl.certificate.location": str(pki / "client.pem"),
            "ssl.key.location": str(pki / "client.key"),
        }
    if "SASL" in protocol:
        conf |= {"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    return conf


@pytest.mark.parametrize("listener", ["SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL"])
def test_confluent_kafka_produces_and_consumes_on_each_listener(
    broker: samsa.Broker, pki: Path, listener: str
) -> None:
    from confluent_kafka import Consumer, Producer

    topic = f"t-{listener.lower()}-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic)
    conf = _confluent_config(broker, pki, listener)
    producer = Producer(conf)
    for i in range(100):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(15) == 0
    consumer = Consumer(conf | {"group.id": f"g-{listener}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 100 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert got == [b"v%d" % i for i in range(100)]


def test_wrong_password_and_unknown_user_fail_with_kafkas_error(broker: samsa.Broker, pki: Path) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    for user, password in (("alice", "wrong"), ("mallory", "x")):
        errors: list[KafkaError] = []
        conf = _confluent_config(broker, pki, "SASL_PLAINTEXT") | {
            "sasl.username": user,
            "sasl.password": password,
        }
        admin = AdminClient(conf | {"error_cb": errors.append})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=3)
        admin.poll(1)  # serves error_cb
        assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
        assert "Authentication failed" in str(errors[0])


def _frame(api_key: int, version: int, body: bytes = b"", client_id: bytes = b"t") -> bytes:
    header = struct.pack(">hhih", api_key, version, 7, len(client_id)) + client_id
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _recv_or_closed(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    chunks = b""
    try:
        while chunk := sock.recv(65536):
            chunks += chunk
    except TimeoutError:
        return b"<open>"
    return chunks


def test_request_before_authentication_closes_the_connection(
    broker: samsa.Broker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="samsa.broker.network")
    with socket.create_connection(("127.0.0.1", _port(broker, "SASL_PLAINTEXT"))) as sock:
        sock.sendall(_frame(3, 1, struct.pack(">i", -1)))  # Metadata v1, all topics
        assert _recv_or_closed(sock) == b""
    assert "before it authenticated on SASL listener" in caplog.text


def test_unknown_mechanism_answers_unsupported_with_the_enabled_ones(broker: samsa.Broker) -> None:
    with socket.create_connection(("127.0.0.1", _port(broker, "SASL_PLAINTEXT"))) as sock:
        sock.sendall(_frame(17, 1, struct.pack(">h", 5) + b"GSSAP"))
        answer = _recv_or_closed(sock)
    _size, correlation, error, count = struct.unpack_from(">iihi", answer)
    assert (correlation, error, count) == (7, 33, 1)  # UNSUPPORTED_SASL_MECHANISM, [PLAIN]
    assert answer[14:21] == b"\x00\x05PLAIN"


def test_legacy_unwrapped_plain_token_authenticates(broker: samsa.Broker) -> None:
    """SaslHandshake v0, then the PLAIN token as a bare frame (what pre-1.0 clients send)."""
    with socket.create_connection(("127.0.0.1", _port(broker, "SASL_PLAINTEXT"))) as sock:
        sock.sendall(_frame(17, 0, struct.pack(">h", 5) + b"PLAIN"))
        sock.settimeout(5)
        handshake = sock.recv(100)
        assert struct.unpack_from(">iih", handshake)[1:] == (7, 0)
        token = b"\x00alice\x00alice-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert sock.recv(4) == b"\x00\x00\x00\x00"
        sock.sendall(_frame(3, 1, struct.pack(">i", -1)))
        size = struct.unpack(">i", sock.recv(4))[0]
        assert size > 8


@pytest.mark.parametrize(
    "garbage", [b"\x00\x00\x00\x0c\x00\x12\x00\x00", b"\x16\x03\x01\xff\xff" + b"x" * 100]
)
def test_plaintext_or_garbage_on_a_tls_port_is_closed_and_others_are_served(
    broker: samsa.Broker, pki: Path, garbage: bytes
) -> None:
    from confluent_kafka.admin import AdminClient

    with socket.create_connection(("127.0.0.1", _port(broker, "SSL"))) as sock:
        sock.sendall(garbage)
        assert _recv_or_closed(sock) in (b"",) or not _recv_or_closed(sock).startswith(b"\x00\x00")
    assert AdminClient(_confluent_config(broker, pki, "SSL")).list_topics(timeout=10).brokers


def test_untrusted_client_certificate_is_refused_on_mtls(
    broker: samsa.Broker, pki: Path, tmp_path: Path
) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "rogue.key", "-out", "rogue.pem",
             "-days", "1", "-subj", "/CN=rogue", cwd=tmp_path)  # fmt: skip
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    context.load_cert_chain(str(tmp_path / "rogue.pem"), str(tmp_path / "rogue.key"))
    with (
        socket.create_connection(("127.0.0.1", _port(broker, "MTLS"))) as raw,
        pytest.raises((ssl.SSLError, ConnectionError)),
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(_frame(18, 0))
        if not tls.recv(4):
            raise ConnectionResetError("closed")
    assert _port(broker, "MTLS")  # the listener is still up


def test_kafka_python_and_aiokafka_over_sasl_ssl(broker: samsa.Broker, pki: Path) -> None:
    import aiokafka
    import kafka

    topic = f"py-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic)
    common = {
        "bootstrap_servers": f"127.0.0.1:{_port(broker, 'SASL_SSL')}",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "bob",
        "sasl_plain_password": "b0b",
    }
    ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    producer = kafka.KafkaProducer(ssl_context=ctx, **common)
    producer.send(topic, b"from-kafka-python").get(timeout=15)
    producer.close()

    async def consume() -> list[bytes]:
        consumer = aiokafka.AIOKafkaConsumer(topic, ssl_context=ctx, auto_offset_reset="earliest", **common)
        await consumer.start()
        try:
            batch = await consumer.getmany(timeout_ms=10000)
            return [m.value for records in batch.values() for m in records]
        finally:
            await consumer.stop()

    assert asyncio.run(consume()) == [b"from-kafka-python"]


def test_kcat_over_sasl_ssl_and_mtls(broker: samsa.Broker, pki: Path) -> None:
    topic = f"kcat-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic)
    for listener in ("SASL_SSL", "MTLS"):
        flags = [
            f"-X{k}={v}"
            for k, v in _confluent_config(broker, pki, listener).items()
            if k != "bootstrap.servers"
        ]
        brokers = ["-b", f"127.0.0.1:{_port(broker, listener)}"]
        subprocess.run(["kcat", *brokers, *flags, "-P", "-t", topic], input=f"{listener}\n".encode(),
                       check=True, timeout=30)  # fmt: skip
    out = subprocess.run(["kcat", "-b", f"127.0.0.1:{_port(broker, 'PLAINTEXT')}", "-C", "-t", topic, "-e",
                          "-o", "beginning"], check=True, timeout=30, capture_output=True)  # fmt: skip
    assert out.stdout.decode().split() == ["SASL_SSL", "MTLS"]
