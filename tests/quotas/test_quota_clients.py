"""Client quotas through real clients: a producer and a consumer over their byte rates are slowed to them, with
Kafka's throttle times in the answers (librdkafka reports them), while a client without a quota is not; the
quotas outlive a restart. Set with ``samsa configs`` as with kafka-configs.sh."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition

from samsa.cli.app import cli
from tests.clients.harness import BrokerProcess

pytestmark = [pytest.mark.timeout(120), pytest.mark.clients]

RATE = 400_000  # bytes per second
RECORDS, SIZE = (
    1_200,
    1_000,
)  # 1.2 MB: with a window of 2 one-second samples 400 KB pass at once, 800 KB take 2 s


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("samsa-quotas"), overrides={"quota.window.num": "2"}
    )
    proc.start()
    yield proc
    proc.stop()


def configs(broker: BrokerProcess, *args: str) -> str:
    result = CliRunner().invoke(cli, ["configs", "--bootstrap-server", broker.bootstrap, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def produce(broker: BrokerProcess, topic: str, client_id: str) -> tuple[float, list[int]]:
    """Seconds to have every record acknowledged, and the throttle times librdkafka was told."""
    throttles: list[int] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": client_id,
            "linger.ms": 5,
            "batch.size": 16_384,
            "throttle_cb": lambda event: throttles.append(int(event.throttle_time * 1000)),
        }
    )
    start = time.monotonic()
    for _ in range(RECORDS):
        producer.produce(topic, b"x" * SIZE, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    return time.monotonic() - start, throttles


def consume(broker: BrokerProcess, topic: str, client_id: str) -> float:
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "client.id": client_id, "group.id": client_id,
         "max.partition.fetch.bytes": 100_000}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    start, got = time.monotonic(), 0
    try:
        while got < RECORDS and time.monotonic() - start < 60:
            got += len([m for m in consumer.consume(500, 0.5) if not m.error()])
    finally:
        consumer.close()
    assert got >= RECORDS
    return time.monotonic() - start


def test_producer_and_consumer_over_their_quotas_are_slowed(broker: BrokerProcess) -> None:
    configs(broker, "--client", "slow-producer", "--alter", "--add-config", f"producer_byte_rate={RATE}")
    configs(broker, "--client", "slow-consumer", "--alter", "--add-config", f"consumer_byte_rate={RATE}")
    free_seconds, free_throttles = produce(broker, "quoted", "free")
    slow_seconds, slow_throttles = produce(broker, "quoted", "slow-producer")
    assert free_seconds < 1.0 and not free_throttles, (free_seconds, free_throttles)
    assert 1.5 < slow_seconds < 8 and max(slow_throttles, default=0) > 100, (slow_seconds, slow_throttles)
    assert consume(broker, "quoted", "free-consumer") < 1.0
    assert 1.5 < consume(broker, "quoted", "slow-consumer") < 8


def test_quotas_outlive_a_restart_and_are_removed(broker: BrokerProcess, tmp_path: Path) -> None:
    configs(broker, "--client-defaults", "--alter", "--add-config", "producer_byte_rate=5000000")
    broker.stop()
    broker.start()
    assert configs(broker, "--client-defaults", "--describe") == (
        "Quota configs for the default client-id are producer_byte_rate=5000000.0\n"
    )
    configs(broker, "--client-defaults", "--alter", "--delete-config", "producer_byte_rate")
    assert configs(broker, "--client-defaults", "--describe") == ""
