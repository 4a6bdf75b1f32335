"""Exactly-once effect without transactions: an idempotent producer, and the input offset stored in the output.

    python examples/exactly_once.py --bootstrap 127.0.0.1:9092 --crash-after 7   # dies at order-7
    python examples/exactly_once.py --bootstrap 127.0.0.1:9092                   # carries on

Each input record becomes one record of ``<topic>-out`` (same partition), with a ``source-offset`` header naming
the input offset it came from. The output is the only truth about progress: when a partition is assigned, the
worker reads the last record of the matching output partition and resumes the input right after its
``source-offset``. Offsets are still committed to the group after each output is written, but only as a progress
report for monitoring; a crash between writing the output and committing (where at-least-once processes a
record twice) changes nothing here. The crash comes exactly there, at order-7.

The idempotent producer (``enable.idempotence=true``) is what keeps the output itself clean: a batch retried
after a lost acknowledgement is stored once, and batches stay in order, so what reached the output topic is always
a prefix of what was produced and its last record really is the latest progress.

What this does not give: Kafka transactions (output and offsets committed atomically, with read_committed
consumers never seeing uncommitted output). It relies on one worker per partition at a time (the group gives each
partition to one member) and on the worker finding its own previous output when it starts.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from delivery_common import (
    consume_all,
    crash_if,
    ensure_input,
    ensure_topic,
    group_consumer,
    high_watermark,
    parse_args,
    partition_count,
    report,
)

SOURCE_OFFSET = "source-offset"


def last_source_offset(bootstrap: str, output_topic: str, partition: int) -> int | None:
    """The ``source-offset`` of the last record in the output partition, or None when it is empty."""
    high = high_watermark(bootstrap, output_topic, partition)
    if high == 0:
        return None
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{output_topic}-recovery"})
    try:
        reader.assign([TopicPartition(output_topic, partition, high - 1)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = reader.poll(1.0)
            if msg is not None and not msg.error():
                return int(dict(msg.headers() or [])[SOURCE_OFFSET])
    finally:
        reader.close()
    raise SystemExit(f"could not read the last record of {output_topic}-{partition}")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    group = args.group or f"{args.topic}-exactly-once"
    output_topic = f"{args.topic}-out"
    ensure_input(args.bootstrap, args.topic, args.records)
    # the output partition matches the input's: as many (the input may already exist with more than one)
    ensure_topic(args.bootstrap, output_topic, partition_count(args.bootstrap, args.topic))
    producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True, "acks": "all"})
    consumer = group_consumer(args.bootstrap, group)
    positions: dict[int, int] = {}

    def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            done = last_source_offset(args.bootstrap, output_topic, tp.partition)
            if done is not None:
                tp.offset = done + 1  # resume from the output, whatever the group committed
                positions[tp.partition] = done + 1
        c.assign(partitions)

    consumer.subscribe([args.topic], on_assign=on_assign)

    def handle(msg: Message) -> None:
        result = f"shipped {msg.value().decode()}".encode()
        headers = [(SOURCE_OFFSET, str(msg.offset()).encode())]
        producer.produce(output_topic, value=result, partition=msg.partition(), headers=headers)
        if producer.flush(30) != 0:  # 1. the output, with its input offset, is written
            raise SystemExit("output not acknowledged")
        crash_if(args.crash_after, msg.offset(), "output written, offset not committed")
        consumer.commit(message=msg, asynchronous=False)  # 2. a progress report only

    handled = consume_all(consumer, args.bootstrap, args.topic, handle, positions)
    consumer.close()
    report({"handled": handled})


if __name__ == "__main__":
    main()
