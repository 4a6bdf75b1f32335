"""A full disk under real producers: a broker process on a small tmpfs, filled by confluent-kafka with acks=all.

The promise: a full disk refuses writes (KAFKA_STORAGE_ERROR, retried by the client) while reads and metadata
keep working; no acknowledged record is lost and no offset is handed out twice; writes resume by themselves when
space is freed; SIGTERM on the full disk stops with a clear message and no traceback; the broker restarts on the
full disk, and after ``kill -9``, with every acknowledged record where it was acknowledged. On a disk full to its
last block, an operator's DeleteRecords and lower retention are answered (the log dir's space reserve) and free it.

Needs root (to mount the tmpfs); skipped otherwise. Bounded: every loop has a deadline.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.small_disk import fill, small_tmpfs

from .harness import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.clients]

TOPIC = "filling"
PARTITIONS = 3
DISK_MB = 24
BALLAST_MB = 6
VALUE_SIZE = 900


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", DISK_MB) as mount:
        yield mount


class Ledger:
    """Every acknowledged record: value -> (partition, offset); and every failed delivery."""

    def __init__(self) -> None:
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed = 0
        self.serial = 0

    def on_delivery(self, err: object, msg: object) -> None:
        if err is not None:
            self.failed += 1
        else:
            self.acked[msg.value()] = (msg.partition(), msg.offset())  # type: ignore[attr-defined]

    def produce(
        self, bootstrap: str, *, until_failures: int | None, count: int | None, seconds: float
    ) -> int:
        """Produce unique values (acks=all, idempotent) until ``until_failures`` deliveries failed or ``count``
        were sent; returns how many were sent."""
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 3000,
                "retry.backoff.ms": 50,
            }
        )
        failed_before = self.failed
        sent = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if until_failures is not None and self.failed - failed_before >= until_failures:
                break
            if count is not None and sent >= count:
                break
            self.serial += 1
            value = f"{self.serial:09d}".encode().ljust(VALUE_SIZE, b".")
            try:
                producer.produce(
                    TOPIC, value=value, partition=self.serial % PARTITIONS, on_delivery=self.on_delivery
                )
                sent += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.flush(15)
        return sent


def read_all(bootstrap: str, expect: int, seconds: float = 30.0) -> dict[tuple[int, int], bytes]:
    """Every record of the topic from the start: (partition, offset) -> value (a duplicate offset fails)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + seconds
    idle = 0
    try:
        while time.monotonic() < deadline and (len(seen) < expect or idle < 3):
            batch = consumer.consume(num_messages=2000, timeout=0.5)
            idle = 0 if batch else idle + 1
            for msg in batch:
                assert not msg.error(), msg.error()
                key = (msg.partition(), msg.offset())
                assert key not in seen, f"offset {key} read twice"
                seen[key] = msg.value()
    finally:
        consumer.close()
    return seen


def assert_every_ack_kept(ledger: Ledger, seen: dict[tuple[int, int], bytes]) -> None:
    by_value = {value: where for where, value in seen.items()}
    missing = [v for v in ledger.acked if v not in by_value]
    moved = [
        (v, ledger.acked[v], by_value[v])
        for v in ledger.acked
        if v in by_value and by_value[v] != ledger.acked[v]
    ]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:2]}"
    assert not moved, f"{len(moved)} acknowledged records at other offsets, e.g. {moved[:2]}"
    assert len(by_value) == len(seen), "one value stored at two offsets"


def start(data: Path, port: int = 0, **overrides: str) -> BrokerProcess:
    broker = BrokerProcess(
        data_dir=data,
        port=port,
        overrides={"num.partitions": str(PARTITIONS), "log.segment.bytes": str(1024 * 1024), **overrides},
    )
    broker.start()
    return broker


def test_a_full_disk_refuses_writes_keeps_serving_and_loses_nothing(small_disk: Path) -> None:
    ballast, spare = small_disk / "ballast", small_disk / "spare"
    ballast.write_bytes(b"\0" * BALLAST_MB * 1024 * 1024)
    spare.write_bytes(b"\0" * 2 * 1024 * 1024)
    broker = start(small_disk / "data")
    ledger = Ledger()
    try:
        ledger.produce(broker.bootstrap, until_failures=50, count=None, seconds=60)
        assert ledger.failed >= 50, "the disk never filled"
        filled = len(ledger.acked)
        assert filled > 1000

        # full: reads and metadata are served, every acknowledged record is where it was acknowledged
        assert_every_ack_kept(ledger, read_all(broker.bootstrap, filled))
        from confluent_kafka.admin import AdminClient

        topics = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
        assert len(topics[TOPIC].partitions) == PARTITIONS

        # space freed: writes resume with no restart, at offsets after every earlier one
        ballast.unlink()
        before = {p: max(o for (q, o) in ledger.acked.values() if q == p) for p in range(PARTITIONS)}
        failed = ledger.failed
        ledger.produce(broker.bootstrap, until_failures=None, count=300, seconds=30)
        assert ledger.failed == failed, "writes did not resume after space was freed"
        newest = list(ledger.acked.items())[-300:]
        assert all(offset > before[partition] for _, (partition, offset) in newest)

        # full again, then SIGTERM on the full disk: a clear message, no traceback
        ledger.produce(broker.bootstrap, until_failures=30, count=None, seconds=60)
        code = broker.stop()
        output = "".join(broker.output)
        assert code in (0, 3), output[-3000:]
        assert "Traceback" not in output, output[-3000:]
        assert "shut down" in output
        # each refused append is answered, not logged: a line per partition a minute at most
        refused = [line for line in broker.output if "append to" in line and "failed" in line]
        assert 1 <= len(refused) <= 2 * PARTITIONS, refused[:5]

        # a restart on the full disk serves everything acknowledged
        broker = start(small_disk / "data", broker.port)
        assert_every_ack_kept(ledger, read_all(broker.bootstrap, len(ledger.acked)))

        # kill -9 under load (some space freed first), restart: still everything
        spare.unlink()
        ledger.produce(broker.bootstrap, until_failures=None, count=200, seconds=20)
        broker.stop(signal.SIGKILL)
        broker = start(small_disk / "data", broker.port)
        seen = read_all(broker.bootstrap, len(ledger.acked))
        assert_every_ack_kept(ledger, seen)
        assert "Traceback" not in "".join(broker.output)
    finally:
        broker.stop()


def test_an_operator_frees_a_disk_full_to_its_last_block_with_kafkas_admin_requests(small_disk: Path) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    broker = start(small_disk / "data", **{"log.segment.delete.delay.ms": "200"})
    ledger = Ledger()
    try:
        ledger.produce(broker.bootstrap, until_failures=50, count=None, seconds=60)
        assert ledger.failed >= 50, "the disk never filled"
        fill(small_disk / "ballast")
        assert os.statvfs(small_disk).f_bavail == 0
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})

        # DeleteRecords writes the partition's leader-epoch checkpoint first; a lower retention, the topic's config
        high = max(offset for partition, offset in ledger.acked.values() if partition == 0) + 1
        target = TopicPartition(TOPIC, 0, high // 2)
        try:
            deleted = admin.delete_records([target])[target].result(15)
            resource = ConfigResource("TOPIC", TOPIC)
            lower = ConfigEntry(
                "retention.bytes", str(1024 * 1024), incremental_operation=AlterConfigOpType.SET
            )
            admin.incremental_alter_configs([ConfigResource("TOPIC", TOPIC, incremental_configs=[lower])])[
                resource
            ].result(15)
        except KafkaException as exc:
            pytest.fail(f"refused on the full disk: {exc}")
        assert deleted.low_watermark == high // 2

        # what they delete frees the disk within seconds (not at the next retention check, 5 minutes away), and
        # writes resume with nothing deleted by hand
        deadline = time.monotonic() + 20
        while os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize < 4 * 1024 * 1024:
            assert time.monotonic() < deadline, "the requests freed no space"
            time.sleep(0.2)
        failed = ledger.failed
        ledger.produce(broker.bootstrap, until_failures=None, count=300, seconds=30)
        assert ledger.failed == failed, "writes did not resume"

        # every acknowledged record the requests did not delete is where it was acknowledged
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watermarks"})
        try:
            starts = {
                p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[0]
                for p in range(PARTITIONS)
            }
        finally:
            consumer.close()
        assert starts[0] >= high // 2
        kept = Ledger()
        kept.acked = {v: (p, o) for v, (p, o) in ledger.acked.items() if o >= starts[p]}
        assert_every_ack_kept(kept, read_all(broker.bootstrap, len(kept.acked)))
        described = admin.describe_configs([resource])[resource].result(15)
        assert described["retention.bytes"].value == str(1024 * 1024)

        # the reserve they drew on is taken back now that there is room
        reserve = small_disk / "data" / ".samsa-space-reserve"
        deadline = time.monotonic() + 10
        while reserve.stat().st_size < 1024 * 1024:
            assert time.monotonic() < deadline, "the space reserve was not taken back"
            time.sleep(0.2)
        output = "".join(broker.output)
        assert "space reserve" in output and "Traceback" not in output, output[-3000:]
    finally:
        broker.stop()
