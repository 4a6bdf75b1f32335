"""Produce and consume throughput over PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL on one broker in one run, and
SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 authentications per second.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_security.py`` (about a minute; ``--messages N`` (200,000),
``--size B`` (100), ``--rounds R`` (2, the best of each is kept), ``--json FILE``, ``--auth-only`` for the
authentications alone).

The broker is one ``samsa.Broker`` in a child process (its own interpreter, so the client's librdkafka threads and
the broker do not share a GIL) with the four listeners; certificates come from ``openssl`` in a temporary
directory. For each listener, in turn and ``--rounds`` times: a confluent-kafka producer (linger.ms=5, acks=1)
sends ``--messages`` values of ``--size`` bytes to a one-partition topic of its own, then a consumer reads them
all back. Figures are messages per second and the ratio to PLAINTEXT. Under TLS a fetch's record data cannot go
out with ``sendfile`` (the kernel does not encrypt it): the region is read with ``os.pread`` into one buffer and
written through the TLS transport, so the consume ratio includes that copy and the encryption.

Authentications per second: one thread opening connections to SASL_PLAINTEXT and doing SaslHandshake v1 +
SaslAuthenticate (PLAIN: one token; SCRAM: client-first then client-final, the server's signature checked) then
closing, for 3 s each. The SCRAM credentials (4096 iterations, Kafka's minimum and kafka-configs' default) are
made with AlterUserScramCredentials; the bench's client salts the password once and reuses it (PBKDF2 is the
client's cost, not the broker's: the broker keeps StoredKey and ServerKey and does four HMACs and a hash per
login), so the figure is what the broker sustains.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_bench="bench-secret";'

CHILD = """
import json, sys, samsa
config = json.loads(sys.argv[1])
with samsa.Broker(config=config) as broker:
    print(json.dumps({n: p for n, _, p in broker.core.bound_addresses}), flush=True)
    sys.stdin.read()
"""


def make_pki(d: Path) -> None:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
        "-subj", "/CN=bench-ca")  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "b.key", "-out", "b.csr", "-subj", "/CN=localhost")
    (d / "b.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "b.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "b.pem",
        "-days", "1", "-extfile", "b.ext")  # fmt: skip
    (d / "keystore.pem").write_text((d / "b.key").read_text() + (d / "b.pem").read_text())


def client_conf(listener: str, port: int, pki: Path) -> dict[str, str | int]:
    conf: dict[str, str | int] = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": listener}
    if "SSL" in listener:
        conf["ssl.ca.location"] = str(pki / "ca.pem")
    if "SASL" in listener:
        conf |= {"sasl.mechanism": "PLAIN", "sasl.username": "bench", "sasl.password": "bench-secret"}
    return conf


def produce(conf: dict[str, str | int], topic: str, count: int, size: int) -> float:
    from confluent_kafka import Producer

    producer = Producer(conf | {"linger.ms": 5, "acks": 1, "queue.buffering.max.messages": 1_000_000})
    value = b"x" * size
    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    return count / (time.perf_counter() - start)


def consume(conf: dict[str, str | int], topic: str, count: int) -> float:
    from confluent_kafka import Consumer

    consumer = Consumer(
        conf | {"group.id": uuid.uuid4().hex, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    got, start = 0, None
    deadline = time.monotonic() + 120
    while got < count and time.monotonic() < deadline:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error() is None:
                start = start or time.perf_counter()
                got += 1
    elapsed = time.perf_counter() - (start or time.perf_counter())
    consumer.close()
    return got / elapsed if elapsed else 0.0


def _frame(api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    payload = struct.pack(">hhih", api_key, version, correlation, 5) + b"bench" + body
    return struct.pack(">i", len(payload)) + payload


def _read(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    return sock.recv(size, socket.MSG_WAITALL)


def _authenticate(sock: socket.socket, correlation: int, token: bytes) -> bytes:
    """One SaslAuthenticate v1 round trip; the answer's token (the error code must be NONE)."""
    sock.sendall(_frame(36, 1, correlation, struct.pack(">i", len(token)) + token))
    answer = _read(sock)
    assert struct.unpack_from(">h", answer, 4)[0] == 0, answer
    message_size = struct.unpack_from(">h", answer, 6)[0]  # the error message (null: -1)
    at = 8 + max(message_size, 0)
    size = struct.unpack_from(">i", answer, at)[0]
    return answer[at + 4 : at + 4 + size]


def scram_final(
    mechanism_name: str, server_first: bytes, client_first_bare: str, salted: dict[bytes, bytes]
) -> bytes:
    """The client-final message, the salted password computed once per (salt, iterations) and kept."""
    import base64

    from samsa.security.scram import MECHANISMS

    mechanism = MECHANISMS[mechanism_name]
    fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
    key = fields["s"].encode() + b":" + fields["i"].encode()
    if key not in salted:
        salted[key] = mechanism.salted_password(
            "bench-secret", base64.b64decode(fields["s"]), int(fields["i"])
        )
    without_proof = f"c=biws,r={fields['r']}"
    auth = f"{client_first_bare},{server_first.decode()},{without_proof}".encode()
    client_key = mechanism.client_key(salted[key])
    signature = mechanism.hmac(mechanism.hash(client_key), auth)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    return f"{without_proof},p={proof}".encode()


def authentications_per_s(port: int, mechanism: str = "PLAIN", seconds: float = 3.0) -> float:
    salted: dict[bytes, bytes] = {}
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(_frame(17, 1, 1, struct.pack(">h", len(mechanism)) + mechanism.encode()))
            _read(sock)
            if mechanism == "PLAIN":
                _authenticate(sock, 2, b"\x00bench\x00bench-secret")
            else:
                bare = f"n=bench,r={uuid.uuid4().hex}"
                server_first = _authenticate(sock, 2, f"n,,{bare}".encode())
                server_final = _authenticate(sock, 3, scram_final(mechanism, server_first, bare, salted))
                assert server_final.startswith(b"v="), server_final
        done += 1
    return done / (time.perf_counter() - start)


def add_scram_credentials(port: int) -> None:
    import asyncio

    from samsa.client import KafkaClient
    from samsa.security.scram import MECHANISMS

    async def add() -> None:
        async with KafkaClient(f"127.0.0.1:{port}", client_id="bench") as client:
            for name in SCRAM:
                mechanism = MECHANISMS[name]
                salt = uuid.uuid4().bytes
                salted = mechanism.salted_password("bench-secret", salt, 4096)
                result = await client.alter_user_scram_credentials(
                    [("bench", mechanism.type_code, 4096, salt, salted)]
                )
                assert result == {"bench": None}, result

    asyncio.run(add())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--auth-only", action="store_true", help="measure the authentications alone")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="samsa-bench-sec-") as tmp:
        pki = Path(tmp)
        make_pki(pki)
        config = {
            "listeners": ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki / "keystore.pem"),
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        }
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        try:
            assert child.stdout is not None
            ports = json.loads(child.stdout.readline())
            results: dict[str, dict[str, float]] = {
                name: {"produce": 0.0, "consume": 0.0} for name in LISTENERS
            }
            warm = client_conf("PLAINTEXT", ports["PLAINTEXT"], pki)
            if not args.auth_only:
                produce(warm, "bench-warm-up", args.messages, args.size)  # imports, first segment, page cache
                consume(warm, "bench-warm-up", args.messages)
            for round_ in range(0 if args.auth_only else args.rounds):
                for name in LISTENERS if round_ % 2 == 0 else LISTENERS[::-1]:
                    conf = client_conf(name, ports[name], pki)
                    topic = f"bench-{name.lower()}-{uuid.uuid4().hex[:6]}"
                    results[name]["produce"] = max(
                        results[name]["produce"], produce(conf, topic, args.messages, args.size)
                    )
                    results[name]["consume"] = max(
                        results[name]["consume"], consume(conf, topic, args.messages)
                    )
            add_scram_credentials(ports["PLAINTEXT"])
            auth = {m: authentications_per_s(ports["SASL_PLAINTEXT"], m) for m in ("PLAIN", *SCRAM)}
        finally:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(30)
    base = results["PLAINTEXT"]
    for mechanism, rate in auth.items():
        print(
            f"SASL {mechanism} authentications (handshake + authenticate, new connection each): {rate:,.0f}/s"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"throughput": results, "authentications_per_s": auth}, indent=2)
        )
    if args.auth_only:
        return
    print(
        f"{args.messages} messages of {args.size} B, best of {args.rounds} rounds (alternating order), confluent-kafka"
    )
    print(
        f"{'listener':16} {'produce msg/s':>14} {'x PLAINTEXT':>12} {'consume msg/s':>14} {'x PLAINTEXT':>12}"
    )
    for name in LISTENERS:
        r = results[name]
        print(
            f"{name:16} {r['produce']:14,.0f} {r['produce'] / base['produce']:12.2f} "
            f"{r['consume']:14,.0f} {r['consume'] / base['consume']:12.2f}"
        )


if __name__ == "__main__":
    main()
