"""Exactly-once with Kafka transactions: consume, transform, produce, and commit the input offsets in the same
transaction (Kafka's consume-transform-produce, KIP-98 and KIP-447).

    python examples/exactly_once.py --bootstrap 127.0.0.1:9092 --crash-after 7   # dies at order-7
    python examples/exactly_once.py --bootstrap 127.0.0.1:9092                   # carries on

Each input record becomes one record of ``<topic>-out`` (same partition), with a ``source-offset`` header naming
the input offset it came from. Every record is handled in a transaction of the producer ``<group>-worker``
(``transactional.id``): its output record, and the group's offset after its input record
(``send_offsets_to_transaction``), are committed together or not at all. The crash comes in the middle: the output
of order-7 is written, its transaction not committed.

When the worker starts again, ``init_transactions`` with the same ``transactional.id`` fences the dead instance and
aborts its open transaction: the output of order-7 is written but aborted, so consumers with
``isolation.level=read_committed`` never see it, and the group's committed offset still points at order-7, which
is handled again, in a new transaction. A read_committed reader of the output sees each order exactly once, in
order. (A read_uncommitted reader would see the aborted record too: that is the point of the isolation level.)

Inputs are read with ``isolation.level=read_committed`` too, so that a pipeline of such workers is exactly-once
end to end.
"""

from __future__ import annotations

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from delivery_common import (
    consume_all,
    crash_if,
    ensure_input,
    ensure_topic,
    group_consumer,
    parse_args,
    partition_count,
    report,
)

SOURCE_OFFSET = "source-offset"


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    group = args.group or f"{args.topic}-exactly-once"
    output_topic = f"{args.topic}-out"
    ensure_input(args.bootstrap, args.topic, args.records)
    # the output partition matches the input's: as many (the input may already exist with more than one)
    ensure_topic(args.bootstrap, output_topic, partition_count(args.bootstrap, args.topic))
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "transactional.id": f"{group}-worker",  # the same after a restart: that is what fences the old one
            "transaction.timeout.ms": 60_000,
        }
    )
    producer.init_transactions(30)  # aborts whatever the previous instance left open
    consumer = group_consumer(args.bootstrap, group, **{"isolation.level": "read_committed"})
    positions: dict[int, int] = {}

    def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
        c.assign(partitions)  # from the group's committed offsets: those of the last committed transaction

    consumer.subscribe([args.topic], on_assign=on_assign)

    def handle(msg: Message) -> None:
        producer.begin_transaction()
        result = f"shipped {msg.value().decode()}".encode()
        headers = [(SOURCE_OFFSET, str(msg.offset()).encode())]
        producer.produce(output_topic, value=result, partition=msg.partition(), headers=headers)
        if producer.flush(30) != 0:
            raise SystemExit("output not acknowledged")
        crash_if(args.crash_after, msg.offset(), "output written, transaction not committed")
        next_offset = [TopicPartition(msg.topic(), msg.partition(), msg.offset() + 1)]
        producer.send_offsets_to_transaction(next_offset, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)  # the output and the offset, together

    handled = consume_all(consumer, args.bootstrap, args.topic, handle, positions)
    consumer.close()
    report({"handled": handled})


if __name__ == "__main__":
    main()
