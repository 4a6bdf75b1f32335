"""A decompression bomb produced to a compacted topic of a real ``samsa serve``: the producer gets
MESSAGE_TOO_LARGE, the broker's peak memory (VmHWM) grows by a fraction of what the batch inflates to, and the
partition takes the next batch. Bounded in time; loopback only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from samsa.client import NewTopic, SyncClient, TopicPartition
from samsa.client.errors import BrokerError
from samsa.protocol import ErrorCode
from samsa.records import CompressionType, Record, build_batch
from tests.clients.harness import BrokerProcess

pytestmark = pytest.mark.clients

INFLATED = 256 << 20  # the bomb inflates to 256 MiB; the bound is 16 x max.message.bytes = 16 MiB


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(data_dir=tmp_path / "data")
    process.start()
    try:
        yield process
    finally:
        process.stop()


def peak_rss(pid: int) -> int:
    """The process's peak resident set (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_a_decompression_bomb_on_a_compacted_topic_is_refused_with_bounded_memory(
    broker: BrokerProcess,
) -> None:
    value = bytes(1 << 20)
    bomb = build_batch(
        [Record(i, 1_700_000_000_000, b"k%d" % i, value) for i in range(INFLATED >> 20)],
        compression=CompressionType.GZIP,
    )
    assert len(bomb) < 1 << 20  # under max.message.bytes on the wire
    tp = TopicPartition("compacted", 0)
    assert broker.process is not None
    with SyncClient(broker.bootstrap) as client:
        created = client.create_topics([NewTopic("compacted", 1, 1, configs={"cleanup.policy": "compact"})])
        assert created == {"compacted": None}
        client.produce(tp, build_batch([Record(0, 1_700_000_000_000, b"warm", b"up")]))
        before = peak_rss(broker.process.pid)
        with pytest.raises(BrokerError) as refused:
            client.produce(tp, bomb)
        grown = peak_rss(broker.process.pid) - before
        assert refused.value.error_code == ErrorCode.MESSAGE_TOO_LARGE, refused.value
        assert grown < 64 << 20, f"the broker's peak memory grew by {grown >> 20} MiB"
        base, _ = client.produce(tp, build_batch([Record(0, 1_700_000_000_000, b"after", b"bomb")]))
        assert base == 1
    assert broker.stop() == 0
