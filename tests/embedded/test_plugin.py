"""The pytest plugin, as a user's test suite sees it: run through pytester in a separate pytest session."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = """
import pytest
from confluent_kafka import Producer


def test_fixture_serves_a_real_client(samsa_broker):
    samsa_broker.create_topic("user-topic")
    producer = Producer({"bootstrap.servers": samsa_broker.bootstrap_servers})
    producer.produce("user-topic", b"hello", partition=0)
    assert producer.flush(20) == 0
    assert samsa_broker.high_watermark("user-topic", 0) == 1


@pytest.mark.samsa_broker(config={"num.partitions": "3"})
def test_marker_passes_config(samsa_broker):
    assert samsa_broker.core.config.get("num.partitions") == 3


def test_clock_fixture_drives_the_broker(samsa_broker, samsa_clock):
    assert samsa_broker.clock is samsa_clock


def test_async_client_on_the_tests_own_loop(samsa_broker):
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def produce():
        producer = AIOKafkaProducer(bootstrap_servers=samsa_broker.bootstrap_servers)
        await producer.start()
        try:
            return (await producer.send_and_wait("async-topic", b"x", partition=0)).offset
        finally:
            await producer.stop()

    assert asyncio.run(produce()) == 0


def test_factory_starts_independent_brokers(samsa_broker_factory):
    one, two = samsa_broker_factory(), samsa_broker_factory()
    assert one.bootstrap_servers != two.bootstrap_servers
    assert one.log_dir != two.log_dir

"""


def test_user_suite_gets_the_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "-q")
    result.assert_outcomes(passed=5)


def test_fixture_stops_the_broker_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_teardown="""
import socket

PORTS = []


def test_uses_broker(samsa_broker):
    PORTS.append(samsa_broker.port)
    socket.create_connection(("127.0.0.1", PORTS[0]), timeout=5).close()


def test_port_is_closed_after():
    try:
        socket.create_connection(("127.0.0.1", PORTS[0]), timeout=5).close()
    except ConnectionRefusedError:
        return
    raise AssertionError("the previous test's broker still listens")
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2)
