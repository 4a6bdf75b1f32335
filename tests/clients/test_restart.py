"""A broker restarted, cleanly or after kill -9, serves every acknowledged record again."""

from __future__ import annotations

import os
import time

import pytest

from samsa.records import iter_batches

from .harness import BrokerProcess, Message, ck_consume, ck_produce, kp_consume

pytestmark = pytest.mark.clients


def batch(prefix: str, n: int) -> list[Message]:
    return [Message(f"{prefix}{i}".encode(), f"{prefix}-value-{i}".encode() * 3) for i in range(n)]


def keys_read(group: dict[str, object], topic: str, count: int) -> list[bytes]:
    """The keys a consumer of ``group`` (a confluent-kafka config) reads from ``topic`` where the group left
    off, until ``count`` came or 30 s passed."""
    from confluent_kafka import Consumer

    consumer = Consumer(group)
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        got += [m.key() for m in consumer.consume(500, 0.5) if not m.error()]
    consumer.close()
    return got


@pytest.mark.parametrize("how", ["clean", "kill -9"])
def test_acknowledged_records_survive_restart(fresh_broker: BrokerProcess, how: str) -> None:
    fresh_broker.overrides["log.segment.bytes"] = "16384"  # several segments
    fresh_broker.start()
    first = batch("a", 300)
    acked = ck_produce(fresh_broker.bootstrap, "durable", first, "none", acks="all", **{"batch.size": 4000})
    assert len(acked) == len(first)
    marker = fresh_broker.data_dir / ".kafka_cleanshutdown"
    if how == "clean":
        assert fresh_broker.stop() == 0
        assert marker.exists()
    else:
        fresh_broker.kill()
        assert not marker.exists()
    fresh_broker.start()
    consumed = ck_consume(fresh_broker.bootstrap, "durable", len(first))
    assert [c.message() for c in consumed][: len(first)] == [
        Message(m.key, m.value, (), consumed[i].timestamp) for i, m in enumerate(first)
    ]
    # the log carries on after the restart at the right offset
    more = batch("b", 20)
    acked_more = ck_produce(fresh_broker.bootstrap, "durable", more, "gzip", **{"batch.size": 4000})
    assert [o for _, o in acked_more] == list(range(300, 320))
    assert len(kp_consume(fresh_broker.bootstrap, "durable", 320)) == 320


def test_a_tail_lost_after_a_clean_stop_never_gives_its_offsets_again(fresh_broker: BrokerProcess) -> None:
    """A group read to the end and committed; the last batches' bytes are lost while the broker is stopped. New
    records go after every offset the log held, so the group, resuming at its committed offset, reads them all
    (with the lost offsets handed out again, it would skip as many as were lost, silently)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkPartition

    fresh_broker.start()
    acked = ck_produce(
        fresh_broker.bootstrap, "cut", batch("a", 200), "none", acks="all", **{"batch.size": 2000}
    )
    end = max(o for _, o in acked) + 1
    group = {"bootstrap.servers": fresh_broker.bootstrap, "group.id": "readers", "enable.auto.commit": False}
    consumer = Consumer({**group, "auto.offset.reset": "earliest"})
    consumer.subscribe(["cut"])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < len(acked) and time.monotonic() < deadline:
        seen += len([m for m in consumer.consume(500, 0.5) if not m.error()])
    consumer.commit(asynchronous=False)
    assert consumer.committed([CkPartition("cut", 0)], 10)[0].offset == end
    consumer.close()
    assert fresh_broker.stop() == 0
    active = sorted((fresh_broker.data_dir / "cut-0").glob("*.log"))[-1]
    content = active.read_bytes()
    last_two = list(iter_batches(content))[-2]
    active.write_bytes(content[: last_two.position])  # the last two batches gone, on a batch boundary
    fresh_broker.start()
    more = ck_produce(fresh_broker.bootstrap, "cut", batch("b", 40), "none", acks="all")
    assert min(o for _, o in more) == end  # never an offset that held a record
    assert sorted(keys_read(group, "cut", len(more))) == sorted(m.key for m in batch("b", 40))
    assert any("were handed out before" in line for line in fresh_broker.output)


@pytest.mark.parametrize("loss", ["damaged", "missing", "a new log dir in front"])
def test_producer_ids_are_never_handed_out_twice_when_their_file_is_lost(
    fresh_broker: BrokerProcess, loss: str
) -> None:
    """A second idempotent producer given the first one's id (and epoch) would have its first batch answered as
    a duplicate of the first one's, acknowledged at the old offsets and never stored."""
    idempotent = {"enable.idempotence": True, "batch.size": 100_000, "linger.ms": 50}
    fresh_broker.start()
    first = ck_produce(fresh_broker.bootstrap, "ids", batch("a", 5), "none", acks="all", **idempotent)
    assert sorted(o for _, o in first) == [0, 1, 2, 3, 4]
    assert fresh_broker.stop() == 0
    block = fresh_broker.data_dir / "producer-id-block"
    if loss == "damaged":
        block.write_bytes(b"\xff\x00 not a number\n")
    elif loss == "missing":
        block.unlink()
    else:  # a new, empty dir listed first: the file is read where it is
        front = fresh_broker.data_dir.parent / "front"
        front.mkdir()
        fresh_broker.overrides["log.dirs"] = f"{front},{fresh_broker.data_dir}"
    fresh_broker.start()
    second = ck_produce(fresh_broker.bootstrap, "ids", batch("b", 5), "none", acks="all", **idempotent)
    assert sorted(o for _, o in second) == [5, 6, 7, 8, 9]
    keys = [c.key for c in ck_consume(fresh_broker.bootstrap, "ids", 10)]
    assert keys == [m.key for m in batch("a", 5) + batch("b", 5)]
    if loss != "a new log dir in front":
        assert any("so none is given twice" in line for line in fresh_broker.output)


def test_a_damaged_topic_config_stops_the_start_and_the_restored_file_keeps_every_record(
    fresh_broker: BrokerProcess,
) -> None:
    """Given the defaults in place of an emptied config file, a compacted topic of month-old records came back
    as a delete topic and retention took every record at the first check."""
    from confluent_kafka.admin import AdminClient, NewTopic

    fresh_broker.start()
    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})
    admin.create_topics([NewTopic("kept", 1, 1, config={"cleanup.policy": "compact"})])["kept"].result(30)
    month_ago = int(time.time() * 1000) - 30 * 24 * 3600 * 1000
    records = [Message(f"k{i}".encode(), f"v{i}".encode(), (), month_ago) for i in range(20)]
    assert len(ck_produce(fresh_broker.bootstrap, "kept", records, "none", acks="all")) == 20
    assert fresh_broker.stop() == 0
    config = fresh_broker.data_dir / "topic-config.kept.properties"
    saved = config.read_bytes()
    config.write_bytes(b"")
    with pytest.raises(RuntimeError, match="broker did not start"):
        fresh_broker.start()
    assert any(
        "topic-config.kept.properties holds no settings" in line and "restore the file" in line
        for line in fresh_broker.output
    )
    config.write_bytes(saved)
    fresh_broker.start()
    assert [c.key for c in ck_consume(fresh_broker.bootstrap, "kept", 20)] == [m.key for m in records]


@pytest.mark.parametrize("how", ["clean", "kill -9"])
def test_a_damaged_commit_costs_only_itself_and_the_later_commits_stand(
    fresh_broker: BrokerProcess, how: str
) -> None:
    """Recovery cuts ``__consumer_offsets`` at a damaged batch; the commits after it, set aside, are appended
    again before the groups load, so each group keeps its latest commit."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkPartition

    fresh_broker.overrides["offsets.topic.num.partitions"] = "1"
    fresh_broker.start()
    ck_produce(fresh_broker.bootstrap, "read", batch("a", 1), "none")

    def commit(group: str, offset: int) -> None:
        consumer = Consumer({"bootstrap.servers": fresh_broker.bootstrap, "group.id": group})
        consumer.commit(offsets=[CkPartition("read", 0, offset)], asynchronous=False)
        consumer.close()

    def committed(group: str) -> int:
        consumer = Consumer({"bootstrap.servers": fresh_broker.bootstrap, "group.id": group})
        offset = consumer.committed([CkPartition("read", 0)], 20)[0].offset
        consumer.close()
        return int(offset)

    for offset in (100, 200, 300, 400, 500):
        commit("g", offset)
    commit("g2", 77)
    commit("g", 1234)
    if how == "clean":
        assert fresh_broker.stop() == 0
    else:
        fresh_broker.kill()
    segment = sorted((fresh_broker.data_dir / "__consumer_offsets-0").glob("*.log"))[-1]
    content = bytearray(segment.read_bytes())
    third = list(iter_batches(content))[2]  # g's commit of 300
    content[third.position + third.size_in_bytes // 2 + 6] ^= 0xFF  # inside its records: the CRC tells
    segment.write_bytes(bytes(content))
    fresh_broker.start()
    assert committed("g") == 1234
    assert committed("g2") == 77
    restored = "appended again, so the commits after the damaged bytes stand"
    assert sum(restored in line for line in fresh_broker.output) == 1
    assert fresh_broker.stop() == 0
    fresh_broker.start()  # nothing set aside this time: nothing appended again
    assert (committed("g"), committed("g2")) == (1234, 77)
    assert sum(restored in line for line in fresh_broker.output) == 1


def test_after_an_os_crash_no_offset_is_handed_out_again(fresh_broker: BrokerProcess) -> None:
    """An OS crash can lose the tail the page cache held (no fsync per append, as in Kafka). Simulated: kill -9,
    the tail cut as a lost page cache leaves it, and the log dir's claims said to come from another boot. The
    records are gone, but their offsets are not handed out again: the log continues at its claim, and a group
    committed at the old end reads every new record."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkPartition

    fresh_broker.start()
    acked = ck_produce(fresh_broker.bootstrap, "crash", batch("a", 300), "none", **{"batch.size": 2000})
    end = max(o for _, o in acked) + 1
    group = {"bootstrap.servers": fresh_broker.bootstrap, "group.id": "readers", "enable.auto.commit": False}
    consumer = Consumer(group)
    consumer.commit(offsets=[CkPartition("crash", 0, end)], asynchronous=False)
    consumer.close()
    fresh_broker.kill()
    claims = fresh_broker.data_dir / "log-end-claims"
    header, _, *entries = claims.read_text().splitlines()
    claimed = int(next(e for e in entries[1:] if e.startswith("crash 0 ")).split()[2])
    assert claimed >= end
    claims.write_text("\n".join([header, "another-boot", *entries]) + "\n")
    active = sorted((fresh_broker.data_dir / "crash-0").glob("*.log"))[-1]
    os.truncate(active, active.stat().st_size // 2 // 4096 * 4096)  # what a lost page cache leaves
    fresh_broker.start()
    assert any("page cache may have lost its tail" in line for line in fresh_broker.output)
    more = ck_produce(fresh_broker.bootstrap, "crash", batch("b", 40), "none", acks="all")
    assert min(o for _, o in more) == claimed  # past every offset handed out before the crash
    assert sorted(keys_read(group, "crash", len(more))) == sorted(m.key for m in batch("b", 40))


def test_after_a_process_crash_the_log_continues_where_it_ended(fresh_broker: BrokerProcess) -> None:
    """kill -9 in the same boot loses nothing the process wrote (the page cache keeps it): the claims are not
    used, and offsets go on without a gap."""
    fresh_broker.start()
    acked = ck_produce(fresh_broker.bootstrap, "killed", batch("a", 50), "none")
    fresh_broker.kill()
    assert (fresh_broker.data_dir / "log-end-claims").exists()
    fresh_broker.start()
    more = ck_produce(fresh_broker.bootstrap, "killed", batch("b", 5), "none")
    assert min(o for _, o in more) == max(o for _, o in acked) + 1
