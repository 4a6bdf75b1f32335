"""Kafka Streams' ``processing.guarantee=exactly_once_v2`` (KIP-447 transactions) on a 3-broker Samsa cluster:
Kafka's own ``WordCountDemo`` counts 3,000 lines while a broker is killed (SIGKILL) halfway; a read_committed reader
of the output then finds every word's last count equal to its true count, and nothing counted twice along the way:
each word's counts, read in order, go up by exactly its occurrences in each committed transaction, never past the
truth. A cluster of its own (the demo's topic names and application id are fixed)."""

from __future__ import annotations

import random
import struct
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from samsa.cluster.launcher import LocalCluster
from tests.clients.harness import stop_process

from .jars import TOPICS, KafkaJars
from .test_streams_connect import INPUT, OUTPUT, WORDCOUNT, WORDS, produce_lines, start_java, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path_factory.mktemp("samsa-eos-cluster"),
        broker_config={"replica.lag.time.max.ms": "2000", "transaction.state.log.num.partitions": "3"},
    )
    local.up(3)
    try:
        yield local
    finally:
        local.down()


def committed_counts(bootstrap: str) -> dict[str, list[int]]:
    """Each word's counts in output order, as a read_committed reader sees them."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "eos-checker",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        parts = consumer.list_topics(OUTPUT, timeout=10).topics[OUTPUT].partitions
        consumer.assign([TopicPartition(OUTPUT, p, 0) for p in parts])
        counts: dict[str, list[int]] = {}
        idle = time.monotonic()
        while time.monotonic() - idle < 2:
            for msg in consumer.consume(500, timeout=0.5):
                if msg.error():
                    continue
                counts.setdefault(msg.key().decode(), []).append(struct.unpack(">q", msg.value())[0])
                idle = time.monotonic()
        return counts
    finally:
        consumer.close()


def test_wordcount_exactly_once_v2_through_a_broker_kill(
    kafka4: KafkaJars, kafka_apps: KafkaJars, cluster: LocalCluster, tmp_path: Path
) -> None:
    b = cluster.bootstrap_servers
    for topic in (INPUT, OUTPUT):
        kafka4.run(TOPICS, "--bootstrap-server", b, "--create", "--topic", topic, "--partitions", "3",
                   "--replication-factor", "3")  # fmt: skip
    rng = random.Random(447)
    lines = [" ".join(rng.choice(WORDS).upper() for _ in range(rng.randint(1, 8))) for _ in range(3000)]
    truth = Counter(word.lower() for line in lines for word in line.split())
    half = Counter(word.lower() for line in lines[:1500] for word in line.split())
    config = tmp_path / "streams.properties"
    config.write_text(
        f"bootstrap.servers={b}\n"
        "processing.guarantee=exactly_once_v2\n"
        "replication.factor=3\n"
        "commit.interval.ms=500\n"
        f"state.dir={tmp_path / 'state'}\n"
    )
    app = start_java(kafka_apps, WORDCOUNT, str(config), directory=tmp_path)
    victim = 1
    try:
        produce_lines(b, INPUT, lines[:1500])
        wait_for("the first half counted", lambda: _last(committed_counts(b)) == dict(half), timeout=120)
        cluster.kill(victim)
        produce_lines(b, INPUT, lines[1500:])

        def caught_up() -> bool:
            return _last(committed_counts(b)) == dict(truth)

        try:
            wait_for("every word counted", caught_up, timeout=180)
        finally:
            assert app.poll() is None, (tmp_path / "out.log").read_text()[-4000:]
        for word, counts in committed_counts(b).items():
            assert counts == sorted(counts) and counts[-1] == truth[word], (word, counts[-10:])
            assert len(counts) == len(set(counts)), (word, "a count written twice")
    finally:
        stop_process(app, 15, 30)
        cluster.start_broker(victim)


def _last(counts: dict[str, list[int]]) -> dict[str, int]:
    return {word: values[-1] for word, values in counts.items()}
