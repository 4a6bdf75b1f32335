"""One group consumer in its own process, so a test can stop it cleanly (SIGTERM: leave the group) or kill it
(SIGKILL: the broker must notice through the session timeout).

    python -m tests.groups.consumer_worker LIBRARY BOOTSTRAP TOPIC GROUP [SESSION_TIMEOUT_MS]

The session timeout is 6 s unless given: short, so that a killed member is noticed soon.

Prints one JSON object a line on stdout:
    {"assigned": [partitions]}              after every assignment change (the whole current assignment)
    {"fatal": "...", "assigned": []}        the client's fatal error: the consumer is closed and another started
    {"consumed": [[partition, offset, value], ...]}
                                            records of one poll, printed only after their offsets were committed
                                            synchronously
    {"uncommitted": [[partition, offset, value], ...]}
                                            records of one poll whose commit failed: the consumer seeks back to
                                            them where it still owns the partition (it reads them again), else
                                            their partition's next owner does, from the committed offset. A
                                            failed commit may have been applied all the same (its answer lost,
                                            as with Kafka): then nobody reads them again, and this line is the
                                            only report that they were delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

SESSION_TIMEOUT_MS = 6000
HEARTBEAT_MS = 1000

stopping = False


def emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def next_offsets(records: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """(partition, offset to commit: one past its last record) for each partition in ``records``."""
    return list({partition: offset + 1 for partition, offset, _ in records}.items())


def commit_failed(
    records: list[tuple[int, int, str]], owned: set[int], seek: Callable[[int, int], object]
) -> None:
    """Report ``records`` as delivered but not committed, and seek each partition still owned back to its first
    one (a partition already revoked is left to its next owner)."""
    emit({"uncommitted": [list(r) for r in records]})
    firsts: dict[int, int] = {}
    for partition, offset, _ in records:
        firsts.setdefault(partition, offset)
    for partition, offset in firsts.items():
        if partition in owned:
            with contextlib.suppress(Exception):  # revoked meanwhile: its next owner reads them
                seek(partition, offset)


def on_term(*_: object) -> None:
    global stopping
    stopping = True


def run_confluent(bootstrap: str, topic: str, group: str) -> None:
    """Consume and commit until SIGTERM. A fatal client error (librdkafka's: the consumer cannot go on) closes the
    consumer and starts another, as an application must: librdkafka 2.16 heartbeats a static member with the
    member id it has just cleared after its own session timed out, the coordinator answers FENCED_INSTANCE_ID,
    as Kafka's does, and librdkafka treats that as fatal (the nemesis, seed 13, 2026-11-29: both readers, after
    45 s of overlapping faults with no coordinator, never read again)."""
    while not stopping:
        if not _consume_confluent(bootstrap, topic, group):
            return


def _consume_confluent(bootstrap: str, topic: str, group: str) -> bool:
    """One consumer's life: False when stopped, True after a fatal error (start another)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    fatal_code = KafkaError._FATAL
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "topic.metadata.refresh.interval.ms": 1000,
            # librdkafka's debug contexts (e.g. "cgrp,fetch") into the worker's log, to follow a stuck member
            **({"debug": os.environ["SAMSA_WORKER_DEBUG"]} if os.environ.get("SAMSA_WORKER_DEBUG") else {}),
            # what the test starting the worker adds (``Worker(client_config=...)``)
            **json.loads(os.environ.get("SAMSA_WORKER_CONFIG", "{}")),
        }
    )
    owned: set[int] = set()

    def on_assign(c: Any, partitions: list[Any]) -> None:
        owned.clear()
        owned.update(p.partition for p in partitions)
        emit({"assigned": sorted(owned)})

    def on_revoke(c: Any, partitions: list[Any]) -> None:
        owned.difference_update(p.partition for p in partitions)
        emit({"assigned": sorted(owned)})

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    try:
        while not stopping:
            messages = consumer.consume(num_messages=100, timeout=0.2)
            fatal = [
                e
                for e in (m.error() for m in messages)
                if e is not None and (e.fatal() or e.code() == fatal_code)
            ]
            if fatal:
                emit({"fatal": str(fatal[0]), "assigned": []})
                return True
            records = [m for m in messages if m.error() is None]
            if not records:
                continue
            got = [(m.partition(), m.offset(), m.value().decode()) for m in records]
            # said before the commit, which may never return (a client hung inside it: nemesis, 2026-11-29)
            emit({"committing": [list(r) for r in got]})
            try:
                consumer.commit(
                    offsets=[TopicPartition(topic, p, o) for p, o in next_offsets(got)], asynchronous=False
                )
            except KafkaException:
                commit_failed(got, owned, lambda p, o: consumer.seek(TopicPartition(topic, p, o)))
                continue
            emit({"consumed": [list(r) for r in got]})
    finally:
        with contextlib.suppress(Exception):  # a consumer in a fatal state may refuse to close cleanly
            consumer.close()
    return False


def run_kafka_python(bootstrap: str, topic: str, group: str) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.errors import KafkaError

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_MS,
        metadata_max_age_ms=1000,
    )

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            emit({"assigned": []})

        def on_partitions_assigned(self, assigned: Any) -> None:
            emit({"assigned": sorted(tp.partition for tp in assigned)})

    consumer.subscribe([topic], listener=Listener())
    try:
        while not stopping:
            # kafka-python 3.0.12 loses a join that completes after poll's timeout ran out mid-join, when the
            # rejoin came from its own metadata check (a leader that assigned before the topic's metadata came):
            # the member never applies its assignment nor heartbeats again, and the group drops it. Seen here
            # 2026-11-26 (its debug log: "timeout in ensure_active_group", then need_rejoin False forever). A
            # long poll makes running out mid-join rare; records still return as soon as they come.
            batches = consumer.poll(timeout_ms=2000)
            records = [r for rs in batches.values() for r in rs]
            if not records:
                continue
            got = [(r.partition, r.offset, r.value.decode()) for r in records]
            try:
                consumer.commit(
                    {TopicPartition(topic, p): OffsetAndMetadata(o, None, -1) for p, o in next_offsets(got)}
                )
            except KafkaError:
                owned = {tp.partition for tp in consumer.assignment()}
                commit_failed(got, owned, lambda p, o: consumer.seek(TopicPartition(topic, p), o))
                continue
            emit({"consumed": [list(r) for r in got]})
    finally:
        consumer.close()


def run_aiokafka(bootstrap: str, topic: str, group: str) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            emit({"assigned": []})

        async def on_partitions_assigned(self, assigned: Any) -> None:
            emit({"assigned": sorted(tp.partition for tp in assigned)})

    async def run() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            metadata_max_age_ms=1000,
        )
        await consumer.start()
        consumer.subscribe([topic], listener=Listener())
        try:
            while not stopping:
                batches = await consumer.getmany(timeout_ms=200)
                records = [r for rs in batches.values() for r in rs]
                if not records:
                    continue
                got = [(r.partition, r.offset, r.value.decode()) for r in records]
                try:
                    await consumer.commit({TopicPartition(topic, p): o for p, o in next_offsets(got)})
                except KafkaError:
                    owned = {tp.partition for tp in consumer.assignment()}
                    commit_failed(got, owned, lambda p, o: consumer.seek(TopicPartition(topic, p), o))
                    continue
                emit({"consumed": [list(r) for r in got]})
        finally:
            await consumer.stop()

    asyncio.run(run())


RUNNERS = {"confluent-kafka": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}


def main() -> None:
    global SESSION_TIMEOUT_MS
    library, bootstrap, topic, group = sys.argv[1:5]
    if len(sys.argv) > 5:
        SESSION_TIMEOUT_MS = int(sys.argv[5])
    # the client library's own account (joins, rebalances, errors) on stderr, which the test keeps in a file
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, on_term)
    RUNNERS[library](bootstrap, topic, group)
    emit({"closed": True})


if __name__ == "__main__":
    main()
