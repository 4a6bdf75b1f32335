"""Running the access-log job: the demo (embedded broker, generated traffic, live table, chart) and ``samsa
pipeline`` (an external broker and any Spark master).

The demo keeps everything under one data directory so that running it again resumes:

    <data-dir>/broker/        the embedded broker's log dir (topics access-log x6, access-stats, access-log-dlq)
    <data-dir>/checkpoint/    Spark's checkpoints (stats and dead-letter queries)
    <data-dir>/stats/         Parquet, one batch_id=<n> directory per micro-batch
    <data-dir>/generator.json where the generated traffic's event time has got to
    <data-dir>/windows.png    the chart written at the end

Generated traffic runs on simulated time: ``rate`` lines per real second, each real second covering ``speedup``
seconds of event time, so one-minute windows close every ``60 / speedup`` s. Record timestamps are real produce
times, which is what the end-to-end latency (produce to the window's record in ``access-stats``) is measured from.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samsa.records import Record, build_batch

from .accesslog import START_MS, AccessLogGenerator

SOURCE_PARTITIONS = 6


def spark_session(
    master: str = "local[2]",
    app_name: str = "samsa-access-log",
    log_file: Path | None = None,
    conf: dict[str, str] | None = None,
) -> Any:
    """A SparkSession for the job, with samsa registered and Python workers on this interpreter; ``conf`` is set
    on the builder (Spark's Kafka connector's jars: ``connector.spark_conf``).

    With ``log_file``, a JVM this call starts writes its stderr there, so Spark's start-up warnings and logs (and
    its Python workers' stderr) stay out of the terminal; errors still reach the caller as exceptions.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from samsa.spark import register

    builder = SparkSession.builder.master(master).appName(app_name)
    builder = builder.config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    if master.startswith("local"):
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    with stderr_to(log_file):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


@contextmanager
def stderr_to(path: Path | None) -> Iterator[None]:
    """File descriptor 2 goes to ``path`` (appended) meanwhile: the processes started meanwhile inherit it."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with path.open("ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def ensure_topics(bootstrap_servers: str, topics: dict[str, int]) -> None:
    """Create the topics that do not exist yet (``{name: partitions}``)."""
    from samsa.client import NewTopic, SyncClient

    with SyncClient(bootstrap_servers) as client:
        meta = client.metadata(list(topics))
        missing = [
            name
            for name in topics
            if name not in meta.topics or meta.topics[name].error_code or not meta.topics[name].partitions
        ]
        if missing:
            client.create_topics([NewTopic(name, topics[name], 1) for name in missing])


@dataclass
class TrafficProducer:
    """A thread producing generated lines to ``topic`` (round robin over its partitions) until ``stop``."""

    bootstrap_servers: str
    topic: str
    state_file: Path | None
    rate: float = 400.0
    speedup: float = 20.0
    seed: int = 7
    produced: int = 0
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="traffic", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _load(self) -> tuple[int, int]:
        if self.state_file is not None and self.state_file.exists():
            state = json.loads(self.state_file.read_text())
            return int(state["event_ms"]), int(state["seed"]) + 1
        return START_MS, self.seed

    def _run(self) -> None:
        from samsa.client import SyncClient, TopicPartition

        start_ms, seed = self._load()
        generator = AccessLogGenerator(seed, start_ms=start_ms, rate=self.rate / self.speedup)
        tick = 0.1
        per_tick = max(1, int(self.rate * tick))
        try:
            with SyncClient(self.bootstrap_servers) as client:
                meta = client.metadata([self.topic])
                partitions = sorted(meta.topics[self.topic].partitions)
                turn = 0
                next_at = time.monotonic()
                while not self._stop.is_set():
                    now = int(time.time() * 1000)
                    lines = generator.take(per_tick)
                    groups: dict[int, list[Record]] = {}
                    for line in lines:
                        p = partitions[turn % len(partitions)]
                        turn += 1
                        groups.setdefault(p, []).append(Record(0, now, None, line.line.encode()))
                    for p, records in groups.items():
                        batch = build_batch(
                            [Record(i, r.timestamp, r.key, r.value) for i, r in enumerate(records)]
                        )
                        client.produce(TopicPartition(self.topic, p), batch, acks=-1)
                    self.produced += len(lines)
                    if self.state_file is not None:
                        self.state_file.write_text(
                            json.dumps({"event_ms": int(generator.now_ms), "seed": seed})
                        )
                    next_at += tick
                    time.sleep(max(0.0, next_at - time.monotonic()))
        except Exception as exc:  # reported by the demo, which stops
            self.errors.append(f"{type(exc).__name__}: {exc}")


def caught_up(spark_query: Any, bootstrap_servers: str, topic: str) -> bool:
    """True when ``spark_query`` has processed every offset the topic has now."""
    from samsa.client import SyncClient, TopicPartition

    progress = spark_query.lastProgress
    if not progress or not progress.get("sources"):
        return False
    end = progress["sources"][0].get("endOffset")
    if isinstance(end, str):
        end = json.loads(end)
    if not end:
        return False
    with SyncClient(bootstrap_servers) as client:
        meta = client.metadata([topic])
        tps = [TopicPartition(topic, p) for p in meta.topics[topic].partitions]
        latest = client.list_offsets({tp: -1 for tp in tps})
    return all(int(end.get(topic, {}).get(str(tp.partition), -1)) >= latest[tp][0] for tp in tps)


def stats_latencies(
    spark: Any, bootstrap_servers: str, topic: str, since_ms: int = 0, connector: str = "samsa"
) -> list[float]:
    """Seconds from each window's last produced record to the window's record in ``topic``, for the window records
    written at or after ``since_ms`` (epoch milliseconds: a run's own, not an earlier run's on the same broker),
    read through ``connector``'s format."""
    from pyspark.sql import functions as F

    df = (
        spark.read.format(connector)
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .load()
        .where(F.col("timestamp") >= F.timestamp_millis(F.lit(since_ms)))
    )
    last = F.to_timestamp(F.get_json_object(F.col("value").cast("string"), "$.last_produced"))
    delay = (F.unix_micros(F.col("timestamp")) - F.unix_micros(last)) / 1e6
    return [float(r[0]) for r in df.select(delay).collect() if r[0] is not None]


def latency_summary(latencies: list[float]) -> str:
    if not latencies:
        return "no windows in access-stats yet"
    ordered = sorted(latencies)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return (
        f"produce -> access-stats latency over {len(ordered)} windows: median {statistics.median(ordered):.2f} s, "
        f"p95 {p95:.2f} s, max {ordered[-1]:.2f} s"
    )


def wait_until(predicate: Callable[[], bool], timeout: float, poll: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return predicate()
