"""``samsa transactions describe-producers``, ``find-hanging`` and ``abort`` against one ``samsa serve`` process: a
transaction its coordinator never heard of (a producer that wrote transactional records and whose marker never
came) holds the last stable offset back; the tool finds it and aborts it, and read_committed readers move on.
Where Kafka 4.4's own ``kafka-transactions.sh`` is in the cache, it says the same things about the same broker."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.records import Record, build_batch
from tests.badinput.wire import Connection
from tests.clients.harness import BrokerProcess, running_broker
from tests.transaction.test_read_committed import _ck_read, _latest, _stable_at

pytestmark = pytest.mark.clients

STRAY_PID = 424242


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory.mktemp("samsa-txn-tool")) as proc:
        yield proc


def _samsa(broker: BrokerProcess, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "samsa.cli", "transactions", "--bootstrap-server", broker.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _cli(broker: BrokerProcess, command: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "samsa.cli", command, "--bootstrap-server", broker.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def _stray_transaction(broker: BrokerProcess, topic: str) -> None:
    """Transactional records of a producer no coordinator knows (its marker will never come)."""
    batch = build_batch(
        [Record(0, int(time.time() * 1000), None, b"stray")],
        producer_id=STRAY_PID,
        producer_epoch=3,
        base_sequence=0,
        is_transactional=True,
    )
    request = ProduceRequest(
        acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(topic, [PartitionProduceData(0, batch)])]
    )
    with Connection(broker.port) as conn:
        answer = conn.request(0, 8, request)
    assert answer.responses[0].partition_responses[0].error_code == 0


def test_find_and_abort_a_hanging_transaction(broker: BrokerProcess) -> None:
    topic = f"hang-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, value=b"first", partition=0)
    plain.flush(10)
    _stray_transaction(broker, topic)  # offset 1
    plain.produce(topic, value=b"after", partition=0)
    plain.flush(10)
    assert _latest(broker.port, topic, 1) == 1  # held back by the stray transaction

    producers = _rows(_samsa(broker, "describe-producers", "--topic", topic, "--partition", "0"))
    assert producers[0] == [
        "ProducerId",
        "ProducerEpoch",
        "LatestCoordinatorEpoch",
        "LastSequence",
        "LastTimestamp",
        "CurrentTransactionStartOffset",
    ]
    stray = [row for row in producers[1:] if row[0] == str(STRAY_PID)]
    assert [r[:4] + r[5:] for r in stray] == [[str(STRAY_PID), "3", "-1", "0", "1"]]

    hanging = _rows(_samsa(broker, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0"))
    assert hanging[0][:6] == [
        "Topic",
        "Partition",
        "ProducerId",
        "ProducerEpoch",
        "CoordinatorEpoch",
        "StartOffset",
    ]
    assert [r[:6] for r in hanging[1:] if r[0] == topic] == [[topic, "0", str(STRAY_PID), "3", "-1", "1"]]
    # an open transaction its coordinator knows is not hanging
    owned = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"t-{uuid.uuid4().hex[:6]}"})
    owned.init_transactions(10)
    owned.begin_transaction()
    owned.produce(topic, value=b"owned", partition=0)
    owned.flush(10)
    again = _rows(_samsa(broker, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"))
    assert [r[2] for r in again[1:]] == [str(STRAY_PID)]
    owned.abort_transaction(10)

    # the tools' latest end: the HW, or with --isolation read_committed the LSO
    assert _cli(broker, "get-offsets", "--topic", topic).split() == [
        f"{topic}:0:5"
    ]  # owned: data 3, marker 4
    assert _cli(broker, "get-offsets", "--topic", topic, "--isolation", "read_committed").split() == [
        f"{topic}:0:1"
    ]
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    consumer.commit(offsets=[CkTopicPartition(topic, 0, 1)], asynchronous=False)
    consumer.close()
    for isolation, end, lag in (("read_uncommitted", "5", "4"), ("read_committed", "1", "0")):
        text = _cli(broker, "consumer-groups", "--describe", "--group", group, "--isolation", isolation)
        [row] = [line.split() for line in text.splitlines() if line.startswith(group)]
        assert row[1:6] == [topic, "0", "1", end, lag], (isolation, row)

    _samsa(broker, "abort", "--topic", topic, "--partition", "0", "--start-offset", "1")
    assert _stable_at(broker.port, topic, _latest(broker.port, topic, 0))
    assert _ck_read(broker.bootstrap, topic, "read_committed") == [b"first", b"after"]
    assert _rows(_samsa(broker, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"))[1:] == []


def test_kafka_tool_reads_the_same_producers(broker: BrokerProcess) -> None:
    try:
        from tests.apache_kafka.jars import KAFKA_4, KafkaJars, jar_dir
    except ImportError:
        pytest.skip("tests.apache_kafka is not importable")
    if not (jar_dir(KAFKA_4) / ".complete").exists():
        pytest.skip(f"Kafka {KAFKA_4} jars not fetched (make kafka-jars)")
    topic = f"kt-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    _stray_transaction(broker, topic)
    jars = KafkaJars(KAFKA_4, jar_dir(KAFKA_4))
    tool = "org.apache.kafka.tools.TransactionsCommand"
    for args in (
        ["describe-producers", "--topic", topic, "--partition", "0"],
        ["find-hanging", "--topic", topic, "--max-transaction-timeout", "0"],
    ):
        theirs = _rows(jars.run(tool, "--bootstrap-server", broker.bootstrap, *args).stdout)
        ours = _rows(_samsa(broker, *args))
        if args[0] == "find-hanging":  # the duration column is computed by each tool at its own time
            theirs = [r[:-1] for r in theirs]
            ours = [r[:-1] for r in ours]
        assert ours == theirs, args
    jars.run(
        tool,
        "--bootstrap-server",
        broker.bootstrap,
        "abort",
        "--topic",
        topic,
        "--partition",
        "0",
        "--start-offset",
        "0",
    )
    assert _stable_at(broker.port, topic, _latest(broker.port, topic, 0))
