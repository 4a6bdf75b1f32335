"""Apache Kafka's command-line tools and Java client, run from Kafka 4.x's jars, against one Samsa broker.

Each test runs a tool's main class as its ``kafka-*.sh`` script would and asserts what the tool prints: topic
descriptions, record counts and offsets, group states and members, low watermarks, configs. The Java producer is
``kafka-producer-perf-test`` (idempotent, acks=all, one codec per run); the Java consumer is the console consumer in
a group (the classic group protocol: Samsa does not serve ConsumerGroupHeartbeat, the new protocol).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from samsa.cli.topics import topics as samsa_topics
from tests.clients.harness import BrokerProcess

from .jars import (
    CONFIGS,
    CONSOLE_CONSUMER,
    DELETE_RECORDS,
    GET_OFFSETS,
    GROUPS,
    LOG_DIRS,
    PRODUCER_PERF,
    TOPICS,
    KafkaJars,
)

CODECS = ("gzip", "snappy", "lz4", "zstd")
RECORDS_PER_CODEC = 2000


def bootstrap(samsa: BrokerProcess) -> list[str]:
    return ["--bootstrap-server", samsa.bootstrap]


def table(output: str, first_column: str) -> list[dict[str, str]]:
    """The rows of a whitespace-aligned table a tool prints, as dicts keyed by its header line's columns (none when
    the tool printed no table, e.g. for a group that does not exist yet)."""
    lines = [line for line in output.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.split()[0] == first_column), None)
    if start is None:
        return []
    header = lines[start].split()
    rows = []
    for line in lines[start + 1 :]:
        cells = line.split()
        if cells[0] == first_column:
            break
        rows.append(dict(zip(header, cells, strict=False)))
    return rows


def end_offsets(kafka4: KafkaJars, samsa: BrokerProcess, topic: str, time_arg: str = "-1") -> dict[int, int]:
    out = kafka4.run(GET_OFFSETS, *bootstrap(samsa), "--topic", topic, "--time", time_arg).stdout
    offsets = {}
    for line in out.split():
        name, partition, offset = line.rsplit(":", 2)
        assert name == topic
        offsets[int(partition)] = int(offset)
    return offsets


def test_topic_lifecycle(kafka4: KafkaJars, samsa: BrokerProcess) -> None:
    """kafka-topics: create with a config, describe, alter partitions, list, delete."""
    b = bootstrap(samsa)
    created = kafka4.run(
        TOPICS, *b, "--create", "--topic", "lifecycle", "--partitions", "3", "--replication-factor", "1",
        "--config", "cleanup.policy=compact",
    )  # fmt: skip
    assert created.stdout.strip() == "Created topic lifecycle."
    described = kafka4.run(TOPICS, *b, "--describe", "--topic", "lifecycle").stdout
    summary, *partitions = described.strip().splitlines()
    assert re.match(r"Topic: lifecycle\tTopicId: \S{22}\tPartitionCount: 3\tReplicationFactor: 1\t", summary)
    assert summary.endswith("Configs: cleanup.policy=compact")
    assert [p.split("\t")[1:6] for p in partitions] == [
        ["Topic: lifecycle", f"Partition: {i}", "Leader: 1", "Replicas: 1", "Isr: 1"] for i in range(3)
    ]
    ours = CliRunner().invoke(samsa_topics, [*b, "--describe", "--topic", "lifecycle"])
    assert ours.exit_code == 0, ours.output
    # Samsa's tool prints Kafka's lines, down to the Elr: N/A and LastKnownElr: N/A columns
    assert ours.stdout == described

    kafka4.run(TOPICS, *b, "--alter", "--topic", "lifecycle", "--partitions", "5")
    described = kafka4.run(TOPICS, *b, "--describe", "--topic", "lifecycle").stdout
    assert "PartitionCount: 5" in described and "Partition: 4\tLeader: 1" in described
    shrink = kafka4.run(TOPICS, *b, "--alter", "--topic", "lifecycle", "--partitions", "2", check=False)
    assert shrink.returncode == 1
    assert "Topic currently has 5 partitions, which is higher than the requested 2." in shrink.stdout

    assert "lifecycle" in kafka4.run(TOPICS, *b, "--list").stdout.split()
    kafka4.run(TOPICS, *b, "--delete", "--topic", "lifecycle")
    deadline = time.monotonic() + 10
    while "lifecycle" in kafka4.run(TOPICS, *b, "--list").stdout.split():
        assert time.monotonic() < deadline, "topic still listed after delete"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def perf_topic(kafka4: KafkaJars, samsa: BrokerProcess) -> str:
    """A 2-partition topic written by the Java producer: idempotent, acks=all, RECORDS_PER_CODEC per codec."""
    kafka4.run(TOPICS, *bootstrap(samsa), "--create", "--topic", "perf", "--partitions", "2")
    for codec in CODECS:
        out = kafka4.run(
            PRODUCER_PERF, "--topic", "perf", "--num-records", str(RECORDS_PER_CODEC), "--record-size", "100",
            "--throughput", "-1", "--command-property", f"bootstrap.servers={samsa.bootstrap}",
            "acks=all", "enable.idempotence=true", f"compression.type={codec}", "linger.ms=5",
        ).stdout  # fmt: skip
        assert f"{RECORDS_PER_CODEC} records sent" in out, out
    return "perf"


def test_java_producer_every_codec_then_console_consumer_group(
    kafka4: KafkaJars, samsa: BrokerProcess, perf_topic: str
) -> None:
    """Every record the idempotent producer sent is in the log once, and a console consumer in a group reads each
    offset once, its committed offsets then at the log end (kafka-consumer-groups --describe)."""
    total = RECORDS_PER_CODEC * len(CODECS)
    ends = end_offsets(kafka4, samsa, perf_topic)
    assert sum(ends.values()) == total and set(ends) == {0, 1}

    out = kafka4.run(
        CONSOLE_CONSUMER, *bootstrap(samsa), "--topic", perf_topic, "--group", "perf-readers", "--from-beginning",
        "--max-messages", str(total), "--timeout-ms", "20000",
        "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
        "--formatter-property", "print.value=false",
    ).stdout  # fmt: skip
    seen = re.findall(r"Partition:(\d+)\s+Offset:(\d+)", out)
    assert len(seen) == total
    for partition, end in ends.items():
        assert sorted(int(o) for p, o in seen if int(p) == partition) == list(range(end))

    described = kafka4.run(GROUPS, *bootstrap(samsa), "--describe", "--group", "perf-readers").stdout
    rows = table(described, "GROUP")
    assert {(r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows} == {
        (str(p), str(end), str(end), "0") for p, end in ends.items()
    }
    state = table(kafka4.run(GROUPS, *bootstrap(samsa), "--describe", "--group", "perf-readers", "--state").stdout,
                  "GROUP")  # fmt: skip
    assert state == [
        {"GROUP": "perf-readers", "COORDINATOR": samsa.bootstrap, "(ID)": "(1)", "ASSIGNMENT-STRATEGY": "-",
         "STATE": "Empty", "#MEMBERS": "0"}
    ]  # fmt: skip


def test_consumer_groups_members_reset_delete(
    kafka4: KafkaJars, samsa: BrokerProcess, perf_topic: str
) -> None:
    """kafka-consumer-groups: a live member with its assignment and the Stable state; offsets reset to an offset
    and shifted; the group deleted."""
    b = bootstrap(samsa)
    live = subprocess.Popen(
        kafka4.command(
            CONSOLE_CONSUMER, *b, "--topic", perf_topic, "--group", "live", "--timeout-ms", "30000"
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            state = table(kafka4.run(GROUPS, *b, "--describe", "--group", "live", "--state").stdout, "GROUP")
            if state and state[0]["STATE"] == "Stable":
                break
            assert time.monotonic() < deadline, state
            time.sleep(1)
        assert state[0]["ASSIGNMENT-STRATEGY"] == "range" and state[0]["#MEMBERS"] == "1"
        members = table(kafka4.run(GROUPS, *b, "--describe", "--group", "live", "--members", "--verbose").stdout,
                        "GROUP")  # fmt: skip
        assert len(members) == 1
        assert members[0]["CONSUMER-ID"].startswith("console-consumer-")
        assert members[0]["HOST"] == "/127.0.0.1" and members[0]["#PARTITIONS"] == "2"
        assert members[0]["CURRENT-ASSIGNMENT"] == f"{perf_topic}:0,1"
        busy = kafka4.run(GROUPS, *b, "--delete", "--group", "live", check=False).stdout
        assert "NON_EMPTY_GROUP" in busy or "not empty" in busy.lower(), busy
    finally:
        live.terminate()
        live.wait(30)

    reset = kafka4.run(GROUPS, *b, "--reset-offsets", "--group", "live", "--topic", perf_topic, "--to-offset", "100",
                       "--execute").stdout  # fmt: skip
    assert {(r["PARTITION"], r["NEW-OFFSET"]) for r in table(reset, "GROUP")} == {("0", "100"), ("1", "100")}
    shifted = kafka4.run(GROUPS, *b, "--reset-offsets", "--group", "live", "--topic", f"{perf_topic}:1",
                         "--shift-by", "-10", "--execute").stdout  # fmt: skip
    assert [(r["PARTITION"], r["NEW-OFFSET"]) for r in table(shifted, "GROUP")] == [("1", "90")]
    rows = table(kafka4.run(GROUPS, *b, "--describe", "--group", "live").stdout, "GROUP")
    assert {(r["PARTITION"], r["CURRENT-OFFSET"]) for r in rows} == {("0", "100"), ("1", "90")}

    deleted = kafka4.run(GROUPS, *b, "--delete", "--group", "live").stdout
    assert "Deletion of requested consumer groups ('live') was successful." in deleted
    assert "live" not in kafka4.run(GROUPS, *b, "--list").stdout.split()


def test_get_offsets_delete_records_log_dirs(
    kafka4: KafkaJars, samsa: BrokerProcess, perf_topic: str, tmp_path: Path
) -> None:
    """kafka-delete-records moves partition 0's low watermark, kafka-get-offsets --time -2 then reports it, and
    kafka-log-dirs lists both partitions with their sizes in Samsa's log dir."""
    b = bootstrap(samsa)
    ends = end_offsets(kafka4, samsa, perf_topic)
    plan = tmp_path / "delete.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": perf_topic, "partition": 0, "offset": 500}]})
    )
    out = kafka4.run(DELETE_RECORDS, *b, "--offset-json-file", str(plan)).stdout
    assert f"partition: {perf_topic}-0\tlow_watermark: 500" in out
    assert end_offsets(kafka4, samsa, perf_topic, "-2") == {0: 500, 1: 0}
    assert end_offsets(kafka4, samsa, perf_topic) == ends

    out = kafka4.run(LOG_DIRS, *b, "--describe", "--topic-list", perf_topic).stdout
    report = json.loads(out.strip().splitlines()[-1])
    [broker] = report["brokers"]
    [log_dir] = broker["logDirs"]
    assert broker["broker"] == 1 and log_dir["error"] is None and log_dir["logDir"] == str(samsa.data_dir)
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert set(sizes) == {f"{perf_topic}-0", f"{perf_topic}-1"}
    for name, size in sizes.items():
        assert size == sum(f.stat().st_size for f in (samsa.data_dir / name).glob("*.log"))


def test_topic_configs(kafka4: KafkaJars, samsa: BrokerProcess) -> None:
    """kafka-configs on a topic: add two configs, describe them as dynamic topic configs, delete one."""
    b = bootstrap(samsa)
    kafka4.run(TOPICS, *b, "--create", "--topic", "configured", "--partitions", "1")
    entity = ["--entity-type", "topics", "--entity-name", "configured"]
    out = kafka4.run(
        CONFIGS, *b, *entity, "--alter", "--add-config", "retention.ms=3600000,max.message.bytes=200000"
    )
    assert out.stdout.strip() == "Completed updating config for topic configured."
    described = kafka4.run(CONFIGS, *b, *entity, "--describe").stdout.strip().splitlines()
    assert described == [
        "Dynamic configs for topic configured are:",
        "  max.message.bytes=200000 sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:max.message.bytes=200000, DEFAULT_CONFIG:message.max.bytes=1048588}",
        "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}",
    ]
    kafka4.run(CONFIGS, *b, *entity, "--alter", "--delete-config", "retention.ms")
    described = kafka4.run(CONFIGS, *b, *entity, "--describe").stdout.strip().splitlines()
    assert described[1:] == [
        "  max.message.bytes=200000 sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:max.message.bytes=200000, DEFAULT_CONFIG:message.max.bytes=1048588}"
    ]
    topics_view = kafka4.run(TOPICS, *b, "--describe", "--topic", "configured").stdout
    assert "Configs: max.message.bytes=200000" in topics_view


def test_kafka_39_client_and_tools(kafka3: KafkaJars, samsa: BrokerProcess) -> None:
    """Kafka 3.9's Java client and tools, whose request versions are older than 4.4's: a topic created and
    described, the idempotent acks=all producer (lz4), the console consumer in a group reading each record once,
    and the group's committed offsets at the log end."""
    b = bootstrap(samsa)
    kafka3.run(TOPICS, *b, "--create", "--topic", "from-39", "--partitions", "2", "--replication-factor", "1")
    described = kafka3.run(TOPICS, *b, "--describe", "--topic", "from-39").stdout
    assert "PartitionCount: 2" in described and "Partition: 1\tLeader: 1\tReplicas: 1\tIsr: 1" in described
    sent = kafka3.run(
        PRODUCER_PERF, "--topic", "from-39", "--num-records", "3000", "--record-size", "100", "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={samsa.bootstrap}", "acks=all", "enable.idempotence=true",
        "compression.type=lz4",
    ).stdout  # fmt: skip
    assert "3000 records sent" in sent
    out = kafka3.run(
        CONSOLE_CONSUMER, *b, "--topic", "from-39", "--group", "readers-39", "--from-beginning",
        "--max-messages", "3000", "--timeout-ms", "20000", "--property", "print.partition=true",
        "--property", "print.offset=true", "--property", "print.value=false",
    ).stdout  # fmt: skip
    seen = re.findall(r"Partition:(\d+)\s+Offset:(\d+)", out)
    assert len(seen) == len(set(seen)) == 3000
    rows = table(kafka3.run(GROUPS, *b, "--describe", "--group", "readers-39").stdout, "GROUP")
    assert sum(int(r["CURRENT-OFFSET"]) for r in rows) == 3000 and {r["LAG"] for r in rows} == {"0"}


def test_java_consumer_with_a_partition_limit_below_the_batches(
    kafka4: KafkaJars, samsa: BrokerProcess
) -> None:
    """Two partitions, each one batch larger than ``max.partition.fetch.bytes``: the fetch's first partition gets
    its batch whole (KIP-74), the other no bytes rather than a cut batch alone, on which Kafka's Java consumer
    stops ("no complete records were found"); it then reads both on, every record once."""
    from confluent_kafka import Producer

    topic = "big-batches"
    kafka4.run(TOPICS, *bootstrap(samsa), "--create", "--topic", topic, "--partitions", "2")
    producer = Producer({"bootstrap.servers": samsa.bootstrap, "linger.ms": 200})
    for partition in (0, 1):
        for i in range(50):
            producer.produce(topic, value=b"%03d" % i + b"v" * 97, partition=partition)
    assert producer.flush(30) == 0
    del producer  # its handle closes now, not reconnecting to a broker this module stops
    assert end_offsets(kafka4, samsa, topic) == {0: 50, 1: 50}
    done = kafka4.run(
        CONSOLE_CONSUMER, *bootstrap(samsa), "--topic", topic, "--from-beginning", "--max-messages", "100",
        "--timeout-ms", "20000", "--consumer-property", "max.partition.fetch.bytes=1000",
        "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
        "--formatter-property", "print.value=false", check=False,
    )  # fmt: skip
    assert "no complete records" not in done.stderr, done.stderr[-2000:]
    seen = re.findall(r"Partition:(\d+)\s+Offset:(\d+)", done.stdout)
    assert sorted((int(p), int(o)) for p, o in seen) == [(p, o) for p in (0, 1) for o in range(50)]
