"""read_committed against one ``samsa serve`` process, with real clients on both ends: transactional producers
commit, abort and leave transactions open; confluent-kafka, kafka-python and aiokafka consumers with
``isolation.level=read_committed`` see exactly the committed records, read_uncommitted ones see everything, and
the last stable offset holds readers back while a transaction is open, through ListOffsets too and across a
restart (the open transaction is in the producer snapshot) and a kill -9 (the ``.txnindex`` is rebuilt)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from samsa.storage.txn_index import decode_entries
from tests.badinput.wire import Connection
from tests.clients.harness import BrokerProcess, running_broker

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory.mktemp("samsa-rc")) as proc:
        yield proc
        problems = [line for line in proc.output if "Traceback" in line]
        assert not problems, "".join(proc.output[-100:])


def _topic(bootstrap: str, partitions: int = 1) -> str:
    name = f"rc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return name


def _txn_producer(bootstrap: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"tid-{uuid.uuid4().hex[:8]}",
            "transaction.timeout.ms": 60_000,
            "linger.ms": 1,
        }
    )
    producer.init_transactions(15)
    return producer


def _in_transaction(
    producer: Producer, topic: str, values: list[bytes], commit: bool, partition: int = 0
) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value, partition=partition)
    if commit:
        producer.commit_transaction(15)
    else:
        producer.flush(10)
        producer.abort_transaction(15)


def _ck_read(
    bootstrap: str, topic: str, isolation: str, partitions: int = 1, idle: float = 1.5
) -> list[bytes]:
    """Every value a fresh confluent-kafka consumer reads from the start until ``idle`` seconds pass with none."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    consumer.assign([CkTopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    last = time.monotonic()
    deadline = last + 20
    try:
        while time.monotonic() - last < idle and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None or message.error():
                continue
            values.append(message.value())
            last = time.monotonic()
    finally:
        consumer.close()
    return values


def _latest(bootstrap_port: int, topic: str, isolation_level: int) -> int:
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation_level,
        topics=[ListOffsetsTopic(topic, [ListOffsetsPartition(partition_index=0, timestamp=-1)])],
    )
    with Connection(bootstrap_port) as conn:
        [answer] = conn.request(2, 5, request).topics[0].partitions
    assert answer.error_code == 0
    return int(answer.offset)


def _stable_at(port: int, topic: str, expected: int) -> bool:
    """Whether the LSO reaches ``expected`` within 10 s (markers are written after EndTxn is answered)."""
    deadline = time.monotonic() + 10
    while _latest(port, topic, 1) != expected:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_confluent_readers_see_committed_only(broker: BrokerProcess) -> None:
    topic = _topic(broker.bootstrap, 2)
    producer = _txn_producer(broker.bootstrap)
    _in_transaction(producer, topic, [f"c{i}".encode() for i in range(6)], True, partition=0)
    _in_transaction(producer, topic, [b"a0", b"a1", b"a2"], False, partition=0)
    _in_transaction(producer, topic, [b"p1-a"], False, partition=1)
    _in_transaction(producer, topic, [b"c6", b"c7"], True, partition=0)
    _in_transaction(producer, topic, [b"p1-c"], True, partition=1)
    committed = sorted([f"c{i}".encode() for i in range(8)] + [b"p1-c"])
    assert sorted(_ck_read(broker.bootstrap, topic, "read_committed", 2)) == committed
    everything = sorted([*committed, b"a0", b"a1", b"a2", b"p1-a"])
    assert sorted(_ck_read(broker.bootstrap, topic, "read_uncommitted", 2)) == everything


def test_an_open_transaction_holds_back_read_committed(broker: BrokerProcess) -> None:
    topic = _topic(broker.bootstrap)
    opened = _txn_producer(broker.bootstrap)
    other = _txn_producer(broker.bootstrap)
    _in_transaction(other, topic, [b"before"], True)
    opened.begin_transaction()
    opened.produce(topic, value=b"open", partition=0)
    opened.flush(10)
    _in_transaction(
        other, topic, [b"after"], True
    )  # committed, but above the open transaction's first offset
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, value=b"plain", partition=0)
    plain.flush(10)
    # offsets: 0 before, 1 marker, 2 open, 3 after, 4 marker, 5 plain
    assert _latest(broker.port, topic, 1) == 2  # the LSO: the open transaction's first offset
    assert _latest(broker.port, topic, 0) == 6  # the high watermark
    assert _ck_read(broker.bootstrap, topic, "read_committed") == [b"before"]
    assert _ck_read(broker.bootstrap, topic, "read_uncommitted") == [b"before", b"open", b"after", b"plain"]
    opened.commit_transaction(15)
    assert _stable_at(broker.port, topic, 7)
    assert _ck_read(broker.bootstrap, topic, "read_committed") == [b"before", b"open", b"after", b"plain"]


def test_kafka_python_and_aiokafka_readers(broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaConsumer
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition

    topic = _topic(broker.bootstrap)
    producer = _txn_producer(broker.bootstrap)
    _in_transaction(producer, topic, [b"k0", b"k1"], True)
    _in_transaction(producer, topic, [b"x0", b"x1", b"x2"], False)
    _in_transaction(producer, topic, [b"k2"], True)

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        consumer_timeout_ms=2000,
    )
    consumer.assign([KpTopicPartition(topic, 0)])
    consumer.seek(KpTopicPartition(topic, 0), 0)
    try:
        assert [m.value for m in consumer] == [b"k0", b"k1", b"k2"]
    finally:
        consumer.close()

    async def aiokafka_read() -> list[bytes]:
        from aiokafka import TopicPartition as AkTopicPartition

        reader = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap, isolation_level="read_committed", enable_auto_commit=False
        )
        await reader.start()
        try:
            tp = AkTopicPartition(topic, 0)
            reader.assign([tp])
            reader.seek(tp, 0)
            values: list[bytes] = []
            while True:
                batch = await reader.getmany(tp, timeout_ms=1500)
                if not batch:
                    return values
                values += [m.value for m in batch[tp] if m.value is not None]
        finally:
            await reader.stop()

    assert asyncio.run(asyncio.wait_for(aiokafka_read(), 30)) == [b"k0", b"k1", b"k2"]


def _txn_index_entries(data_dir: Path, topic: str) -> list[tuple[int, int, int, int]]:
    found = []
    for path in sorted((data_dir / f"{topic}-0").glob("*.txnindex")):
        found += [
            (t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
            for t in decode_entries(path.read_bytes(), path)
        ]
    return found


def _eventually(
    read: Callable[[], list[tuple[int, int, int, int]]], count: int
) -> list[tuple[int, int, int, int]]:
    deadline = time.monotonic() + 10
    while len(found := read()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_restart_keeps_the_lso_and_kill_rebuilds_the_index(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    proc = BrokerProcess(data_dir=data_dir)
    proc.start()
    try:
        topic = _topic(proc.bootstrap)
        producer = _txn_producer(proc.bootstrap)
        _in_transaction(producer, topic, [b"c0"], True)  # 0, marker 1
        _in_transaction(producer, topic, [b"a0", b"a1"], False)  # 2-3, marker 4
        entries = _eventually(
            lambda: _txn_index_entries(data_dir, topic), 1
        )  # markers follow EndTxn's answer
        assert [(first, last, lso) for _, first, last, lso in entries] == [(2, 4, 5)]
        opened = _txn_producer(proc.bootstrap)
        opened.begin_transaction()
        opened.produce(topic, value=b"open", partition=0)  # 5
        opened.flush(10)
        _in_transaction(producer, topic, [b"c1"], True)  # 6, marker 7
        assert _latest(proc.port, topic, 1) == 5
    finally:
        proc.stop()
    proc.start()  # a clean stop: the open transaction comes back from the producer snapshot
    try:
        assert _latest(proc.port, topic, 1) == 5
        assert _ck_read(proc.bootstrap, topic, "read_committed") == [b"c0"]
        opened.abort_transaction(15)  # the same producer, still valid: the broker kept its state
        assert _stable_at(proc.port, topic, 9)
        assert _ck_read(proc.bootstrap, topic, "read_committed") == [b"c0", b"c1"]
        expected = _eventually(lambda: _txn_index_entries(data_dir, topic), 2)
        assert [(first, last) for _, first, last, _ in expected] == [(2, 4), (5, 8)]
    finally:
        proc.kill()
    for path in (data_dir / f"{topic}-0").glob("*.txnindex"):
        path.write_bytes(path.read_bytes()[:-7])  # torn by the kill: a partial entry
    proc.start()
    try:
        assert _txn_index_entries(data_dir, topic) == expected
        assert any("rebuilt" in line and ".txnindex" in line for line in proc.output)
        assert _ck_read(proc.bootstrap, topic, "read_committed") == [b"c0", b"c1"]
    finally:
        proc.stop()
