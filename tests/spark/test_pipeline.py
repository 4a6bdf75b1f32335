"""The demo's job on a fixed generated input equals the same aggregation computed in Python, across a restart;
unparsable lines go to the dead-letter topic."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from samsa.client import SyncClient, TopicPartition
from samsa.embedded import Broker
from samsa.records import Record, build_batch
from samsa.spark.pipeline.accesslog import (
    AccessLogGenerator,
    GeneratedLine,
    aggregate,
    closed_windows,
    parse_line,
)
from samsa.spark.pipeline.job import (
    DEAD_LETTER_TOPIC,
    SOURCE_TOPIC,
    STATS_TOPIC,
    WATERMARK_MS,
    PipelineConfig,
    read_output,
    start,
)
from samsa.spark.pipeline.run import SOURCE_PARTITIONS, ensure_topics


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        ensure_topics(
            b.bootstrap_servers, {SOURCE_TOPIC: SOURCE_PARTITIONS, STATS_TOPIC: 1, DEAD_LETTER_TOPIC: 1}
        )
        yield b


def produce_lines(bootstrap: str, lines: list[GeneratedLine]) -> None:
    with SyncClient(bootstrap) as client:
        for p in range(SOURCE_PARTITIONS):
            mine = [line for i, line in enumerate(lines) if i % SOURCE_PARTITIONS == p]
            for at in range(0, len(mine), 500):
                chunk = mine[at : at + 500]
                records = [Record(i, 1_000 + i, None, line.line.encode()) for i, line in enumerate(chunk)]
                client.produce(TopicPartition(SOURCE_TOPIC, p), build_batch(records))


def run_once(spark: SparkSession, cfg: PipelineConfig) -> None:
    """Run both queries to the end of what is available; a query still running after 240 s fails the test with
    its status, its last progress and every Python thread's stack (the broker runs in this process)."""
    for query in start(spark, cfg):
        if not query.awaitTermination(240):
            stacks = "\n".join(
                f"thread {ident}:\n{''.join(traceback.format_stack(frame))}"
                for ident, frame in sys._current_frames().items()
            )
            query.stop()
            pytest.fail(
                f"query {query.name} still running after 240 s: status {query.status}, "
                f"last progress {query.lastProgress}\n{stacks}"
            )
        assert query.exception() is None


@pytest.mark.slow
def test_job_equals_python_aggregation_across_restart(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    generator = AccessLogGenerator(seed=11, rate=10.0, clients=80, bad_fraction=0.01)
    lines = generator.take(3600)  # about six minutes of event time
    cfg = PipelineConfig(
        broker.bootstrap_servers, tmp_path / "stats", tmp_path / "checkpoint", available_now=True
    )
    produce_lines(broker.bootstrap_servers, lines[:1800])
    run_once(spark, cfg)
    first = read_output(spark, cfg.output_dir).count()
    produce_lines(broker.bootstrap_servers, lines[1800:])
    run_once(spark, cfg)  # resumes from the checkpoint

    parsed = [p for p in (parse_line(line.line) for line in lines) if p is not None]
    oracle = closed_windows(aggregate(parsed), max(p.event_ms for p in parsed), WATERMARK_MS)
    got = {int(r.window_start.timestamp() * 1000): r for r in read_output(spark, cfg.output_dir).collect()}
    assert 0 < first < len(got)
    assert sorted(got) == sorted(oracle)  # every closed window once: nothing lost, nothing twice
    for start_ms, want in oracle.items():
        row = got[start_ms]
        assert (row.requests, row.status_2xx, row.status_3xx, row.status_4xx, row.status_5xx) == (
            want.requests,
            want.status_2xx,
            want.status_3xx,
            want.status_4xx,
            want.status_5xx,
        )
        assert row.error_rate == pytest.approx(want.error_rate)
        assert row.bytes_p95 == want.bytes_p95
        assert tuple(row.top_paths) == want.top_paths
        assert abs(row.distinct_clients - want.distinct_clients) <= max(2, 0.05 * want.distinct_clients)

    stats = (
        spark.read.format("samsa")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", STATS_TOPIC)
        .load()
    )
    assert {r.key.decode() for r in stats.select("key").collect()} >= {
        r.window_start.strftime("%Y-%m-%dT%H:%M:%SZ") for r in got.values()
    }
    dead = (
        spark.read.format("samsa")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", DEAD_LETTER_TOPIC)
        .option("includeHeaders", "true")
        .load()
        .collect()
    )
    bad = sorted(line.line for line in lines if parse_line(line.line) is None)
    assert bad and sorted(r.value.decode() for r in dead) == bad
    assert all(r.headers[0]["key"] == "error" and r.headers[0]["value"] for r in dead)


def test_the_latency_summary_counts_only_the_windows_its_own_run_wrote(
    spark: SparkSession, broker: Broker
) -> None:
    """A second demo run on the same broker reports its own windows' latency, not every run's so far."""
    import datetime
    import json

    from samsa.spark.pipeline.run import stats_latencies

    def window(written_ms: int, latency_ms: int) -> bytes:
        produced = datetime.datetime.fromtimestamp((written_ms - latency_ms) / 1000, datetime.UTC)
        return json.dumps({"last_produced": produced.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"}).encode()

    since = 1_795_000_000_000
    earlier_run, this_run = since - 600_000, since + 5_000
    broker.create_topic("latency-stats", partitions=1)
    with SyncClient(broker.bootstrap_servers) as client:
        records = [
            Record(0, earlier_run, None, window(earlier_run, 42_000)),
            Record(1, this_run, None, window(this_run, 1_500)),
        ]
        client.produce(TopicPartition("latency-stats", 0), build_batch(records))
    assert sorted(stats_latencies(spark, broker.bootstrap_servers, "latency-stats")) == [1.5, 42.0]
    assert stats_latencies(spark, broker.bootstrap_servers, "latency-stats", since_ms=since) == [1.5]
