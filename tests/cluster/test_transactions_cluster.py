"""Transactions on a real 3-broker cluster (ZooKeeper and ``samsa serve`` processes): the coordinator of a
transactional id is the leader of its ``__transaction_state`` partition (created on first use, replicated), the
markers reach partition leaders on other brokers (WriteTxnMarkers), offsets sent in a transaction reach a group
coordinator on another broker, and a kill -9 of the transaction coordinator leaves no committed record invisible,
no aborted one visible and no transaction hanging: its partition's new leader loads the ids and finishes them.

The consume-transform-produce case is checked Jepsen-style: every input record appears in the output exactly once
for a read_committed reader, through coordinator and partition-leader kills."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from tests.badinput.wire import Connection
from tests.cluster.waiting import wait_for

from samsa.cluster.launcher import LocalCluster
from samsa.protocol import ErrorCode
from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest

pytestmark = [pytest.mark.timeout(400), pytest.mark.slow, pytest.mark.clients]

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path_factory.mktemp("txn-cluster") / "cluster",
        broker_config={
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            "default.replication.factor": "3",
            "min.insync.replicas": "2",
        },
    )
    local.up(3)
    try:
        yield local
    finally:
        local.down()


def _topic(cluster: LocalCluster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, PARTITIONS, 3)])[name].result(60)
    return name


def _producer(cluster: LocalCluster, tid: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": tid,
            "transaction.timeout.ms": 60_000,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            # librdkafka >= 2.10 forgets a broker that leaves the metadata but keeps it cached as the group
            # coordinator, and send_offsets_to_transaction then waits (past its timeout) for some other broker
            # connection to change state (librdkafka issue 5511, open); Apache Kafka drops a dead broker from its metadata too.
            # Idle connections closed and metadata asked for every second give it those state changes.
            "connections.max.idle.ms": 2_000,
            "topic.metadata.refresh.interval.ms": 1_000,
        }
    )
    producer.init_transactions(60)
    return producer


def _read(cluster: LocalCluster, topic: str, isolation: str, idle: float = 3.0) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"r-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([CkTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    values: list[bytes] = []
    last = time.monotonic()
    deadline = last + 60
    try:
        while time.monotonic() - last < idle and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error():
                continue
            values.append(message.value())
            last = time.monotonic()
    finally:
        consumer.close()
    return values


def _coordinator(cluster: LocalCluster, tid: str) -> int:
    def found() -> int | None:
        with Connection(cluster.broker(1).port) as conn:
            answer = conn.request(10, 1, FindCoordinatorRequest(key=tid, key_type=1))
        return answer.node_id if answer.error_code == ErrorCode.NONE else None

    return int(wait_for("a transaction coordinator", found, timeout=60))


def test_commit_and_abort_across_brokers(cluster: LocalCluster) -> None:
    topic = _topic(cluster, "spread")
    producer = _producer(cluster, f"spread-{uuid.uuid4().hex[:6]}")
    committed = []
    for round_ in range(4):
        producer.begin_transaction()
        values = [f"r{round_}-{i}".encode() for i in range(9)]
        for i, value in enumerate(values):
            producer.produce(topic, value=value, partition=i % PARTITIONS)  # every leader takes part
        if round_ % 2 == 0:
            producer.commit_transaction(60)
            committed += values
        else:
            assert producer.flush(60) == 0  # written before the abort (an abort purges what is still queued)
            producer.abort_transaction(60)
    assert sorted(_read(cluster, topic, "read_committed")) == sorted(committed)
    assert len(_read(cluster, topic, "read_uncommitted")) == 36


def test_consume_transform_produce_through_kills_and_a_producer_crash(cluster: LocalCluster) -> None:
    """Consume-transform-produce with offsets sent in each transaction, through three faults in turn: the
    transaction coordinator killed (kill -9) mid-transaction, the producer abandoned mid-transaction and replaced
    by a new one with the same transactional.id (which fences it and aborts its transaction), and the leader of
    an output partition killed. The output holds every input exactly once for read_committed readers (no loss,
    no duplicate, no aborted record), and the group's committed offsets end at the inputs' end."""
    source = _topic(cluster, "in")
    sink = _topic(cluster, "out")
    feeder = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    inputs = [f"in-{i}".encode() for i in range(450)]
    for i, value in enumerate(inputs):
        feeder.produce(source, value=value, partition=i % PARTITIONS)
    assert feeder.flush(30) == 0
    tid = f"ctp-{uuid.uuid4().hex[:6]}"
    group = f"ctp-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([source])
    producer = _producer(cluster, tid)
    faults: list[str] = []
    down: list[int] = []
    seen = 0
    deadline = time.monotonic() + 300
    try:
        while seen < len(inputs) and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(50, 1.0) if m.error() is None]
            if not batch:
                continue
            producer.begin_transaction()
            for message in batch:
                producer.produce(sink, value=b"out:" + message.value(), partition=message.partition())
            fault = _next_fault(seen, faults)
            if fault == "coordinator":  # its records are in, its commit is not
                victim = _coordinator(cluster, tid)
                cluster.kill(victim)
                down.append(victim)
            elif fault == "producer":  # a crash: never committed, never closed; a new instance takes over
                producer.flush(30)
                producer = _producer(cluster, tid)
                _rewind(consumer)
                continue
            elif fault == "leader":
                for victim in down:
                    cluster.start_broker(victim)
                down.clear()
                victim = _leader(cluster, sink, 0)
                cluster.kill(victim)
                down.append(victim)
            elif fault == "mid-commit":  # the coordinator dies while it writes the commit and its markers
                for victim in down:
                    cluster.start_broker(victim)
                down.clear()
                victim = _coordinator(cluster, tid)
                killer = threading.Timer(0.005, cluster.kill, (victim,))
                killer.start()
                down.append(victim)
            try:
                producer.send_offsets_to_transaction(
                    consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 60
                )
                producer.commit_transaction(60)
            except KafkaException as exc:
                if not exc.args[0].txn_requires_abort():
                    raise
                producer.abort_transaction(60)
                _rewind(consumer)
                continue
            seen += len(batch)
    finally:
        consumer.close()
        for victim in down:
            cluster.start_broker(victim)
    assert faults == ["coordinator", "producer", "leader", "mid-commit"]
    output = _read(cluster, sink, "read_committed")
    expected = sorted(b"out:" + v for v in inputs)
    assert sorted(output) == expected, (len(output), len(set(output)), len(set(expected) - set(output)))
    check = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    committed = _committed(check, [CkTopicPartition(source, p) for p in range(PARTITIONS)])
    check.close()
    assert sum(tp.offset for tp in committed) == len(inputs)
    # nothing left hanging: every output partition's last stable offset reaches its high watermark
    for partition in range(PARTITIONS):
        assert wait_for(
            f"{sink}-{partition} stable", lambda p=partition: _stable(cluster, sink, p), timeout=60
        )


def _stable(cluster: LocalCluster, topic: str, partition: int) -> bool:
    from samsa.protocol.messages.list_offsets import (
        ListOffsetsPartition,
        ListOffsetsRequest,
        ListOffsetsTopic,
    )

    leader = _leader(cluster, topic, partition)
    ends = []
    for isolation in (0, 1):
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation,
            topics=[ListOffsetsTopic(topic, [ListOffsetsPartition(partition_index=partition, timestamp=-1)])],
        )
        with Connection(cluster.broker(leader).port) as conn:
            [answer] = conn.request(2, 5, request).topics[0].partitions
        ends.append(answer.offset if answer.error_code == 0 else -1)
    return ends[0] >= 0 and ends[0] == ends[1]


def _next_fault(seen: int, faults: list[str]) -> str | None:
    """Which fault is due with ``seen`` inputs committed: each once, in turn, about a fifth of the way apart."""
    for due, fault in ((80, "coordinator"), (160, "producer"), (240, "leader"), (320, "mid-commit")):
        if seen >= due and fault not in faults:
            faults.append(fault)
            return fault
    return None


def _leader(cluster: LocalCluster, topic: str, partition: int) -> int:
    from tests.cluster.failover import leaders

    def found() -> int | None:
        known = leaders(cluster.broker(1).port, topic) or leaders(cluster.broker(2).port, topic)
        leader = (known or {}).get(partition, -1)
        return leader if leader >= 0 else None

    return int(wait_for(f"the leader of {topic}-{partition}", found, timeout=60))


def _rewind(consumer: Consumer) -> None:
    """After an abort, go back to the group's committed offsets (the aborted output is gone)."""
    committed = _committed(consumer, consumer.assignment())
    for tp in committed:
        consumer.seek(CkTopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


_COORDINATOR_MOVING = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
)


def _committed(consumer: Consumer, partitions: list[CkTopicPartition]) -> list[CkTopicPartition]:
    """The group's committed offsets, asked again while its coordinator moves, as an application does: librdkafka
    retries an OffsetFetch on the broker it sent it to, so one sent just before the group moved (a killed or
    restarted broker) ends with NOT_COORDINATOR; Kafka answers so too."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return consumer.committed(partitions, 30)
        except KafkaException as exc:
            if exc.args[0].code() not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_kafka_python_and_aiokafka_transactions(cluster: LocalCluster) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from kafka import KafkaProducer

    topic = _topic(cluster, "py")
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, transactional_id=f"kp-{uuid.uuid4().hex[:6]}"
    )
    try:
        producer.init_transactions()
        for round_, commit in enumerate((True, False, True)):
            producer.begin_transaction()
            for p in range(PARTITIONS):
                producer.send(topic, f"kp{round_}-{p}".encode(), partition=p)
            producer.flush()
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(10)

    async def aiokafka_rounds() -> None:
        aio = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, transactional_id=f"ak-{uuid.uuid4().hex[:6]}"
        )
        await aio.start()
        try:
            for round_, commit in enumerate((False, True)):
                await aio.begin_transaction()
                for p in range(PARTITIONS):
                    await aio.send_and_wait(topic, f"ak{round_}-{p}".encode(), partition=p)
                if commit:
                    await aio.commit_transaction()
                else:
                    await aio.abort_transaction()
        finally:
            await aio.stop()

    asyncio.run(asyncio.wait_for(aiokafka_rounds(), 90))
    expected = [f"kp{r}-{p}".encode() for r in (0, 2) for p in range(PARTITIONS)]
    expected += [f"ak1-{p}".encode() for p in range(PARTITIONS)]
    assert sorted(_read(cluster, topic, "read_committed")) == sorted(expected)
    assert len(_read(cluster, topic, "read_uncommitted")) == 5 * PARTITIONS
