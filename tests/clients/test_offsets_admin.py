"""ListOffsets through real clients, and topic administration through each client's admin API."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from .harness import BrokerProcess, Message, ck_produce

pytestmark = pytest.mark.clients

BASE_TS = 1_700_000_000_000


def make_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce_timed(broker: BrokerProcess, topic: str) -> None:
    # one message per batch so that timestamps map to offsets exactly
    for i in range(10):
        ck_produce(broker.bootstrap, topic, [Message(None, f"m{i}".encode(), (), BASE_TS + i * 1000)])


def test_offsets_for_times_confluent(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, TopicPartition

    topic = make_topic("times-ck")
    produce_timed(broker, topic)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "times"})
    try:
        query = [TopicPartition(topic, 0, BASE_TS + 3500)]
        (found,) = consumer.offsets_for_times(query, timeout=10)
        assert found.offset == 4
        (exact,) = consumer.offsets_for_times([TopicPartition(topic, 0, BASE_TS + 3000)], timeout=10)
        assert exact.offset == 3
        (after,) = consumer.offsets_for_times([TopicPartition(topic, 0, BASE_TS + 99_000)], timeout=10)
        assert after.offset == -1  # no such record: the end
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert (low, high) == (0, 10)
    finally:
        consumer.close()


def test_offsets_for_times_kafka_python(broker: BrokerProcess) -> None:
    from kafka import KafkaConsumer, TopicPartition

    topic = make_topic("times-kp")
    produce_timed(broker, topic)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        found = consumer.offsets_for_times({tp: BASE_TS + 7000})[tp]
        assert (found.offset, found.timestamp) == (7, BASE_TS + 7000)
        assert consumer.beginning_offsets([tp])[tp] == 0
        assert consumer.end_offsets([tp])[tp] == 10
    finally:
        consumer.close()


def test_offsets_for_times_aiokafka(broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    topic = make_topic("times-ak")
    produce_timed(broker, topic)

    async def run() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            found = (await consumer.offsets_for_times({tp: BASE_TS + 1}))[tp]
            assert found is not None and found.offset == 1
            assert (await consumer.end_offsets([tp]))[tp] == 10
        finally:
            await consumer.stop()

    asyncio.run(run())


def test_admin_confluent(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = make_topic("admin-ck")
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=2, replication_factor=1, config={"retention.ms": "3600000"})]
    )
    futures[topic].result(15)
    metadata = admin.list_topics(topic, timeout=10)
    assert sorted(metadata.topics[topic].partitions) == [0, 1]

    # creating it again is TOPIC_ALREADY_EXISTS
    with pytest.raises(Exception, match=r"(?i)already exists"):
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(15)

    admin.create_partitions([NewPartitions(topic, 4)])[topic].result(15)
    assert sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions) == [0, 1, 2, 3]
    with pytest.raises(Exception, match=r"(?i)partitions"):
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(15)

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(15)
    assert configs["retention.ms"].value == "3600000"
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].is_default

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "7200000"})
    admin.alter_configs([resource])[resource].result(15)
    again = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
    assert next(iter(again.values())).result(15)["retention.ms"].value == "7200000"

    admin.delete_topics([topic])[topic].result(15)
    assert topic not in admin.list_topics(timeout=10).topics


def test_admin_kafka_python(broker: BrokerProcess) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    topic = make_topic("admin-kp")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        assert topic in admin.list_topics()
        admin.create_partitions({topic: NewPartitions(total_count=3)})
        described = admin.describe_topics([topic])
        assert len(described[0]["partitions"]) == 3
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.bytes": "1000000"})]
        )
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])["topic"][topic]
        assert modified["retention.bytes"]["value"] == "1000000"
        assert modified["retention.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        every = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        assert every["topic"][topic]["segment.bytes"]["value"] == "1073741824"
        admin.delete_topics([topic])
        assert topic not in admin.list_topics()
    finally:
        admin.close()


def test_admin_aiokafka(broker: BrokerProcess) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic

    topic = make_topic("admin-ak")

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
            assert topic in await admin.list_topics()
            await admin.create_partitions({topic: NewPartitions(total_count=5)})
            await admin.delete_topics([topic])
            assert topic not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())
