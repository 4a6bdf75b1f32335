"""``samsa demo`` (the flagship pipeline on an embedded broker) and ``samsa pipeline`` (the same job against an
external broker and any Spark master). The job itself is ``samsa.spark.pipeline``.

``samsa demo``: start an embedded broker, produce generated nginx access-log lines into ``access-log`` (6
partitions), run the Structured Streaming job (per-minute windows with a watermark: requests, error rate by status
class, p95 bytes, top paths, approximate distinct clients) into ``access-stats`` and Parquet, show a live table,
then stop after ``--duration`` seconds (``--continuous`` runs until Ctrl-C) and write ``windows.png``. Running it
again resumes from the checkpoint in ``--data-dir``. ``--storage`` runs the storage walk-through instead
(also ``samsa storage-demo``). ``--connector kafka`` runs the job on Spark's own Kafka connector
(``format("kafka")``, its jars fetched once: ``samsa.spark.pipeline.connector``) instead of the ``samsa`` source and
sink; a checkpoint is the connector's own, so switching connectors on one ``--data-dir`` needs ``--fresh``.
"""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

POSITIVE = click.FloatRange(min=0, min_open=True)  # a rate, a speed-up or a duration
CONNECTOR = click.option(
    "--connector",
    type=click.Choice(["samsa", "kafka"]),
    default="samsa",
    show_default=True,
    help="the Spark data source for the topics: samsa's own, or Spark's Kafka connector (format kafka)",
)
EXACTLY_ONCE = click.option(
    "--exactly-once",
    is_flag=True,
    help="write the dead-letter stream with the samsa sink's exactly-once mode (transactions committed with "
    "Spark's micro-batches; read it with isolation.level=read_committed)",
)

if TYPE_CHECKING:
    from rich.console import Console

    from samsa.cli.live_view import RunStatus
    from samsa.spark.pipeline.job import PipelineConfig
    from samsa.spark.pipeline.run import TrafficProducer


def run_pipeline(
    *,
    bootstrap_servers: str,
    master: str,
    data_dir: Path,
    duration: float | None,
    produce: bool,
    rate: float,
    speedup: float,
    available_now: bool = False,
    live: bool = True,
    connector: str = "samsa",
    exactly_once: bool = False,
) -> int:
    """Run the job under a live table until ``duration`` passes, the topic is read or Ctrl-C; the windows written."""
    from rich.console import Console

    from samsa.spark.pipeline import job
    from samsa.spark.pipeline.connector import ConnectorUnavailable, spark_conf
    from samsa.spark.pipeline.run import SOURCE_PARTITIONS, ensure_topics

    console = Console()
    if exactly_once and connector != "samsa":
        raise click.ClickException(
            "--exactly-once is the samsa sink's mode: Spark's Kafka sink is at least once"
        )
    topics = {job.SOURCE_TOPIC: SOURCE_PARTITIONS, job.STATS_TOPIC: 1, job.DEAD_LETTER_TOPIC: 1}
    ensure_topics(bootstrap_servers, topics)
    try:
        conf = spark_conf(connector, console.print)
    except ConnectorUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    with _Interrupts(console) as interrupts:
        spark = _start_spark(console, bootstrap_servers, master, data_dir, interrupts, conf, connector)
        return _run_job(
            console,
            spark,
            interrupts,
            bootstrap_servers=bootstrap_servers,
            data_dir=data_dir,
            duration=duration,
            produce=produce,
            rate=rate,
            speedup=speedup,
            available_now=available_now,
            live=live,
            connector=connector,
            exactly_once=exactly_once,
        )


def _run_job(
    console: Console,
    spark: Any,
    interrupts: _Interrupts,
    *,
    bootstrap_servers: str,
    data_dir: Path,
    duration: float | None,
    produce: bool,
    rate: float,
    speedup: float,
    available_now: bool,
    live: bool,
    connector: str,
    exactly_once: bool = False,
) -> int:
    """``run_pipeline`` once Spark runs: the queries, the traffic, the live table, the report."""
    from samsa.cli.live_view import RunStatus
    from samsa.spark.pipeline import job
    from samsa.spark.pipeline.accesslog import START_MS
    from samsa.spark.pipeline.run import TrafficProducer

    output_dir = data_dir / "stats"
    windows = _windows_written(spark, output_dir)
    cfg = job.PipelineConfig(
        bootstrap_servers=bootstrap_servers,
        output_dir=output_dir,
        checkpoint_dir=data_dir / "checkpoint",
        available_now=available_now,
        on_batch=lambda batch_id, rows: windows.extend(rows),
        connector=connector,
        exactly_once=exactly_once,
    )
    producer = None
    if produce:
        generator_state = data_dir / "generator.json"
        producer = TrafficProducer(
            bootstrap_servers, job.SOURCE_TOPIC, generator_state, rate=rate, speedup=speedup
        )
    traffic_start_ms = START_MS if produce else None  # the generated traffic starts there, in every run
    run_started_ms = int(time.time() * 1000)  # this run's window records are written after it (the summary's)
    queries = job.start(spark, cfg)
    if producer is not None:
        producer.start()
    status = RunStatus(duration=duration, producing=producer is not None)
    watch = _Watch(console, cfg, queries, producer, windows, status, traffic_start_ms, interrupts)
    durations = watch.run(live=live)
    console.print()
    if watch.source:
        console.print(f"stats query source: {watch.source}", markup=False)
    return _report(
        console,
        spark,
        cfg,
        durations,
        data_dir=data_dir,
        traffic_start_ms=traffic_start_ms,
        produced_since_ms=run_started_ms if produce else None,
    )


def _windows_written(spark: Any, output_dir: Path) -> list[dict[str, Any]]:
    """The windows an earlier run wrote to the Parquet output (none on a first run, nor before the first window
    of a run stopped early: the directory then holds no Parquet file yet)."""
    from samsa.spark.pipeline.job import read_output

    if not any(output_dir.glob("**/*.parquet")):
        return []
    return [r.asDict() for r in read_output(spark, output_dir).collect()]


def _start_spark(
    console: Console,
    bootstrap_servers: str,
    master: str,
    data_dir: Path,
    interrupts: _Interrupts,
    conf: dict[str, str],
    connector: str,
) -> Any:
    """The Spark session; a Ctrl-C while it starts is acted on once it has (it is stopped, the run aborted).
    It is started on a thread of its own, so that PySpark does not put its own Ctrl-C handler in place (it does on
    the main thread), which calls into Spark from the signal and raises inside whatever call was running."""
    import threading

    from samsa.spark.pipeline.run import spark_session

    spark_log = data_dir / "spark.log"
    console.print(
        f"[bold]broker[/] {bootstrap_servers}   [bold]spark[/] {master}   [bold]connector[/] {connector}   "
        f"[bold]data[/] {data_dir}"
    )
    console.print(f"starting Spark (its logs go to {spark_log})")
    started: list[Any] = []
    failed: list[Exception] = []

    def start() -> None:
        try:
            started.append(spark_session(master, log_file=spark_log, conf=conf))
        except Exception as exc:  # its reason is in the log: a missing JDK, a port, memory
            failed.append(exc)

    starter = threading.Thread(target=start, name="spark-start", daemon=True)
    starter.start()
    while starter.is_alive():
        starter.join(0.2)
    if failed:
        raise click.ClickException(
            f"Spark did not start: {failed[0]}\n(Spark's log: {spark_log})"
        ) from failed[0]
    spark = started[0]
    # Spark keeps the active session per thread: this one's too, or the registered data sources are not found
    spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)
    if interrupts.requested:
        spark.stop()
        raise click.Abort
    return spark


class _Interrupts:
    """Ctrl-C during a run: noted at once, acted on where the run can stop cleanly (between calls into Spark).
    Raised inside a py4j call, KeyboardInterrupt (or PySpark's own handler, which calls Spark from the signal)
    printed tracebacks, and while Spark started it left Spark's JVM and workers running with nothing to stop
    them. Main thread only (elsewhere nothing is installed and Ctrl-C is not seen here)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.requested = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> _Interrupts:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._note)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        if self._installed:
            signal.signal(signal.SIGINT, self._previous)

    def _note(self, signum: int, frame: object) -> None:
        if not self.requested:
            self.console.print("\nCtrl-C: stopping")
        self.requested = True

    def check(self) -> None:
        """Raise KeyboardInterrupt here if Ctrl-C was pressed."""
        if self.requested:
            raise KeyboardInterrupt


class _Watch:
    """The live table over the running queries, and when to stop them. Main thread only."""

    def __init__(
        self,
        console: Console,
        cfg: PipelineConfig,
        queries: list[Any],
        producer: TrafficProducer | None,
        windows: list[dict[str, Any]],
        status: RunStatus,
        traffic_start_ms: int | None,
        interrupts: _Interrupts,
    ) -> None:
        self.console = console
        self.cfg = cfg
        self.queries = queries
        self.producer = producer
        self.windows = windows
        self.status = status
        self.traffic_start_ms = traffic_start_ms
        self.interrupts = interrupts
        self.source = ""  # Spark's description of the stats query's source, once it has run a batch

    def view(self, done: bool = False) -> Any:
        from samsa.cli.live_view import live_view

        self.status.observe(self.queries[0].recentProgress)
        produced = self.producer.produced if self.producer is not None else None
        line = self.status.line(produced, len(self.windows), done=done)
        return live_view(self.console, self.windows, line, self.traffic_start_ms)

    def run(self, *, live: bool) -> list[float]:
        """Show the table until the run ends (or Ctrl-C), stop the queries; the recent micro-batch durations."""
        from rich.live import Live

        try:
            with Live(self.view(), console=self.console, refresh_per_second=2, transient=not live) as shown:
                self._until_done(shown)
                if self.producer is not None:
                    self.producer.stop()
                self.status.end_traffic()
                if not self.cfg.available_now:
                    self._until_caught_up(shown)
                shown.update(self.view(done=True))
        except KeyboardInterrupt:
            self.console.print("stopping")
        finally:
            if self.producer is not None:
                self.producer.stop()
            progress = self.queries[0].recentProgress
            durations = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress]
            sources = progress[-1].get("sources") if progress else None
            self.source = str(sources[0].get("description", "")) if sources else ""
            for q in self.queries:
                q.stop()
        return durations

    def _until_done(self, shown: Any) -> None:
        """Refresh every half second until the duration passes or an available-now run ends; raise on a failure."""
        queries, duration = self.queries, self.status.duration
        while True:
            time.sleep(0.5)
            self.interrupts.check()
            shown.update(self.view())
            if self.producer is not None and self.producer.errors:
                raise click.ClickException(f"traffic producer failed: {self.producer.errors[0]}")
            if any(q.exception() is not None for q in queries):
                raise click.ClickException(str(next(q.exception() for q in queries if q.exception())))
            if self.cfg.available_now and not any(q.isActive for q in queries):
                return
            if duration is not None and time.monotonic() - self.status.began >= duration:
                return

    def _until_caught_up(self, shown: Any) -> None:
        """Wait for the query to read the last lines, then for the batch after it (it emits the closed windows)."""
        from samsa.spark.pipeline.job import SOURCE_TOPIC
        from samsa.spark.pipeline.run import caught_up, wait_until

        query = self.queries[0]

        def caught_up_shown() -> bool:
            self.interrupts.check()
            shown.update(self.view())
            return caught_up(query, self.cfg.bootstrap_servers, SOURCE_TOPIC)

        if not wait_until(caught_up_shown, timeout=120, poll=0.5):
            return
        last = query.lastProgress
        wait_until(
            lambda: (query.lastProgress or {}).get("batchId", -1) > last["batchId"],
            timeout=3 * self.cfg.trigger_seconds + last["durationMs"].get("triggerExecution", 0) / 1000,
            poll=0.5,
        )


def _report(
    console: Console,
    spark: Any,
    cfg: PipelineConfig,
    durations: list[float],
    *,
    data_dir: Path,
    traffic_start_ms: int | None,
    produced_since_ms: int | None,
) -> int:
    """Print the batch times, write the chart, print the latency summary, stop Spark; the windows written."""
    from samsa.spark.pipeline.chart import write_chart
    from samsa.spark.pipeline.job import STATS_TOPIC, WATERMARK_MS
    from samsa.spark.pipeline.run import latency_summary, stats_latencies

    if durations:
        console.print(
            f"stats query: {len(durations)} recent micro-batches, median {statistics.median(durations):.2f} s, "
            f"max {max(durations):.2f} s (the first one includes Spark's warm-up)"
        )
    output_dir = cfg.output_dir
    rows = _windows_written(spark, output_dir)
    chart = data_dir / "windows.png"
    if rows:
        write_chart(rows, chart, traffic_start_ms=traffic_start_ms)
        console.print(f"chart: {chart}")
    console.print(f"parquet: {output_dir} ({len(rows)} windows); watermark {WATERMARK_MS // 1000} s")
    if produced_since_ms is not None:  # a replay of old records has no meaningful produce-to-window latency
        latencies = stats_latencies(
            spark, cfg.bootstrap_servers, STATS_TOPIC, since_ms=produced_since_ms, connector=cfg.connector
        )
        console.print(latency_summary(latencies))
    spark.stop()
    return len(rows)


@click.command()
@click.option("--data-dir", type=click.Path(path_type=Path), default=Path("data/demo"), show_default=True)
@click.option(
    "--duration", type=POSITIVE, default=60.0, show_default=True, help="seconds of traffic before stopping"
)
@click.option("--continuous", is_flag=True, help="run until Ctrl-C instead of --duration")
@click.option("--rate", type=POSITIVE, default=400.0, show_default=True, help="generated lines per second")
@click.option(
    "--speedup", type=POSITIVE, default=20.0, show_default=True, help="event seconds per real second"
)
@click.option("--fresh", is_flag=True, help="delete --data-dir first instead of resuming from it")
@click.option("--storage", is_flag=True, help="run the storage walk-through instead (samsa storage-demo)")
@CONNECTOR
@EXACTLY_ONCE
@click.pass_context
def demo(
    ctx: click.Context,
    data_dir: Path,
    duration: float,
    continuous: bool,
    rate: float,
    speedup: float,
    fresh: bool,
    storage: bool,
    connector: str,
    exactly_once: bool,
) -> None:
    """The access-log pipeline: an embedded broker, generated nginx traffic, a local Spark streaming job."""
    if storage:
        from samsa.cli.demo import demo as storage_demo

        ctx.invoke(storage_demo)
        return
    from samsa.embedded import Broker

    if fresh and data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    with Broker(data_dir / "broker") as broker:
        run_pipeline(
            bootstrap_servers=broker.bootstrap_servers,
            master="local[2]",
            data_dir=data_dir,
            duration=None if continuous else duration,
            produce=True,
            rate=rate,
            speedup=speedup,
            connector=connector,
            exactly_once=exactly_once,
        )


@click.command()
@click.option("--bootstrap-servers", "-b", required=True, help="host:port of the broker")
@click.option("--master", default="local[2]", show_default=True, help="Spark master, e.g. spark://host:7077")
@click.option("--data-dir", type=click.Path(path_type=Path), default=Path("data/pipeline"), show_default=True)
@click.option("--available-now", is_flag=True, help="process what is in the topic now, then stop")
@click.option("--duration", type=POSITIVE, default=None, help="stop after this many seconds")
@click.option("--generate", is_flag=True, help="also produce generated traffic into access-log")
@click.option("--rate", type=POSITIVE, default=400.0, show_default=True)
@click.option("--speedup", type=POSITIVE, default=20.0, show_default=True)
@CONNECTOR
@EXACTLY_ONCE
def pipeline(
    bootstrap_servers: str,
    master: str,
    data_dir: Path,
    available_now: bool,
    duration: float | None,
    generate: bool,
    rate: float,
    speedup: float,
    connector: str,
    exactly_once: bool,
) -> None:
    """Run the access-log job against an external broker and any Spark master."""
    from samsa.client import KafkaError

    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        run_pipeline(
            bootstrap_servers=bootstrap_servers,
            master=master,
            data_dir=data_dir,
            duration=duration,
            produce=generate,
            rate=rate,
            speedup=speedup,
            available_now=available_now,
            connector=connector,
            exactly_once=exactly_once,
        )
    except (
        KafkaError
    ) as exc:  # the broker is unreachable or refuses a call: one line, as the other tools say it
        raise click.ClickException(str(exc)) from None
