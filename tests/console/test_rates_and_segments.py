"""Messages in/out from polled offsets, and a partition's segments read from its files."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

import samsa
from samsa.console.cluster_state import ClusterState
from samsa.console.rates import Rates
from samsa.console.segments import partition_segments


def picture(time_ms: int, ends: dict[int, int | None], committed: dict[int, int]) -> ClusterState:
    partitions = [{"partition": p, "log_end_offset": e} for p, e in ends.items()]
    offsets = [{"topic": "t", "partition": p, "committed": c} for p, c in committed.items()]
    return ClusterState(
        time_ms=time_ms,
        topics={
            "t": {"internal": False, "partitions": partitions},
            "__consumer_offsets": {
                "internal": True,
                "partitions": [{"partition": 0, "log_end_offset": time_ms}],
            },
        },
        groups=[{"group_id": "g", "offsets": offsets}],
    )


def test_rates_from_offsets() -> None:
    rates = Rates()
    rates.observe(picture(1000, {0: 100, 1: 50}, {0: 10}))
    assert list(rates.points) == []  # one picture: no rate yet
    rates.observe(picture(3000, {0: 300, 1: 50}, {0: 70}))
    assert list(rates.points) == [{"time_ms": 3000, "in": 100.0, "out": 30.0}]  # internal topics left out
    assert rates.topic_in == {"t": 100.0}
    # partition 1's leader is away for a poll, then back: no dip, no spike; an offset going back counts 0
    rates.observe(picture(4000, {0: 400, 1: None}, {0: 5}))
    rates.observe(picture(5000, {0: 500, 1: 150}, {0: 15}))
    # out is taken over the last 5 s (from the picture at 1000 ms: 10 -> 15)
    assert [(p["in"], p["out"]) for p in rates.points] == [(100.0, 30.0), (100.0, 0.0), (100.0, 1.25)]


def test_out_rate_is_flat_when_a_consumer_commits_every_5_s() -> None:
    rates = Rates()
    for second in range(30):  # reads 100 records/s, commits every 5 s (auto.commit.interval.ms)
        committed = 100 * 5 * (second // 5)
        rates.observe(picture(1000 * second, {0: 100 * second}, {0: committed}))
    assert {p["out"] for p in list(rates.points)[5:]} == {100.0}


def test_rates_skip_a_picture_with_an_error() -> None:
    rates = Rates()
    rates.observe(picture(1000, {0: 0}, {}))
    rates.observe(ClusterState(time_ms=2000, error="down"))
    rates.observe(picture(3000, {0: 20}, {}))
    assert [p["in"] for p in rates.points] == [10.0]


def test_segments_of_a_partition(samsa_broker: samsa.Broker, tmp_path: Path) -> None:
    samsa_broker.create_topic("rolled", partitions=1, config={"segment.bytes": "2048"})
    producer = Producer({"bootstrap.servers": samsa_broker.bootstrap_servers, "linger.ms": 0})
    for i in range(60):
        producer.produce("rolled", value=b"x" * 100, partition=0, timestamp=1_700_000_000_000 + i)
        producer.flush(10)  # one batch per record
    [replica] = partition_segments([("broker 1", samsa_broker.log_dir)], "rolled", 0)
    segments: list[dict[str, Any]] = replica["segments"]
    files = sorted(p.name for p in (samsa_broker.log_dir / "rolled-0").glob("*.log"))
    assert [f"{s['base_offset']:020d}.log" for s in segments] == files
    assert len(segments) > 2
    assert sum(s["batches"] for s in segments) == 60
    assert segments[-1]["last_offset"] == 59
    assert segments[0]["first_timestamp"] == 1_700_000_000_000
    assert segments[-1]["max_timestamp"] == 1_700_000_000_059
    for before, after in pairwise(segments):
        assert before["next_base_offset"] == after["base_offset"] == before["last_offset"] + 1
    assert all(s["error"] is None and s["size"] > 0 for s in segments)
    assert partition_segments([("broker 1", samsa_broker.log_dir)], "rolled", 1) == []
