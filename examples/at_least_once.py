"""At-least-once: process the record first, then commit its offset.

    python examples/at_least_once.py --bootstrap 127.0.0.1:9092 --crash-after 7   # dies at order-7
    python examples/at_least_once.py --bootstrap 127.0.0.1:9092                   # carries on

Processing appends the record's value to ``--output``. The crash comes after order-7 is processed and before its
offset is committed: the restarted worker starts again at order-7 and processes it a second time. No record is
lost, and a record may be processed more than once, so the processing should tolerate repeats.
"""

from __future__ import annotations

from confluent_kafka import Message
from delivery_common import consume_all, crash_if, ensure_input, group_consumer, parse_args, report


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    group = args.group or f"{args.topic}-at-least-once"
    ensure_input(args.bootstrap, args.topic, args.records)
    consumer = group_consumer(args.bootstrap, group)
    consumer.subscribe([args.topic])
    with open(args.output, "a", encoding="utf-8") as out:

        def handle(msg: Message) -> None:
            out.write(msg.value().decode() + "\n")  # 1. process
            out.flush()
            crash_if(args.crash_after, msg.offset(), "processed, not committed")
            consumer.commit(message=msg, asynchronous=False)  # 2. commit

        handled = consume_all(consumer, args.bootstrap, args.topic, handle, {})
    consumer.close()
    report({"handled": handled})


if __name__ == "__main__":
    main()
