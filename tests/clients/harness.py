"""Run a real Samsa broker process and drive it with real Kafka clients.

Each client adapter produces and consumes ``Message`` values the same way an application would, so a test can
produce with one client and consume with another and compare bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

READY_MARKER = "started"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running_broker(data_dir: Path) -> Iterator[BrokerProcess]:
    """A ``samsa serve`` process on ``data_dir`` for the ``with`` block: started, and stopped after it."""
    proc = BrokerProcess(data_dir=data_dir)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def stop_process(process: subprocess.Popen[Any] | None, sig: int, timeout: float) -> int | None:
    """Signal a server process and wait for it, killing it after ``timeout``: its exit code (None: none ran)."""
    if process is None:
        return None
    if process.poll() is None:
        process.send_signal(sig)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


@dataclass(frozen=True)
class Message:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None


@dataclass(frozen=True)
class Consumed:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int

    def message(self) -> Message:
        return Message(self.key, self.value, self.headers, self.timestamp)


@dataclass
class BrokerProcess:
    """A ``samsa serve`` child process on a free port, with its log dir under ``data_dir``."""

    data_dir: Path
    node_id: int = 1
    overrides: dict[str, str] = field(default_factory=dict)
    port: int = 0
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)
    open_files_limit: int | None = None  # RLIMIT_NOFILE (soft and hard) for the broker process

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> None:
        if not self.port:
            self.port = free_port()
        args = [sys.executable, "-m", "samsa.cli", "serve"]
        settings = {
            "node.id": str(self.node_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data_dir),
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "4",
            **self.overrides,
        }
        for key, value in settings.items():
            args += ["--override", f"{key}={value}"]
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=self._limit_open_files if self.open_files_limit else None,
        )
        deadline = time.monotonic() + timeout
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.output.append(line)
            if READY_MARKER in line:
                self._drain_in_background()
                return
        self.stop()
        raise RuntimeError("broker did not start:\n" + "".join(self.output))

    def _limit_open_files(self) -> None:
        import resource

        assert self.open_files_limit is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files_limit, self.open_files_limit))

    def _drain_in_background(self) -> None:
        import threading

        def drain() -> None:
            assert self.process is not None and self.process.stdout is not None
            for line in self.process.stdout:
                self.output.append(line)

        threading.Thread(target=drain, daemon=True).start()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int | None:
        code = stop_process(self.process, sig, timeout)
        self.process = None
        return code

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


# --- confluent-kafka (librdkafka) ------------------------------------------------------------------------------


def create_topic_answered(bootstrap: str, topic: Any, attempts: int = 3) -> None:
    """Create ``topic`` (a confluent-kafka ``NewTopic``), asking again with a new admin client when the first gets
    no answer: librdkafka's admin client, just after a cluster starts or its controller moved, sometimes never
    sends CreateTopics (seen about 1 in 15). A later attempt told TOPIC_ALREADY_EXISTS means an earlier one landed."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    for attempt in range(attempts):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        try:
            admin.create_topics([topic], request_timeout=15)[topic.topic].result(20)
            return
        except KafkaException as exc:
            code = exc.args[0].code()
            if attempt > 0 and code == KafkaError.TOPIC_ALREADY_EXISTS:
                return
            if code != KafkaError._TIMED_OUT or attempt == attempts - 1:
                raise
        except TimeoutError:
            if attempt == attempts - 1:
                raise


def ck_produce(
    bootstrap: str,
    topic: str,
    messages: Sequence[Message],
    codec: str = "none",
    partition: int = 0,
    **extra: object,
) -> list[tuple[int, int]]:
    from confluent_kafka import Producer

    conf: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "compression.type": codec,
        "linger.ms": 5,
        **extra,
    }
    producer = Producer(conf)
    acked: list[tuple[int, int]] = []
    errors: list[object] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.append((msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    for m in messages:
        kwargs: dict[str, object] = {
            "key": m.key,
            "value": m.value,
            "partition": partition,
            "on_delivery": on_delivery,
        }
        if m.headers:
            kwargs["headers"] = list(m.headers)
        if m.timestamp is not None:
            kwargs["timestamp"] = m.timestamp
        producer.produce(topic, **kwargs)
    remaining = producer.flush(30)
    assert remaining == 0 and not errors, (remaining, errors[:3], len(errors))
    return acked


def ck_consume(
    bootstrap: str, topic: str, count: int, partition: int = 0, timeout: float = 20.0
) -> list[Consumed]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    out: list[Consumed] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                if msg.error():
                    raise AssertionError(str(msg.error()))
                headers = tuple((k, v) for k, v in (msg.headers() or []))
                out.append(
                    Consumed(
                        msg.partition(), msg.offset(), msg.key(), msg.value(), headers, msg.timestamp()[1]
                    )
                )
    finally:
        consumer.close()
    return out


# --- kafka-python ---------------------------------------------------------------------------------------------


def kp_produce(
    bootstrap: str,
    topic: str,
    messages: Sequence[Message],
    codec: str = "none",
    partition: int = 0,
    **extra: object,
) -> list[tuple[int, int]]:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec, **extra
    )
    futures = [
        producer.send(
            topic,
            key=m.key,
            value=m.value,
            headers=list(m.headers) or None,
            partition=partition,
            timestamp_ms=m.timestamp,
        )
        for m in messages
    ]
    producer.flush(30)
    acked = [(f.get(30).partition, f.get(30).offset) for f in futures]
    producer.close(10)
    return acked


def kp_consume(
    bootstrap: str, topic: str, count: int, partition: int = 0, timeout: float = 20.0
) -> list[Consumed]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    out: list[Consumed] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                for r in records:
                    headers = tuple((k, v) for k, v in (r.headers or []))
                    out.append(Consumed(r.partition, r.offset, r.key, r.value, headers, r.timestamp))
    finally:
        consumer.close()
    return out


# --- aiokafka -------------------------------------------------------------------------------------------------


def ak_produce(
    bootstrap: str,
    topic: str,
    messages: Sequence[Message],
    codec: str = "none",
    partition: int = 0,
    **extra: object,
) -> list[tuple[int, int]]:
    from aiokafka import AIOKafkaProducer

    async def run() -> list[tuple[int, int]]:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec, **extra
        )
        await producer.start()
        try:
            futures = [
                await producer.send(
                    topic,
                    key=m.key,
                    value=m.value,
                    headers=list(m.headers) or None,
                    partition=partition,
                    timestamp_ms=m.timestamp,
                )
                for m in messages
            ]
            results = [await f for f in futures]
            return [(r.partition, r.offset) for r in results]
        finally:
            await producer.stop()

    return asyncio.run(run())


def ak_consume(
    bootstrap: str, topic: str, count: int, partition: int = 0, timeout: float = 20.0
) -> list[Consumed]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[Consumed]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await consumer.start()
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        out: list[Consumed] = []
        deadline = time.monotonic() + timeout
        try:
            while len(out) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    for r in records:
                        headers = tuple((k, v) for k, v in (r.headers or []))
                        out.append(Consumed(r.partition, r.offset, r.key, r.value, headers, r.timestamp))
        finally:
            await consumer.stop()
        return out

    return asyncio.run(run())


# --- kcat -----------------------------------------------------------------------------------------------------


def kcat_path() -> str | None:
    return shutil.which("kcat")


def kcat_produce(
    bootstrap: str,
    topic: str,
    messages: Sequence[Message],
    codec: str = "none",
    partition: int = 0,
    **extra: object,
) -> list[tuple[int, int]]:
    """kcat -P, one message per line (keys after a tab); headers and timestamps are not sent this way."""
    lines = []
    for m in messages:
        assert m.key is not None and m.value is not None, "kcat's line mode carries keys and values only"
        lines.append(m.key + b"\t" + m.value)
    args = [
        kcat_path() or "kcat",
        "-P",
        "-b",
        bootstrap,
        "-t",
        topic,
        "-p",
        str(partition),
        "-K",
        "\t",
        "-z",
        codec,
        "-X",
        "linger.ms=5",
    ]
    subprocess.run(args, input=b"\n".join(lines) + b"\n", check=True, timeout=60, capture_output=True)
    return []


def kcat_consume(
    bootstrap: str, topic: str, count: int, partition: int = 0, timeout: float = 20.0
) -> list[Consumed]:
    """kcat -C with a JSON-free, length-safe format: each field hex-encoded is not available, so use -J."""
    import json

    args = [
        kcat_path() or "kcat",
        "-C",
        "-b",
        bootstrap,
        "-t",
        topic,
        "-p",
        str(partition),
        "-o",
        "beginning",
        "-c",
        str(count),
        "-e",
        "-J",
        "-q",
    ]
    proc = subprocess.run(args, check=True, timeout=timeout + 30, capture_output=True)
    out = []
    for line in proc.stdout.decode().splitlines():
        doc = json.loads(line)
        headers = doc.get("headers") or []
        pairs = tuple(
            (headers[i], None if headers[i + 1] is None else headers[i + 1].encode())
            for i in range(0, len(headers), 2)
        )
        key = None if doc["key"] is None else doc["key"].encode()
        value = None if doc["payload"] is None else doc["payload"].encode()
        out.append(Consumed(doc["partition"], doc["offset"], key, value, pairs, doc["ts"]))
    return out


PRODUCERS = {"confluent-kafka": ck_produce, "kafka-python": kp_produce, "aiokafka": ak_produce}
CONSUMERS = {"confluent-kafka": ck_consume, "kafka-python": kp_consume, "aiokafka": ak_consume}
