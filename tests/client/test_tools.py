"""The Kafka-style command-line tools against a real broker process, asserting their exact output."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from samsa.cli import cli
from samsa.cli.log_dirs import java_hash_order, java_string_hash
from samsa.cli.topics import kafka_uuid
from samsa.client import NewTopic, SyncClient, TopicPartition
from samsa.client.partitioner import partition_for_key
from samsa.client.records import ProducerRecord, build_batch, iter_consumer_records
from samsa.records import CompressionType, iter_batches
from tests.clients.harness import BrokerProcess, Message, ck_produce

BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module")
def client(broker: BrokerProcess) -> Iterator[SyncClient]:
    with SyncClient(broker.bootstrap) as sync:
        yield sync


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def samsa(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


def create(client: SyncClient, topic: str, partitions: int = 1) -> None:
    assert client.create_topics([NewTopic(topic, partitions, 1)]) == {topic: None}


def test_topics_create_describe_alter_delete(broker: BrokerProcess, client: SyncClient) -> None:
    bs = broker.bootstrap
    topic = name("tool")
    result = samsa(
        "topics", "--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", "2",
        "--replication-factor", "1", "--config", "retention.ms=1234", "--config", "max.message.bytes=2000",
    )  # fmt: skip
    assert (result.exit_code, result.stdout) == (0, f"Created topic {topic}.\n")

    again = samsa("topics", "--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", "2")
    assert again.exit_code == 1
    assert again.stdout == f"Error while executing topic command : Topic '{topic}' already exists.\n"
    assert f"ERROR Topic '{topic}' already exists. (TOPIC_ALREADY_EXISTS)\n" in again.stderr
    assert "org.apache" not in again.stderr

    assert topic in samsa("topics", "--bootstrap-server", bs, "--list").stdout.splitlines()
    assert (
        samsa("topics", "--bootstrap-server", bs, "--alter", "--topic", topic, "--partitions", "3").exit_code
        == 0
    )

    topic_id = kafka_uuid(client.metadata([topic]).topics[topic].topic_id)
    described = samsa("topics", "--bootstrap-server", bs, "--describe", "--topic", topic)
    assert described.exit_code == 0
    configs = dict(kv.split("=") for kv in described.stdout.splitlines()[0].split("Configs: ")[1].split(","))
    assert configs == {"retention.ms": "1234", "max.message.bytes": "2000"}
    assert described.stdout.splitlines()[0].startswith(
        f"Topic: {topic}\tTopicId: {topic_id}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: "
    )
    assert described.stdout.splitlines()[1:] == [
        f"\tTopic: {topic}\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: N/A\tLastKnownElr: N/A"
        for p in range(3)
    ]
    assert len(topic_id) == 22

    shrink = samsa("topics", "--bootstrap-server", bs, "--alter", "--topic", topic, "--partitions", "1")
    assert shrink.exit_code == 1
    assert shrink.stdout.startswith("Error while executing topic command : ")
    assert "(INVALID_PARTITIONS)" in shrink.stderr

    deleted = samsa("topics", "--bootstrap-server", bs, "--delete", "--topic", topic)
    assert (deleted.exit_code, deleted.stdout) == (0, "")
    assert topic not in client.metadata().topics

    missing = samsa("topics", "--bootstrap-server", bs, "--describe", "--topic", topic)
    assert (missing.exit_code, missing.stdout, missing.stderr) == (
        1,
        "",
        f"Topic '{topic}' does not exist as expected\n",
    )
    quiet = samsa("topics", "--bootstrap-server", bs, "--delete", "--topic", topic, "--if-exists")
    assert (quiet.exit_code, quiet.stdout) == (0, "")


def test_topics_list_is_sorted_and_filtered_by_regex(broker: BrokerProcess, client: SyncClient) -> None:
    prefix = name("lst")
    for suffix in ("b", "a", "c"):
        create(client, f"{prefix}.{suffix}")
    result = samsa("topics", "--bootstrap-server", broker.bootstrap, "--list", "--topic", f"{prefix}\\..*")
    assert result.stdout.splitlines() == [f"{prefix}.a", f"{prefix}.b", f"{prefix}.c"]
    result = samsa(
        "topics", "--bootstrap-server", broker.bootstrap, "--list", "--topic", f"{prefix}.a,{prefix}.c"
    )
    assert result.stdout.splitlines() == [f"{prefix}.a", f"{prefix}.c"]
    described = samsa(
        "topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic", f"{prefix}\\..*"
    )
    heads = [line.split("\t")[0] for line in described.stdout.splitlines() if line.startswith("Topic: ")]
    names = [f"{prefix}.{s}" for s in "abc"]
    assert heads == [f"Topic: {n}" for n in java_hash_order(names, java_string_hash)]


def test_topics_unreachable_broker_exits_1() -> None:
    result = samsa("topics", "--bootstrap-server", "127.0.0.1:1", "--list")
    assert result.exit_code == 1
    assert result.stdout.startswith(
        "Error while executing topic command : cannot connect to broker 127.0.0.1:1"
    )


def test_get_offsets(broker: BrokerProcess, client: SyncClient) -> None:
    topic = name("offs")
    create(client, topic, 12)
    for i in range(3):
        batch = build_batch([ProducerRecord(None, b"x", (), BASE_TS + i * 1000)])
        client.produce(TopicPartition(topic, 2), batch)
    bs = broker.bootstrap
    latest = samsa("get-offsets", "--bootstrap-server", bs, "--topic", topic)
    # Kafka orders by topic, then partition number: 2 comes before 10 and 11
    assert latest.stdout.splitlines() == [f"{topic}:{p}:{3 if p == 2 else 0}" for p in range(12)]
    assert samsa("get-offsets", "--bootstrap-server", bs, "--topic", topic, "--partitions", "2,3").stdout == (
        f"{topic}:2:3\n{topic}:3:0\n"
    )
    assert samsa(
        "get-offsets", "--bootstrap-server", bs, "--topic", topic, "--partitions", "2", "--time", "-2"
    ).stdout == (f"{topic}:2:0\n")
    by_time = samsa(
        "get-offsets",
        "--bootstrap-server",
        bs,
        "--topic",
        topic,
        "--partitions",
        "2",
        "--time",
        str(BASE_TS + 500),
    )
    assert by_time.stdout == f"{topic}:2:1\n"
    max_ts = samsa(
        "get-offsets", "--bootstrap-server", bs, "--topic-partitions", f"{topic}:2", "--time", "-3"
    )
    assert max_ts.stdout == f"{topic}:2:2\n"
    # no offset for a time after every record: Kafka prints nothing for that partition
    after = samsa(
        "get-offsets",
        "--bootstrap-server",
        bs,
        "--topic",
        topic,
        "--partitions",
        "2",
        "--time",
        str(BASE_TS * 2),
    )
    assert (after.exit_code, after.stdout) == (0, "")
    none = samsa("get-offsets", "--bootstrap-server", bs, "--topic", name("nothing"))
    assert none.exit_code == 1
    assert none.stderr == "Error occurred: Could not match any topic-partitions with the specified filters\n"
    bad = samsa("get-offsets", "--bootstrap-server", bs, "--topic", topic, "--time", "yesterday")
    assert bad.exit_code == 1 and bad.stderr.startswith("Error occurred: Malformed time argument yesterday.")


def test_console_producer_keys_compression_and_partitioning(
    broker: BrokerProcess, client: SyncClient
) -> None:
    topic = name("prod")
    create(client, topic, 3)
    lines = b"".join(b"key%d:value %d\n" % (i, i) for i in range(20))
    result = samsa(
        "console-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic,
        "--property", "parse.key=true", "--property", "key.separator=:",
        "--producer-property", "acks=all", "--compression-codec", "lz4",
        stdin=lines,
    )  # fmt: skip
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    seen: dict[bytes, tuple[int, bytes | None]] = {}
    codecs = set()
    fetched = client.fetch({TopicPartition(topic, p): 0 for p in range(3)}, max_wait_ms=50)
    for tp, data in fetched.items():
        codecs |= {view.attributes & 7 for view in iter_batches(data.records)}
        for record in iter_consumer_records(data.records, topic, tp.partition):
            assert record.key is not None
            seen[record.key] = (tp.partition, record.value)
    assert codecs == {CompressionType.LZ4}
    assert seen == {b"key%d" % i: (partition_for_key(b"key%d" % i, 3), b"value %d" % i) for i in range(20)}

    # the same keys through librdkafka's Java-compatible partitioner land on the same partitions
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"})
    placed: dict[bytes, int] = {}

    def on_delivery(err: object, msg: object) -> None:
        assert err is None
        placed[msg.key()] = msg.partition()  # type: ignore[attr-defined]

    for i in range(20):
        producer.produce(topic, key=b"key%d" % i, value=b"ck", on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert placed == {key: partition for key, (partition, _) in seen.items()}
    assert len(set(placed.values())) > 1


def test_console_producer_bad_line_stops_with_exit_1(broker: BrokerProcess, client: SyncClient) -> None:
    topic = name("badline")
    create(client, topic)
    result = samsa(
        "console-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic,
        "--property", "parse.key=true", "--property", "key.separator=:",
        stdin=b"k:v\nnoseparator\nk:after\n",
    )  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr == ("No key separator found on line number 2: 'noseparator'\n")
    data = client.fetch({TopicPartition(topic, 0): 0}, max_wait_ms=50)[TopicPartition(topic, 0)]
    assert [(r.key, r.value) for r in iter_consumer_records(data.records, topic, 0)] == [(b"k", b"v")]


def produce_known(client: SyncClient, topic: str) -> None:
    tp = TopicPartition(topic, 0)
    client.produce(
        tp,
        build_batch(
            [
                ProducerRecord(b"k1", b"v1", (("h", b"1"), ("n", None)), BASE_TS),
                ProducerRecord(None, b"v2", (), BASE_TS + 1),
                ProducerRecord(b"k3", None, (), BASE_TS + 2),
            ],
            "snappy",
        ),
    )


def test_console_consumer_formats_like_kafka(broker: BrokerProcess, client: SyncClient) -> None:
    topic = name("cons")
    create(client, topic)
    produce_known(client, topic)
    bs = broker.bootstrap
    every = samsa(
        "console-consumer", "--bootstrap-server", bs, "--topic", topic, "--from-beginning", "--max-messages", "3",
        "--property", "print.timestamp=true", "--property", "print.partition=true",
        "--property", "print.offset=true", "--property", "print.headers=true", "--property", "print.key=true",
    )  # fmt: skip
    assert every.exit_code == 0
    assert every.stdout.splitlines() == [
        f"CreateTime:{BASE_TS}\tPartition:0\tOffset:0\th:1,n:null\tk1\tv1",
        f"CreateTime:{BASE_TS + 1}\tPartition:0\tOffset:1\tNO_HEADERS\tnull\tv2",
        f"CreateTime:{BASE_TS + 2}\tPartition:0\tOffset:2\tNO_HEADERS\tk3\tnull",
    ]
    assert every.stderr == "Processed a total of 3 messages\n"

    keyed = samsa(
        "console-consumer", "--bootstrap-server", bs, "--topic", topic, "--from-beginning", "--max-messages", "2",
        "--property", "print.key=true", "--property", "key.separator=:",
    )  # fmt: skip
    assert keyed.stdout == "k1:v1\nnull:v2\n"

    from_offset = samsa(
        "console-consumer", "--bootstrap-server", bs, "--topic", topic, "--partition", "0", "--offset", "2",
        "--timeout-ms", "300",
    )  # fmt: skip
    assert from_offset.exit_code == 0
    assert from_offset.stdout == "null\n"
    assert from_offset.stderr.splitlines()[-1] == "Processed a total of 1 messages"
    assert "ERROR" not in from_offset.stderr

    # without --from-beginning it starts at the end: nothing old is printed
    latest = samsa("console-consumer", "--bootstrap-server", bs, "--topic", topic, "--timeout-ms", "300")
    assert (latest.exit_code, latest.stdout) == (0, "")
    assert latest.stderr == "Processed a total of 0 messages\n"  # a normal end: no ERROR line

    usage = samsa("console-consumer", "--bootstrap-server", bs, "--topic", topic, "--offset", "1")
    assert (usage.exit_code, usage.stderr) == (1, "The partition is required when offset is specified.\n")


def test_console_consumer_on_a_missing_topic(broker: BrokerProcess, client: SyncClient) -> None:
    bs = broker.bootstrap
    # a broker with auto.create.topics.enable (the default) creates it, as Kafka's consumer lets it
    created = name("made")
    made = samsa("console-consumer", "--bootstrap-server", bs, "--topic", created, "--timeout-ms", "1500")
    assert (made.exit_code, made.stdout) == (0, "")
    assert "WARN" not in made.stderr
    assert made.stderr.endswith("Processed a total of 0 messages\n")
    assert client.metadata([created]).topics[created].error_code == 0

    missing = name("missing")
    refused = samsa(
        "console-consumer", "--bootstrap-server", bs, "--topic", missing, "--timeout-ms", "500",
        "--consumer-property", "allow.auto.create.topics=false",
    )  # fmt: skip
    assert (refused.exit_code, refused.stdout) == (0, "")
    lines = refused.stderr.splitlines()
    assert lines[0].endswith(
        f"WARN [Consumer clientId=console-consumer] Error while fetching metadata : "
        f"{{{missing}=UNKNOWN_TOPIC_OR_PARTITION}}"
    )
    assert [line for line in lines if "WARN" in line] == [lines[0]], "reported once"
    # the end of --timeout-ms is a normal end: the count alone, no ERROR line
    assert lines[1:] == ["Processed a total of 0 messages"]
    assert client.metadata([missing]).topics[missing].error_code != 0


def test_console_consumer_reads_a_confluent_kafka_record(broker: BrokerProcess, client: SyncClient) -> None:
    topic = name("interop")
    create(client, topic)
    ck_produce(
        broker.bootstrap,
        topic,
        [Message(b"ck-key", b"ck-value", (("source", b"librdkafka"),), BASE_TS + 42)],
        codec="zstd",
    )
    result = samsa(
        "console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
        "--max-messages", "1", "--property", "print.timestamp=true", "--property", "print.key=true",
        "--property", "print.headers=true",
    )  # fmt: skip
    assert result.stdout == f"CreateTime:{BASE_TS + 42}\tsource:librdkafka\tck-key\tck-value\n"


def test_console_producer_then_consumer_round_trip(broker: BrokerProcess, client: SyncClient) -> None:
    topic = name("rt")
    create(client, topic)
    produced = samsa(
        "console-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic, stdin=b"one\ntwo\r\n"
    )
    assert produced.exit_code == 0
    consumed = samsa(
        "console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--from-beginning",
        "--max-messages", "2",
    )  # fmt: skip
    assert consumed.stdout == "one\ntwo\n"


def test_log_dirs(broker: BrokerProcess, client: SyncClient) -> None:
    topic = name("dirs")
    create(client, topic, 2)
    client.produce(TopicPartition(topic, 1), build_batch([ProducerRecord(None, b"payload")]))
    result = samsa("log-dirs", "--describe", "--bootstrap-server", broker.bootstrap, "--topic-list", topic)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1",
    ]
    document = json.loads(lines[2])
    assert lines[2].startswith('{"brokers":[{"broker":1,"logDirs":[{"partitions":[')
    assert lines[2].endswith(f',"error":null,"logDir":"{broker.data_dir}"}}]}}],"version":1}}')
    partitions = document["brokers"][0]["logDirs"][0]["partitions"]
    assert list(partitions[0]) == ["partition", "size", "offsetLag", "isFuture"]
    sizes = {p["partition"]: p["size"] for p in partitions}
    assert set(sizes) == {f"{topic}-0", f"{topic}-1"}
    assert sizes[f"{topic}-0"] == 0 and sizes[f"{topic}-1"] > 0
    missing = samsa("log-dirs", "--describe", "--bootstrap-server", broker.bootstrap, "--broker-list", "1,7")
    assert missing.exit_code == 1
    assert missing.stderr == (
        "ERROR: The given brokers do not exist from --broker-list: 7. Current existent brokers: 1\n"
    )


def test_java_hash_order_matches_java() -> None:
    # java.lang.String.hashCode values, and the iteration order of a java.util.HashMap holding these keys
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_hash_order(["version", "brokers"], java_string_hash) == ["brokers", "version"]
    # Integer keys: bucket = value mod table size (16, doubled past 12 entries), then insertion order
    assert java_hash_order(list(range(30, 0, -3)), int) == [18, 3, 21, 6, 24, 9, 27, 12, 30, 15]
    assert java_hash_order(list(range(40, 0, -3)), int) == [
        1,
        34,
        4,
        37,
        7,
        40,
        10,
        13,
        16,
        19,
        22,
        25,
        28,
        31,
    ]
    assert java_hash_order([17, 1], int) == [17, 1]


def test_console_producer_logs_a_failed_send_per_record(broker: BrokerProcess, client: SyncClient) -> None:
    topic = name("toolarge")
    assert client.create_topics([NewTopic(topic, 1, 1, {"max.message.bytes": "200"})]) == {topic: None}
    result = samsa(
        "console-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic, "--sync",
        stdin=b"small\n" + b"x" * 500 + b"\n",
    )  # fmt: skip
    # each failure logged as Kafka's tool does; unlike it (exit 0), a run that lost records does not exit 0
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert (
        f"ERROR Error when sending message to topic {topic} with key: null, value: 500 bytes with error: "
        "the batch at position 0 is 570 bytes"
    ) in lines[0]
    assert lines[0].endswith("(MESSAGE_TOO_LARGE)")
    data = client.fetch({TopicPartition(topic, 0): 0}, max_wait_ms=50)[TopicPartition(topic, 0)]
    assert [r.value for r in iter_consumer_records(data.records, topic, 0)] == [b"small"]
