"""Kafka Streams and Kafka Connect 4.3.1 (the newest whose examples and file connectors Maven Central serves)
against a 3-broker Samsa cluster on ZooKeeper.

Streams: Kafka's own ``WordCountDemo`` (kafka-streams-examples) reads ``streams-plaintext-input`` and writes
``streams-wordcount-output`` through a repartition topic and a counting state store with its changelog topic, with
``processing.guarantee=at_least_once``. Half the lines are counted, a broker is killed with SIGKILL, the other half
follows: every word's last count in the output topic is its true count (at least once would allow more; the
application itself never fails here), and the internal topics are the ones Streams creates. (``exactly_once_v2``:
``test_streams_eos``.)

Connect: two distributed workers (``ConnectDistributed``) keep their config, offsets and status topics on Samsa
(they create them compacted, and check they are) and share a group on the ``connect`` protocol; a FileStreamSource
connector copies a file into a topic and a FileStreamSink connector copies the topic into another file, line for
line, both created through the REST API. The worker running the source task is killed with SIGKILL: the other
takes the task over (a rebalance of Samsa's group) and lines appended to the file then reach the sink file too.

Logs of each JVM (warnings and errors, slf4j-simple) are in its working directory. One cluster for the module.
"""

from __future__ import annotations

import json
import random
import re
import struct
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from samsa.cluster.launcher import LocalCluster
from tests.clients.harness import free_port, stop_process

from .jars import TOPICS, KafkaJars

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

WORDCOUNT = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
CONNECT = "org.apache.kafka.connect.cli.ConnectDistributed"
GROUPS = "org.apache.kafka.tools.GroupsCommand"
INPUT, OUTPUT = "streams-plaintext-input", "streams-wordcount-output"
WORDS = ["kafka", "samsa", "stream", "table", "log", "segment", "index", "broker", "replica", "leader", "isr"]
LOG_WARN = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path_factory.mktemp("samsa-cluster"), broker_config={"replica.lag.time.max.ms": "2000"}
    )
    local.up(3)
    try:
        yield local
    finally:
        local.down()


def wait_for(what: str, check: Callable[[], bool], timeout: float = 90.0, poll: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(poll)


def start_java(jars: KafkaJars, main_class: str, *args: str, directory: Path) -> subprocess.Popen[bytes]:
    command = jars.command(main_class, *args)
    command[1:1] = ["-Xmx256m", LOG_WARN]
    log = (directory / "out.log").open("ab")
    return subprocess.Popen(command, cwd=directory, stdout=log, stderr=subprocess.STDOUT)


def produce_lines(bootstrap: str, topic: str, lines: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for line in lines:
        producer.produce(topic, line.encode())
    assert producer.flush(60) == 0


def latest_counts(bootstrap: str) -> dict[str, int]:
    """Each word's last count in the output topic (its key's last record: one partition per word); empty while a
    broker the client still names has just been killed (the caller polls again)."""
    try:
        return _latest_counts(bootstrap)
    except KafkaException:
        return {}


def _latest_counts(bootstrap: str) -> dict[str, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        parts = consumer.list_topics(OUTPUT, timeout=10).topics[OUTPUT].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(OUTPUT, p), timeout=10)[1] for p in parts}
        consumer.assign([TopicPartition(OUTPUT, p, 0) for p, end in ends.items() if end > 0])
        counts: dict[str, int] = {}
        left = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + 30
        while left and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=1):
                if msg.error():
                    continue
                counts[msg.key().decode()] = struct.unpack(">q", msg.value())[0]
                if msg.offset() + 1 >= ends[msg.partition()]:
                    left.discard(msg.partition())
        return counts
    finally:
        consumer.close()


def topics_of(jars: KafkaJars, bootstrap: str) -> set[str]:
    return set(jars.run(TOPICS, "--bootstrap-server", bootstrap, "--list").stdout.split())


def test_wordcount_survives_a_broker_killed_mid_run(
    kafka4: KafkaJars, kafka_apps: KafkaJars, cluster: LocalCluster, tmp_path: Path
) -> None:
    b = cluster.bootstrap_servers
    for topic in (INPUT, OUTPUT):
        kafka4.run(TOPICS, "--bootstrap-server", b, "--create", "--topic", topic, "--partitions", "3",
                   "--replication-factor", "3")  # fmt: skip
    rng = random.Random(32)
    lines = [" ".join(rng.choice(WORDS).upper() for _ in range(rng.randint(1, 8))) for _ in range(3000)]
    truth = Counter(word.lower() for line in lines for word in line.split())
    half = Counter(word.lower() for line in lines[:1500] for word in line.split())

    config = tmp_path / "streams.properties"
    config.write_text(
        f"bootstrap.servers={b}\n"
        "processing.guarantee=at_least_once\n"
        "replication.factor=3\n"
        "commit.interval.ms=500\n"
        f"state.dir={tmp_path / 'state'}\n"
    )
    app = start_java(kafka_apps, WORDCOUNT, str(config), directory=tmp_path)
    try:
        produce_lines(b, INPUT, lines[:1500])
        wait_for("the first half counted", lambda: latest_counts(b) == dict(half))
        victim = 1  # a broker holding a replica of every partition (rf 3), maybe the group coordinator
        cluster.kill(victim)
        produce_lines(b, INPUT, lines[1500:])

        def caught_up() -> bool:
            caught_up.last = latest_counts(b)  # type: ignore[attr-defined]
            return bool(caught_up.last == dict(truth))

        try:
            wait_for("every word counted", caught_up, timeout=120)
        finally:
            assert app.poll() is None, (tmp_path / "out.log").read_text()[-4000:]
        internal = {t for t in topics_of(kafka4, b) if t.startswith("streams-wordcount-KSTREAM")}
        assert internal == {
            "streams-wordcount-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog",
            "streams-wordcount-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition",
        }
    finally:
        stop_process(app, 15, 30)
        cluster.start_broker(victim)


def _rest(port: int, method: str, path: str, body: object | None = None) -> object:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
    return json.loads(text) if text else None


def _up_or_gone(port: int, process: subprocess.Popen[bytes]) -> bool:
    return _answers(port) or process.poll() is not None


def _answers(port: int) -> bool:
    try:
        _rest(port, "GET", "/connectors")
        return True
    except (urllib.error.URLError, ConnectionError, OSError):
        return False


def worker_properties(directory: Path, bootstrap: str, port: int) -> Path:
    """A distributed worker's config: its three topics on Samsa, its REST port; a departed worker's tasks are
    reassigned after 1 s (scheduled.rebalance.max.delay.ms, 5 min by default)."""
    directory.mkdir()
    path = directory / "worker.properties"
    path.write_text(
        f"bootstrap.servers={bootstrap}\n"
        "group.id=samsa-connect\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "config.storage.topic=connect-configs\n"
        "offset.storage.topic=connect-offsets\n"
        "status.storage.topic=connect-status\n"
        "config.storage.replication.factor=3\n"
        "offset.storage.replication.factor=3\n"
        "status.storage.replication.factor=3\n"
        "offset.flush.interval.ms=500\n"
        "session.timeout.ms=6000\n"
        "heartbeat.interval.ms=1000\n"
        "scheduled.rebalance.max.delay.ms=1000\n"
        f"listeners=http://127.0.0.1:{port}\n"
        "rest.advertised.host.name=127.0.0.1\n"
        "plugin.discovery=only_scan\n"
    )
    return path


def task_worker(port: int, connector: str) -> str | None:
    """The worker (``host:port``) running the connector's task while it runs, as the worker at ``port`` says."""
    status = _rest(port, "GET", f"/connectors/{connector}/status")
    assert isinstance(status, dict)
    tasks = status["tasks"]
    if status["connector"]["state"] != "RUNNING" or [t["state"] for t in tasks] != ["RUNNING"]:
        return None
    return str(tasks[0]["worker_id"])


def test_connect_distributed_copies_a_file_through_a_topic_and_moves_a_killed_workers_task(
    kafka4: KafkaJars, kafka_apps: KafkaJars, cluster: LocalCluster, tmp_path: Path
) -> None:
    b = cluster.bootstrap_servers
    ports = [free_port(), free_port()]
    workers = [
        start_java(
            kafka_apps,
            CONNECT,
            str(worker_properties(tmp_path / f"w{i}", b, port)),
            directory=tmp_path / f"w{i}",
        )
        for i, port in enumerate(ports)
    ]
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    lines = [f"line {n} of the file, {'x' * (n % 40)}" for n in range(1000)]
    source.write_text("".join(f"{line}\n" for line in lines[:500]))
    try:
        for i, (port, process) in enumerate(zip(ports, workers, strict=True)):
            wait_for("a worker's REST API", partial(_up_or_gone, port, process), timeout=120)
            assert process.poll() is None, (tmp_path / f"w{i}" / "out.log").read_text()[-4000:]
        _rest(ports[0], "POST", "/connectors", {"name": "file-in", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1", "file": str(source), "topic": "connect-lines",
        }})  # fmt: skip
        _rest(ports[1], "POST", "/connectors", {"name": "file-out", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": "1", "file": str(sink), "topics": "connect-lines",
        }})  # fmt: skip

        def copied(count: int) -> Callable[[], bool]:
            return lambda: sink.exists() and set(sink.read_text().splitlines()) == set(lines[:count])

        wait_for("the sink file", copied(500), timeout=120)
        assert (
            sink.read_text().splitlines() == lines[:500]
        )  # one task each way, nothing failed: in order, once
        groups = kafka4.run(GROUPS, "--bootstrap-server", b, "--list").stdout  # kafka-groups: type, protocol
        assert re.search(r"^samsa-connect\s+Classic\s+connect\s*$", groups, re.M), groups
        assert {"connect-configs", "connect-offsets", "connect-status", "connect-lines"} <= topics_of(
            kafka4, b
        )
        offsets = kafka4.run(
            TOPICS, "--bootstrap-server", b, "--describe", "--topic", "connect-offsets"
        ).stdout
        assert "cleanup.policy=compact" in offsets and "ReplicationFactor: 3" in offsets

        # kill -9 the worker running the source task: the other takes it over and carries on from its offset
        addresses = [f"127.0.0.1:{port}" for port in ports]
        wait_for("the source task running", lambda: task_worker(ports[0], "file-in") in addresses)
        running = addresses.index(str(task_worker(ports[0], "file-in")))
        workers[running].kill()
        workers[running].wait(10)
        survivor = ports[1 - running]
        wait_for(
            "the source task moved",
            lambda: task_worker(survivor, "file-in") == addresses[1 - running],
            timeout=120,
        )
        with source.open("a") as appended:
            appended.write("".join(f"{line}\n" for line in lines[500:]))
        wait_for("the appended lines in the sink file", copied(1000), timeout=120)
    finally:
        for process in workers:
            stop_process(process, 15, 60)
