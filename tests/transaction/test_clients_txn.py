"""Real transactional producers against one ``samsa serve`` process: confluent-kafka commits and aborts, and a
second producer with the same ``transactional.id`` fences the first."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_transactions import DescribeTransactionsRequest
from samsa.protocol.messages.list_transactions import ListTransactionsRequest
from samsa.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from tests.badinput.wire import Connection
from tests.clients.harness import BrokerProcess, running_broker

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory.mktemp("samsa-txn")) as proc:
        yield proc
        problems = [line for line in proc.output if "Traceback" in line]
        assert not problems, "".join(proc.output[-100:])


def _topic(broker: BrokerProcess) -> str:
    name = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(10)
    return name


def _producer(broker: BrokerProcess, transactional_id: str) -> Producer:
    return Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 30_000,
        }
    )


def test_confluent_commit_and_abort(broker: BrokerProcess) -> None:
    topic = _topic(broker)
    producer = _producer(broker, f"tid-{uuid.uuid4().hex[:6]}")
    producer.init_transactions(15)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, value=f"c{i}".encode(), partition=i % 2)
    producer.commit_transaction(15)
    producer.begin_transaction()
    producer.produce(topic, value=b"aborted", partition=0)
    producer.abort_transaction(15)
    producer.begin_transaction()
    producer.produce(topic, value=b"again", partition=1)
    producer.commit_transaction(15)


def test_second_producer_fences_the_first(broker: BrokerProcess) -> None:
    topic = _topic(broker)
    tid = f"zombie-{uuid.uuid4().hex[:6]}"
    first = _producer(broker, tid)
    first.init_transactions(15)
    first.begin_transaction()
    first.produce(topic, value=b"from the zombie", partition=0)
    first.flush(10)
    second = _producer(broker, tid)
    second.init_transactions(30)  # aborts the first's open transaction, bumps the epoch
    second.begin_transaction()
    second.produce(topic, value=b"from the new one", partition=0)
    second.commit_transaction(15)
    with pytest.raises(KafkaException) as caught:
        first.commit_transaction(15)
    assert caught.value.args[0].fatal() or "fenced" in str(caught.value).lower()


def _committed(broker: BrokerProcess, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        [tp] = consumer.committed([TopicPartition(topic, 0)], 10)
        return int(tp.offset)
    finally:
        consumer.close()


def _fetch_v7(broker: BrokerProcess, group: str, topic: str, require_stable: bool) -> tuple[int, int]:
    request = OffsetFetchRequest(group, [OffsetFetchRequestTopic(topic, [0])], require_stable=require_stable)
    with Connection(broker.port) as conn:
        [answer] = conn.request(9, 7, request).topics[0].partitions
    return answer.committed_offset, answer.error_code


def test_offsets_sent_in_a_transaction_apply_only_on_commit(broker: BrokerProcess) -> None:
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    producer = _producer(broker, f"ctp-{uuid.uuid4().hex[:6]}")
    producer.init_transactions(15)
    try:
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 5)], consumer.consumer_group_metadata(), 15
        )
        producer.abort_transaction(15)
        assert _committed(broker, group, topic) < 0  # aborted: nothing committed
        producer.begin_transaction()
        producer.produce(topic, value=b"out", partition=1)
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 7)], consumer.consumer_group_metadata(), 15
        )
        assert _fetch_v7(broker, group, topic, True) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
        assert _fetch_v7(broker, group, topic, False) == (-1, ErrorCode.NONE)
        producer.commit_transaction(15)
        assert _committed(broker, group, topic) == 7
        assert _fetch_v7(broker, group, topic, True) == (7, ErrorCode.NONE)
    finally:
        consumer.close()


def test_describe_and_list_an_open_transaction(broker: BrokerProcess) -> None:
    topic = _topic(broker)
    tid = f"open-{uuid.uuid4().hex[:6]}"
    producer = _producer(broker, tid)
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce(topic, value=b"pending", partition=1)
    producer.flush(10)
    with Connection(broker.port) as conn:
        described = conn.request(65, 0, DescribeTransactionsRequest([tid, "no-such-id"]))
        listed = conn.request(66, 1, ListTransactionsRequest(["Ongoing", "Nonsense"], [], 0))
    open_one, unknown = described.transaction_states
    assert (open_one.error_code, open_one.transaction_state) == (0, "Ongoing")
    assert [(t.topic, t.partitions) for t in open_one.topics] == [(topic, [1])]
    assert unknown.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert listed.unknown_state_filters == ["Nonsense"]
    assert tid in [t.transactional_id for t in listed.transaction_states]
    producer.abort_transaction(15)


def test_kafka_python_commit_and_abort(broker: BrokerProcess) -> None:
    from kafka import KafkaProducer

    topic = _topic(broker)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, transactional_id=f"kp-{uuid.uuid4().hex[:6]}"
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"committed", partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, b"aborted", partition=0)
        producer.abort_transaction()
    finally:
        producer.close(5)


def test_aiokafka_commit_and_abort(broker: BrokerProcess) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer

    topic = _topic(broker)

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, transactional_id=f"ak-{uuid.uuid4().hex[:6]}"
        )
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(topic, b"committed", partition=0)
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"aborted", partition=1)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(run(), 30))


def test_cli_lists_and_describes(broker: BrokerProcess) -> None:
    from click.testing import CliRunner

    from samsa.cli.transactions import transactions

    topic = _topic(broker)
    tid = f"cli-{uuid.uuid4().hex[:6]}"
    producer = _producer(broker, tid)
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce(topic, value=b"pending", partition=0)
    producer.flush(10)
    runner = CliRunner()
    listed = runner.invoke(transactions, ["--bootstrap-server", broker.bootstrap, "list"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0].split("\t") == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert any(line.startswith(f"{tid}\t1\t") and line.endswith("\tOngoing") for line in lines)
    described = runner.invoke(
        transactions, ["--bootstrap-server", broker.bootstrap, "describe", "--transactional-id", tid]
    )
    assert described.exit_code == 0, described.output
    row = described.output.splitlines()[1].split("\t")
    assert row[1] == tid and row[4] == "Ongoing" and row[8] == f"{topic}-0"
    producer.abort_transaction(15)
