"""What each real client does in a golden capture, and what its requests must decode to.

Each scenario produces ``values(client)`` to partition 0 of ``topic(client)`` with a fixed client id, then reads
them back from the beginning. Shared by ``record_frames.py`` (which stores the frames) and ``test_golden.py``
(which checks stored frames and a live capture).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "kcat")


@dataclass(frozen=True)
class Expect:
    client_id: str
    api_versions_first: tuple[int, ...]  # the ApiVersions versions sent on a new connection, in order
    acks: int


EXPECT = {
    # librdkafka opens with ApiVersions v3; kafka-python with v4, then retries with our max (3) after the
    # UNSUPPORTED_VERSION answer; aiokafka always sends v0 (clients.md 1.3). acks: clients.md 1.4.
    "confluent-kafka": Expect("golden-ck", (3,), -1),
    "kcat": Expect("golden-kcat", (3,), -1),
    "kafka-python": Expect("golden-kp", (4, 3), -1),
    "aiokafka": Expect("golden-ak", (0,), 1),
}


def topic(client: str) -> str:
    return f"golden-{client}"


def values(client: str) -> list[bytes]:
    return [f"{client} value {n}".encode() for n in range(3)]


def run(client: str, bootstrap: str) -> list[bytes]:
    """Produce then consume with the real client; return the consumed values."""
    return SCENARIOS[client](bootstrap, topic(client), values(client), EXPECT[client].client_id)


def _ck(bootstrap: str, name: str, items: list[bytes], client_id: str) -> list[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5})
    for value in items:
        producer.produce(name, value=value, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": "golden",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(name, 0, OFFSET_BEGINNING)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < len(items) and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=10, timeout=0.5):
                assert message.error() is None, message.error()
                got.append(message.value())
    finally:
        consumer.close()
    return got


def _kp(bootstrap: str, name: str, items: list[bytes], client_id: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id)
    for future in [producer.send(name, value=value, partition=0) for value in items]:
        future.get(30)
    producer.close(10)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=client_id, enable_auto_commit=False)
    tp = TopicPartition(name, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < len(items) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [r.value for r in records]
    finally:
        consumer.close()
    return got


def _ak(bootstrap: str, name: str, items: list[bytes], client_id: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=client_id)
        await producer.start()
        try:
            for value in items:
                await producer.send_and_wait(name, value=value, partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, client_id=client_id, enable_auto_commit=False
        )
        await consumer.start()
        tp = TopicPartition(name, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        try:
            while len(got) < len(items) and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got += [r.value for r in records]
        finally:
            await consumer.stop()
        return got

    return asyncio.run(scenario())


def _kcat(bootstrap: str, name: str, items: list[bytes], client_id: str) -> list[bytes]:
    kcat = shutil.which("kcat") or "/usr/bin/kcat"
    common = ["-b", bootstrap, "-t", name, "-p", "0", "-X", f"client.id={client_id}"]
    subprocess.run(
        [kcat, "-P", *common], input=b"\n".join(items) + b"\n", check=True, timeout=60, capture_output=True
    )
    done = subprocess.run(
        [kcat, "-C", *common, "-o", "beginning", "-c", str(len(items)), "-e", "-q", "-f", "%s\n"],
        check=True,
        timeout=60,
        capture_output=True,
    )
    return done.stdout.splitlines()


SCENARIOS: dict[str, Callable[[str, str, list[bytes], str], list[bytes]]] = {
    "confluent-kafka": _ck,
    "kafka-python": _kp,
    "aiokafka": _ak,
    "kcat": _kcat,
}
