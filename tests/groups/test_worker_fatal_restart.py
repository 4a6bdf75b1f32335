"""The group test worker after librdkafka's fatal error: it closes that consumer and starts another, as librdkafka
asks of applications (the nemesis relies on it: a static member fenced after its own session timed out).

The fatal error is made as a static member's is in production: another consumer joins with the worker's
``group.instance.id``, the coordinator gives it the worker's place (Kafka's static membership), and the worker's
next heartbeat is answered FENCED_INSTANCE_ID, which librdkafka treats as fatal. The intruder then closes (a
static member's close does not leave the group), and the worker's new consumer takes the place back and reads on.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.clients.harness import BrokerProcess, Message, ck_produce
from tests.groups.test_group_clients import PARTITIONS, Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

INSTANCE = "reader-1"


def test_a_worker_fenced_by_its_static_twin_starts_a_new_consumer_and_reads_on(
    group_broker: BrokerProcess, tmp_path: Path
) -> None:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap, topic, group = group_broker.bootstrap, "fenced", "fenced-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS)])[topic].result(20)
    produced: set[tuple[int, str]] = set()

    def produce(tag: str) -> None:
        for partition in range(PARTITIONS):
            values = [f"{tag}-{partition}-{i}" for i in range(10)]
            ck_produce(bootstrap, topic, [Message(None, v.encode()) for v in values], partition=partition)
            produced.update((partition, v) for v in values)

    worker = Worker(
        "confluent-kafka",
        bootstrap,
        topic,
        group,
        tmp_path / "worker.log",
        client_config={"group.instance.id": INSTANCE},
    )

    def state() -> str:
        return f"fatal {worker.fatal}, assigned {worker.assigned}\n{worker.log_tail()}"

    everything = list(range(PARTITIONS))
    try:
        wait_for(lambda: worker.assigned == everything, "the worker to own every partition", state=state)
        produce("before")
        wait_for(lambda: worker.delivered() == produced, "the first records", state=state)

        twin = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.instance.id": INSTANCE,
                "session.timeout.ms": 6000,
                "enable.auto.commit": False,
            }
        )
        try:
            twin.subscribe([topic])
            deadline = time.monotonic() + 60
            while not twin.assignment() and time.monotonic() < deadline:
                twin.poll(0.2)
            assert twin.assignment(), "the twin took the static member's place"
            wait_for(lambda: bool(worker.fatal), "the worker's consumer to be fenced", state=state)
        finally:
            twin.close()
        assert "fenced" in worker.fatal[0].lower(), worker.fatal  # FENCED_INSTANCE_ID in librdkafka's words

        wait_for(
            lambda: worker.assigned == everything, "the worker's new consumer to own them again", state=state
        )
        produce("after")
        wait_for(lambda: worker.delivered() == produced, "the records after the fence", state=state)
        assert worker.process.poll() is None, "the worker kept running"
    finally:
        worker.stop()
