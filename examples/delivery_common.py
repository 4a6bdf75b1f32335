"""What the three delivery examples share: arguments, the input topic, a group consumer, and the crash switch.

Each example reads the topic ``orders`` (created and filled with ``--records`` records ``order-0``, ``order-1``, ...
on first use) in the consumer group ``--group``, handles every record once it is fetched, and stops when it has
handled everything up to the partition's end. ``--crash-after N`` kills the process (``os._exit``: no cleanup, no
flush, no leaving the group, as ``kill -9`` would) at the one moment that tells the guarantees apart, while handling
the record at offset N. Run it again without the flag and it carries on from what the first run left behind.

The consumer uses ``group.instance.id`` (static membership), so a restarted worker takes its old place in the group
at once instead of waiting for the dead one's session to time out.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

CRASH_EXIT_CODE = 3
IDLE_TIMEOUT_S = 30.0


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092", help="a Kafka or Samsa broker")
    parser.add_argument("--topic", default="orders", help="the input topic")
    parser.add_argument("--group", default=None, help="consumer group (default: <topic>-<example>)")
    parser.add_argument("--records", type=int, default=20, help="records to put in a new input topic")
    parser.add_argument("--crash-after", type=int, default=-1, metavar="OFFSET", help="crash at this record")
    parser.add_argument("--output", default="processed.txt", help="where the examples' effects go")
    return parser.parse_args()


def partition_count(bootstrap: str, topic: str) -> int:
    """How many partitions ``topic`` has."""
    return len(
        AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions
    )


def ensure_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    """Create ``topic`` unless it exists."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic in admin.list_topics(timeout=10).topics:
        return
    future = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic]
    try:
        future.result(10)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise


def ensure_input(bootstrap: str, topic: str, records: int) -> None:
    """Create the input topic and fill it with ``order-<i>`` records, once."""
    ensure_topic(bootstrap, topic)
    if high_watermark(bootstrap, topic, 0) > 0:
        return
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(records):
        producer.produce(topic, key=str(i).encode(), value=f"order-{i}".encode(), partition=0)
    if producer.flush(30) != 0:
        raise SystemExit("could not write the input records")


def high_watermark(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "delivery-examples-watermarks"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()
    return int(high)


def group_consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    """A consumer in ``group`` that commits only when told to (``enable.auto.commit=false``)."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.instance.id": f"{group}-worker-1",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **extra,
        }
    )


def crash_if(crash_after: int, offset: int, what: str) -> None:
    """Die at once, like kill -9, when ``offset`` is the record chosen for the crash."""
    if offset == crash_after:
        report({"crashed": offset, "moment": what})
        os._exit(CRASH_EXIT_CODE)


def report(doc: dict[str, Any]) -> None:
    print(json.dumps(doc), flush=True)


def consume_all(
    consumer: Consumer, bootstrap: str, topic: str, handle: Callable[[Message], None], start: dict[int, int]
) -> int:
    """Subscribe to ``topic`` and hand every record to ``handle`` until each assigned partition is read to its
    end; ``start`` maps a partition to the next offset to read (filled in by the caller's assignment hook, or
    from the group's committed offsets). Returns how many records were handled."""
    handled = 0
    deadline = time.monotonic() + IDLE_TIMEOUT_S
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None:
            if msg.error():
                raise KafkaException(msg.error())
            handle(msg)
            start[msg.partition()] = msg.offset() + 1
            handled += 1
            deadline = time.monotonic() + IDLE_TIMEOUT_S
            continue
        assigned = consumer.assignment()
        if assigned and all(_caught_up(consumer, bootstrap, tp, start) for tp in assigned):
            return handled
    raise SystemExit(f"gave up: no progress for {IDLE_TIMEOUT_S} s")


def _caught_up(consumer: Consumer, bootstrap: str, tp: TopicPartition, start: dict[int, int]) -> bool:
    position = start.get(tp.partition)
    if position is None:
        (committed,) = consumer.committed([TopicPartition(tp.topic, tp.partition)], timeout=10)
        position = committed.offset if committed.offset >= 0 else 0
        start[tp.partition] = position
    _, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
    return bool(position >= high)
