"""At-most-once: commit the offset first, then process the record.

    python examples/at_most_once.py --bootstrap 127.0.0.1:9092 --crash-after 7   # dies at order-7
    python examples/at_most_once.py --bootstrap 127.0.0.1:9092                   # carries on

Processing appends the record's value to ``--output``. The crash comes after the offset of order-7 is committed
and before order-7 is processed: the restarted worker resumes after it, so order-7 is never processed. A record is
processed at most once, and may be lost.
"""

from __future__ import annotations

from confluent_kafka import Message, TopicPartition
from delivery_common import consume_all, crash_if, ensure_input, group_consumer, parse_args, report


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    group = args.group or f"{args.topic}-at-most-once"
    ensure_input(args.bootstrap, args.topic, args.records)
    consumer = group_consumer(args.bootstrap, group)
    consumer.subscribe([args.topic])
    with open(args.output, "a", encoding="utf-8") as out:

        def handle(msg: Message) -> None:
            next_offset = TopicPartition(msg.topic(), msg.partition(), msg.offset() + 1)
            consumer.commit(offsets=[next_offset], asynchronous=False)  # 1. commit
            crash_if(args.crash_after, msg.offset(), "committed, not processed")
            out.write(msg.value().decode() + "\n")  # 2. process
            out.flush()

        handled = consume_all(consumer, args.bootstrap, args.topic, handle, {})
    consumer.close()
    report({"handled": handled})


if __name__ == "__main__":
    main()
