"""Committed offsets survive a broker restart, clean (SIGTERM) and after SIGKILL, and a group resumes from them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.harness import BrokerProcess, Message, ck_produce

TOPIC = "ledger"
GROUP = "ledger-readers"
COMMITS = {0: 10, 1: 4, 2: 0}
DESCRIBE = ("--describe", "--group", GROUP)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(data_dir=tmp_path / "data")
    proc.start()
    yield proc
    proc.stop()


def committed(bootstrap: str, group: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        found = consumer.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=20)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def resume(bootstrap: str) -> list[tuple[int, int]]:
    """Join the group and read what is left after the committed offsets."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([TOPIC])
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + 30
    expected = sum(12 - COMMITS[p] for p in range(3))
    try:
        while len(got) < expected and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.5):
                if m.error() is None:
                    got.append((m.partition(), m.offset()))
    finally:
        consumer.close()
    return sorted(got)


def test_committed_offsets_survive_clean_and_unclean_restarts(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3)])[TOPIC].result(20)
    for p in range(3):
        ck_produce(broker.bootstrap, TOPIC, [Message(None, b"x")] * 12, partition=p)
    committer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "enable.auto.commit": False}
    )
    committer.commit(
        offsets=[TopicPartition(TOPIC, p, o) for p, o in COMMITS.items() if o], asynchronous=False
    )
    committer.close()
    expected = {0: 10, 1: 4, 2: -1001}  # -1001: nothing committed (librdkafka's OFFSET_INVALID)
    assert committed(broker.bootstrap, GROUP) == expected

    broker.stop()
    broker.start()
    assert committed(broker.bootstrap, GROUP) == expected

    broker.kill()
    broker.start()
    assert committed(broker.bootstrap, GROUP) == expected
    described = subprocess.run(
        [
            sys.executable,
            "-m",
            "samsa.cli",
            "consumer-groups",
            "--bootstrap-server",
            broker.bootstrap,
            *DESCRIBE,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    rows = [line.split() for line in described.splitlines() if line.startswith(GROUP)]
    assert [(r[2], r[3], r[4], r[5]) for r in rows] == [("0", "10", "12", "2"), ("1", "4", "12", "8")]
    left = resume(broker.bootstrap)
    assert left == [(p, o) for p in range(3) for o in range(COMMITS[p], 12)]


def test_a_corrupt_commit_costs_only_itself(broker: BrokerProcess) -> None:
    """One flipped byte in a ``__consumer_offsets`` batch, where the start-up check does not look (before the
    active segment's last index entry), once made the coordinator give up on the whole partition: every group's
    offsets read as never committed, and again at every restart. The batch is skipped; the commits after it load."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3)])[TOPIC].result(20)
    committer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "enable.auto.commit": False}
    )
    for offset in range(1, 101):  # a batch each: past the first index entry of the segment
        committer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    committer.commit(offsets=[TopicPartition(TOPIC, 1, 4)], asynchronous=False)
    committer.close()
    broker.stop()

    from samsa.records import iter_batches

    (segment,) = [
        path
        for path in broker.data_dir.glob("__consumer_offsets-*/*.log")
        if GROUP.encode() in path.read_bytes()
    ]
    data = bytearray(segment.read_bytes())
    ours = [b for b in iter_batches(bytes(data)) if GROUP.encode() in bytes(b.raw())]
    victim = ours[4]  # the commit of offset 5
    data[victim.end - 1] ^= 0xFF  # a CRC-covered byte: the batch's header and length stay as they were
    segment.write_bytes(bytes(data))

    broker.start()
    assert committed(broker.bootstrap, GROUP) == {0: 100, 1: 4, 2: -1001}
    assert "skipped what cannot be read" in "".join(broker.output)
    committer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "enable.auto.commit": False}
    )
    committer.commit(offsets=[TopicPartition(TOPIC, 2, 7)], asynchronous=False)
    committer.close()
    broker.stop()
    broker.start()  # and a commit made after the damage is there at the next start too
    assert committed(broker.bootstrap, GROUP) == {0: 100, 1: 4, 2: 7}


@pytest.mark.parametrize("length", [0x7FFFFF00, 5], ids=["too large", "too small"])
def test_a_damaged_commit_header_costs_only_its_segment(tmp_path: Path, length: int) -> None:
    """A damaged length in a ``__consumer_offsets`` batch of an older segment hides the rest of that segment
    (nothing says where the next batch starts), not the segments after it: the commits there load."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from samsa.records import iter_batches

    broker = BrokerProcess(data_dir=tmp_path / "data", overrides={"offsets.topic.segment.bytes": "8192"})
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 3)])[TOPIC].result(20)
        committer = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "enable.auto.commit": False}
        )
        for offset in range(1, 201):  # about three segments
            committer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
        committer.commit(offsets=[TopicPartition(TOPIC, 1, 4)], asynchronous=False)
        committer.close()
        broker.stop()
        first, *later = sorted(
            path
            for path in broker.data_dir.glob("__consumer_offsets-*/*.log")
            if GROUP.encode() in path.read_bytes()
        )
        assert later, "the commits should span segments"
        data = bytearray(first.read_bytes())
        victim = [b for b in iter_batches(bytes(data)) if GROUP.encode() in bytes(b.raw())][4]
        data[victim.position + 8 : victim.position + 12] = length.to_bytes(4, "big")
        first.write_bytes(bytes(data))

        broker.start()
        assert committed(broker.bootstrap, GROUP) == {0: 200, 1: 4, 2: -1001}
    finally:
        broker.stop()
