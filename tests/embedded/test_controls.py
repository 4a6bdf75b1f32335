"""Test controls of samsa.Broker, observed through real clients: injected errors and delays, log start, clock."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import samsa
from samsa.clock import ManualClock
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.api_versions import ApiVersionsRequest
from samsa.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from tests.clients.harness import Message, ck_produce

from .wire import WireClient

EARLIEST = -2


@pytest.fixture
def broker() -> Iterator[samsa.Broker]:
    with samsa.Broker() as running:
        yield running


def produce_one(bootstrap: str, topic: str, value: bytes, **extra: object) -> list[object]:
    """Produce one message with confluent-kafka; return the delivery reports (errors or messages)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **extra})
    reports: list[object] = []
    producer.produce(topic, value, partition=0, on_delivery=lambda err, msg: reports.append(err or msg))
    assert producer.flush(30) == 0
    return reports


def test_retriable_produce_error_is_retried_by_the_client(broker: samsa.Broker) -> None:
    broker.create_topic("retry")
    broker.inject_error("Produce", ErrorCode.NOT_LEADER_OR_FOLLOWER, count=1)
    reports = produce_one(broker.bootstrap_servers, "retry", b"once", **{"enable.idempotence": False})
    assert len(reports) == 1
    assert not hasattr(reports[0], "code"), f"delivery failed: {reports[0]}"
    assert reports[0].offset() == 0  # type: ignore[attr-defined]
    assert broker.injections.pending() == [], "the injected error was answered"
    # the injected answer had no effect: the retry appended the only copy
    assert broker.high_watermark("retry", 0) == 1


def test_non_retriable_produce_error_fails_delivery(broker: samsa.Broker) -> None:
    from confluent_kafka import KafkaError

    broker.create_topic("refused")
    broker.inject_error("produce", "MESSAGE_TOO_LARGE", count=None)
    reports = produce_one(broker.bootstrap_servers, "refused", b"never", **{"enable.idempotence": False})
    assert len(reports) == 1 and isinstance(reports[0], KafkaError)
    assert reports[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert broker.high_watermark("refused", 0) == 0
    assert [i.error for i in broker.injections.pending()] == [ErrorCode.MESSAGE_TOO_LARGE]
    broker.clear_injections()
    assert broker.injections.pending() == []
    reports = produce_one(broker.bootstrap_servers, "refused", b"now", **{"enable.idempotence": False})
    assert not isinstance(reports[0], KafkaError)
    assert broker.high_watermark("refused", 0) == 1


def test_error_count_is_honoured_and_responses_mirror_the_request(broker: samsa.Broker) -> None:
    broker.create_topic("listed", partitions=3)
    broker.inject_error(ApiKey.LIST_OFFSETS, ErrorCode.LEADER_NOT_AVAILABLE, count=2)
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                "listed",
                [ListOffsetsPartition(2, timestamp=EARLIEST), ListOffsetsPartition(0, timestamp=EARLIEST)],
            )
        ],
    )
    with WireClient(broker.bootstrap_servers) as client:
        answers = [client.call(ApiKey.LIST_OFFSETS, 7, request) for _ in range(3)]
    for answer in answers[:2]:
        (topic,) = answer.topics
        assert topic.name == "listed"
        assert [(p.partition_index, p.error_code, p.offset) for p in topic.partitions] == [
            (2, ErrorCode.LEADER_NOT_AVAILABLE, -1),
            (0, ErrorCode.LEADER_NOT_AVAILABLE, -1),
        ]
    assert [(p.partition_index, p.error_code, p.offset) for p in answers[2].topics[0].partitions] == [
        (2, 0, 0),
        (0, 0, 0),
    ]


def test_injected_delay_holds_the_answer_back(broker: samsa.Broker) -> None:
    broker.inject_delay("ApiVersions", 0.5, count=1)
    with WireClient(broker.bootstrap_servers) as client:
        started = time.monotonic()
        first = client.call(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("t", "1"))
        delayed = time.monotonic() - started
        second = client.call(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("t", "1"))
    assert delayed >= 0.5
    assert first.error_code == second.error_code == 0 and first.api_keys == second.api_keys
    assert broker.injections.pending() == [], "the delay was used up"


def test_unknown_api_and_bad_counts_are_refused(broker: samsa.Broker) -> None:
    with pytest.raises(ValueError, match="unknown API"):
        broker.inject_error("Produse", 6)
    with pytest.raises(ValueError, match="count"):
        broker.inject_delay("Fetch", 1.0, count=0)
    with pytest.raises(KeyError):
        broker.inject_error("Fetch", "NO_SUCH_ERROR")


def test_advanced_log_start_offset_is_what_consumers_see(broker: samsa.Broker) -> None:
    from confluent_kafka import Consumer, TopicPartition

    broker.create_topic("trimmed")
    ck_produce(broker.bootstrap_servers, "trimmed", [Message(None, f"m{i}".encode()) for i in range(10)])
    assert broker.advance_log_start_offset("trimmed", 0, 6) == 6
    assert broker.log_start_offset("trimmed", 0) == 6

    with WireClient(broker.bootstrap_servers) as client:
        request = ListOffsetsRequest(
            replica_id=-1, topics=[ListOffsetsTopic("trimmed", [ListOffsetsPartition(0, timestamp=EARLIEST)])]
        )
        answer = client.call(ApiKey.LIST_OFFSETS, 7, request)
    assert answer.topics[0].partitions[0].offset == 6

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "unused",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        assert consumer.get_watermark_offsets(TopicPartition("trimmed", 0), timeout=20) == (6, 10)
        consumer.assign([TopicPartition("trimmed", 0, 0)])  # below the start: reset to earliest
        values = []
        deadline = time.monotonic() + 20
        while len(values) < 4 and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=100, timeout=0.5):
                assert msg.error() is None, msg.error()
                values.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    assert values == [(i, f"m{i}".encode()) for i in range(6, 10)]


def test_advancing_past_the_high_watermark_is_refused(broker: samsa.Broker) -> None:
    broker.create_topic("short")
    with pytest.raises(samsa.embedded.BrokerControlError, match="OFFSET_OUT_OF_RANGE"):
        broker.advance_log_start_offset("short", 0, 5)
    with pytest.raises(samsa.embedded.BrokerControlError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        broker.advance_log_start_offset("absent", 0, 0)


def test_manual_clock_sets_log_append_time() -> None:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

    from tests.clients.harness import ck_consume

    clock = ManualClock(start_ms=1_600_000_000_000)
    with samsa.Broker(clock=clock) as broker:
        assert broker.clock is clock
        broker.create_topic("stamped", config={"message.timestamp.type": "LogAppendTime"})
        old = 1_000_000_000_000
        ck_produce(broker.bootstrap_servers, "stamped", [Message(None, b"first", timestamp=old)])
        clock.advance(5_000)
        ck_produce(broker.bootstrap_servers, "stamped", [Message(None, b"second", timestamp=old)])
        consumed = ck_consume(broker.bootstrap_servers, "stamped", 2)
        assert [(c.value, c.timestamp) for c in consumed] == [
            (b"first", 1_600_000_000_000),
            (b"second", 1_600_000_005_000),
        ]

        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap_servers, "group.id": "unused", "enable.auto.commit": False}
        )
        try:
            consumer.assign([TopicPartition("stamped", 0, 0)])
            msg = None
            deadline = time.monotonic() + 20
            while msg is None and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
            assert msg is not None and msg.error() is None
            assert msg.timestamp() == (TIMESTAMP_LOG_APPEND_TIME, 1_600_000_000_000)
        finally:
            consumer.close()
