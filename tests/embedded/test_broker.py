"""samsa.Broker in its two forms, driven by real clients: async (aiokafka on the same loop) and threaded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import samsa
from samsa.protocol.messages.api_versions import ApiVersionsRequest
from tests.clients.harness import Message, ck_consume, ck_produce

from .wire import WireClient

MESSAGES = [Message(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)]


def test_threaded_broker_serves_confluent_kafka_and_stops_cleanly(tmp_path: Path) -> None:
    with samsa.Broker(tmp_path / "data") as broker:
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
        broker.create_topic("orders", partitions=2)
        acked = ck_produce(broker.bootstrap_servers, "orders", MESSAGES, partition=1)
        assert [offset for _, offset in acked] == list(range(20))
        consumed = ck_consume(broker.bootstrap_servers, "orders", 20, partition=1)
        assert [(c.offset, c.key, c.value) for c in consumed] == [
            (i, m.key, m.value) for i, m in enumerate(MESSAGES)
        ]
        assert broker.high_watermark("orders", 1) == 20
        assert broker.high_watermark("orders", 0) == 0
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "data" / "orders-1").is_dir()


def test_async_broker_serves_aiokafka_on_the_same_loop() -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def scenario() -> tuple[list[tuple[bytes, int]], Path]:
        async with samsa.Broker() as broker:
            broker.create_topic("events")
            producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
            await producer.start()
            try:
                for i in range(5):
                    await producer.send_and_wait("events", f"e{i}".encode(), partition=0)
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
            await consumer.start()
            got: list[tuple[bytes, int]] = []
            try:
                tp = TopicPartition("events", 0)
                consumer.assign([tp])
                await consumer.seek_to_beginning(tp)
                while len(got) < 5:
                    batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 20)
                    got += [(r.value, r.offset) for records in batches.values() for r in records]
            finally:
                await consumer.stop()
            return got, broker.log_dir

    got, log_dir = asyncio.run(scenario())
    assert got == [(f"e{i}".encode(), i) for i in range(5)]
    assert not log_dir.exists(), "the temporary log dir is removed at stop"


def test_explicit_port_and_restart_on_the_same_log_dir(tmp_path: Path) -> None:
    from tests.clients.harness import free_port

    port = free_port()
    with samsa.Broker(tmp_path, port=port) as broker:
        assert broker.bootstrap_servers == f"127.0.0.1:{port}"
        ck_produce(broker.bootstrap_servers, "kept", MESSAGES[:3])
    with samsa.Broker(tmp_path) as broker:
        assert broker.high_watermark("kept", 0) == 3


def test_config_overrides_reach_the_broker() -> None:
    with samsa.Broker(config={"num.partitions": "3"}) as broker:
        ck_produce(broker.bootstrap_servers, "auto", MESSAGES[:1], partition=2)
        assert broker.high_watermark("auto", 2) == 1


def test_create_topic_errors_carry_the_kafka_error() -> None:
    with samsa.Broker() as broker:
        broker.create_topic("twice")
        with pytest.raises(samsa.embedded.BrokerControlError, match="TOPIC_ALREADY_EXISTS"):
            broker.create_topic("twice")


def test_controls_refuse_when_not_running() -> None:
    broker = samsa.Broker()
    with pytest.raises(RuntimeError, match="not running"):
        broker.create_topic("x")
    with pytest.raises(RuntimeError, match="not running"):
        _ = broker.bootstrap_servers


def test_a_bad_config_fails_start_in_both_forms() -> None:
    from samsa.broker.config import ConfigError

    with pytest.raises(ConfigError, match=r"num\.partitions"), samsa.Broker(config={"num.partitions": "x"}):
        pass

    async def scenario() -> None:
        async with samsa.Broker(config={"num.partitions": "x"}):
            pass

    with pytest.raises(ConfigError, match=r"num\.partitions"):
        asyncio.run(scenario())


def test_controls_from_another_thread_while_async() -> None:
    """An async-form broker is still controllable from a worker thread (e.g. a sync client in to_thread)."""

    async def scenario() -> int:
        async with samsa.Broker() as broker:
            await asyncio.to_thread(broker.create_topic, "from-thread", 4)
            with WireClient(broker.bootstrap_servers) as client:
                response = await asyncio.to_thread(client.call, 18, 3, ApiVersionsRequest("t", "1"))
            assert response.error_code == 0
            return len(broker.core.replica_manager.partitions)

    assert asyncio.run(scenario()) == 4


def test_import_samsa_does_not_load_the_broker() -> None:
    import subprocess
    import sys

    code = (
        "import sys, samsa; loaded = 'samsa.embedded' in sys.modules or 'samsa.broker' in sys.modules; "
        "broker = samsa.Broker; print(loaded, broker.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "samsa.embedded"]
