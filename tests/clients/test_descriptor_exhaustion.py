"""Running out of file descriptors: a real ``samsa serve`` under a low RLIMIT_NOFILE, flooded with raw connections
while a client produces and fetches. The client is served throughout, a topic created mid-flood gets its files and
rolls segments, the high-watermark checkpoint keeps being written, the connections beyond the descriptor budget
are closed at once, the broker says so in one line (not one per refused attempt) and never meets EMFILE itself,
new clients are admitted once the flood ends, and the broker stops cleanly. Bounded in time; loopback only."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from samsa.client import NewTopic, SyncClient, TopicPartition
from samsa.client.records import ProducerRecord, build_batch, iter_consumer_records
from tests.clients.harness import BrokerProcess

pytestmark = pytest.mark.clients

OPEN_FILES = 256
FLOOD = 700  # raw connections opened (and kept) by the flood: far more than the broker has descriptors for


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(
        data_dir=tmp_path / "data",
        open_files_limit=OPEN_FILES,
        overrides={
            "replica.high.watermark.checkpoint.interval.ms": "100",
            "log.flush.offset.checkpoint.interval.ms": "100",
            "log.segment.bytes": str(1024 * 1024),
            # a listen queue that holds the whole flood: one wake-up of the broker meets hundreds of waiting
            # connections (the burst asyncio's own accept took whole), and no SYN is dropped and retried
            "socket.listen.backlog.size": "1024",
        },
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


class Flood:
    """Opens raw connections to the broker as fast as it can and keeps them; never sends a byte."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sockets: list[socket.socket] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for _ in range(FLOOD):
            try:
                self.sockets.append(socket.create_connection(("127.0.0.1", self.port), timeout=2.0))
            except OSError:
                pass  # the listen queue was full for two seconds: also a refusal
        self.done.set()

    def closed_by_broker(self) -> int:
        closed = 0
        for sock in self.sockets:
            sock.setblocking(False)
            try:
                closed += sock.recv(1) == b""
            except BlockingIOError:
                pass  # open, nothing to read
            except OSError:
                closed += 1
        return closed

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


def checkpointed(data_dir: Path, topic: str, partition: int) -> int | None:
    """The offset ``replication-offset-checkpoint`` holds for a partition (Kafka's format: version, count, then
    ``topic partition offset`` lines)."""
    for line in (data_dir / "replication-offset-checkpoint").read_text().splitlines()[2:]:
        name, number, offset = line.split()
        if (name, int(number)) == (topic, partition):
            return int(offset)
    return None


def produce_and_fetch(client: SyncClient, tp: TopicPartition, value: bytes) -> None:
    base, _ = client.produce(tp, build_batch([ProducerRecord(None, value)] * 4))
    fetched = client.fetch({tp: base}, max_wait_ms=0)[tp]
    assert fetched.error_code == 0
    values = [record.value for record in iter_consumer_records(fetched.records, tp.topic, tp.partition)]
    assert values[:4] == [value] * 4, f"offset {base}"


def test_descriptor_exhaustion_refuses_new_connections_and_serves_existing_clients(
    broker: BrokerProcess,
) -> None:
    port = broker.port
    client = SyncClient(broker.bootstrap, request_timeout_ms=10_000)
    flood = Flood(port)
    try:
        client.create_topics([NewTopic("steady", 1, 1)])
        steady = TopicPartition("steady", 0)
        produce_and_fetch(client, steady, b"before")

        flood.thread.start()
        served = 0
        started = time.monotonic()
        while not flood.done.is_set() or served < 20:
            produce_and_fetch(client, steady, b"%100d" % served)
            served += 1
            time.sleep(0.01)
            assert time.monotonic() - started < 60, "the flood took too long"
        # the budget is spent: a topic created now still gets its files, takes appends and rolls segments
        late = NewTopic("late", 2, 1, configs={"segment.bytes": str(64 * 1024)})
        assert client.create_topics([late]) == {"late": None}
        for partition in range(2):
            for i in range(3):  # 40 KiB batches: two rolls
                produce_and_fetch(client, TopicPartition("late", partition), b"%10000d" % i)
        assert len(list((broker.data_dir / "late-0").glob("*.log"))) == 3
        for i in range(20):
            produce_and_fetch(client, steady, b"after %d" % i)
            time.sleep(0.02)  # checkpoints run meanwhile (every 100 ms)
        end = client.list_offsets({steady: -1})[steady][0]
        deadline = time.monotonic() + 5
        while (
            checkpointed(broker.data_dir, "steady", 0) != end
        ):  # the high watermark reaches its checkpoint file
            assert time.monotonic() < deadline, (
                f"checkpoint {checkpointed(broker.data_dir, 'steady', 0)}, end {end}"
            )
            time.sleep(0.05)

        refused = flood.closed_by_broker() + (FLOOD - len(flood.sockets))
        assert refused >= FLOOD - OPEN_FILES, f"only {refused} of {FLOOD} connections were refused"
        held = len(flood.sockets) - flood.closed_by_broker()
        assert 0 < held < OPEN_FILES

        flood.close()
        time.sleep(0.5)  # the broker sees the flood's connections end and takes their descriptors back
        with SyncClient(broker.bootstrap, request_timeout_ms=10_000) as newcomer:
            produce_and_fetch(newcomer, steady, b"newcomer")
    finally:
        flood.close()
        client.close()

    assert broker.stop() == 0
    output = "".join(broker.output)
    refusals = [line for line in output.splitlines() if "refusing new connections" in line]
    assert len(refusals) == 1, refusals
    assert "file descriptors" in refusals[0]
    assert "Too many open files" not in output and "Errno 24" not in output
    assert "Traceback" not in output
    assert (broker.data_dir / ".kafka_cleanshutdown").exists()
