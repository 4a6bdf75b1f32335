"""``samsa demo`` (the flagship pipeline on an embedded broker) and ``samsa pipeline`` (the same job against an
external broker and any Spark master). The job itself is ``samsa.spark.pipeline``.

``samsa demo``: start an embedded broker, produce generated nginx access-log lines into ``access-log`` (6
partitions), run the Structured Streaming job (per-minute windows with a watermark: requests, error rate by status
class, p95 bytes, top paths, approximate distinct clients) into ``access-stats`` and Parquet, show a live table,
then stop after ``--duration`` seconds (``--continuous`` runs until Ctrl-C) and write ``windows.png``. Running it
again resumes from the checkpoint in ``--data-dir``. ``--storage`` runs the storage walk-through instead
(also ``samsa storage-demo``).
"""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import click


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
) -> int:
    from rich.console import Console
    from rich.live import Live

    from samsa.cli.live_view import RunStatus, live_view
    from samsa.spark.pipeline.accesslog import START_MS
    from samsa.spark.pipeline.chart import write_chart
    from samsa.spark.pipeline.job import (
        DEAD_LETTER_TOPIC,
        SOURCE_TOPIC,
        STATS_TOPIC,
        WATERMARK_MS,
        PipelineConfig,
        read_output,
        start,
    )
    from samsa.spark.pipeline.run import (
        SOURCE_PARTITIONS,
        TrafficProducer,
        caught_up,
        ensure_topics,
        latency_summary,
        spark_session,
        stats_latencies,
        wait_until,
    )

    console = Console()
    ensure_topics(bootstrap_servers, {SOURCE_TOPIC: SOURCE_PARTITIONS, STATS_TOPIC: 1, DEAD_LETTER_TOPIC: 1})
    spark_log = data_dir / "spark.log"
    console.print(f"[bold]broker[/] {bootstrap_servers}   [bold]spark[/] {master}   [bold]data[/] {data_dir}")
    console.print(f"starting Spark (its logs go to {spark_log})")
    try:
        spark = spark_session(master, log_file=spark_log)
    except Exception as exc:  # its reason is in the log: a missing JDK, a port, memory
        raise click.ClickException(f"Spark did not start: {exc}\n(Spark's log: {spark_log})") from exc
    windows: list[dict[str, Any]] = []
    output_dir = data_dir / "stats"
    if output_dir.exists():
        windows.extend(r.asDict() for r in read_output(spark, output_dir).collect())
    cfg = PipelineConfig(
        bootstrap_servers=bootstrap_servers,
        output_dir=output_dir,
        checkpoint_dir=data_dir / "checkpoint",
        available_now=available_now,
        on_batch=lambda batch_id, rows: windows.extend(rows),
    )
    producer = (
        TrafficProducer(
            bootstrap_servers, SOURCE_TOPIC, data_dir / "generator.json", rate=rate, speedup=speedup
        )
        if produce
        else None
    )
    traffic_start_ms = START_MS if produce else None  # the generated traffic starts there, in every run
    queries = start(spark, cfg)
    if producer is not None:
        producer.start()
    run = RunStatus(duration=duration, producing=producer is not None)

    def view(done: bool = False) -> Any:
        run.observe(queries[0].recentProgress)
        produced = producer.produced if producer is not None else None
        return live_view(console, windows, run.line(produced, len(windows), done=done), traffic_start_ms)

    try:
        with Live(view(), console=console, refresh_per_second=2, transient=not live) as shown:
            while True:
                time.sleep(0.5)
                shown.update(view())
                if producer is not None and producer.errors:
                    raise click.ClickException(f"traffic producer failed: {producer.errors[0]}")
                if any(q.exception() is not None for q in queries):
                    raise click.ClickException(str(next(q.exception() for q in queries if q.exception())))
                if available_now and not any(q.isActive for q in queries):
                    break
                if duration is not None and time.monotonic() - run.began >= duration:
                    break
            if producer is not None:
                producer.stop()
            run.end_traffic()
            if not available_now:

                def caught_up_shown() -> bool:
                    shown.update(view())
                    return caught_up(queries[0], bootstrap_servers, SOURCE_TOPIC)

                if wait_until(caught_up_shown, timeout=120, poll=0.5):
                    # the batch after the one that read the last lines emits the windows its watermark closed
                    last = queries[0].lastProgress
                    wait_until(
                        lambda: (queries[0].lastProgress or {}).get("batchId", -1) > last["batchId"],
                        timeout=3 * cfg.trigger_seconds
                        + last["durationMs"].get("triggerExecution", 0) / 1000,
                        poll=0.5,
                    )
            shown.update(view(done=True))
    except KeyboardInterrupt:
        console.print("stopping")
    finally:
        if producer is not None:
            producer.stop()
        durations = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in queries[0].recentProgress]
        for q in queries:
            q.stop()
    console.print()
    if durations:
        console.print(
            f"stats query: {len(durations)} recent micro-batches, median {statistics.median(durations):.2f} s, "
            f"max {max(durations):.2f} s (the first one includes Spark's warm-up)"
        )
    rows = [r.asDict() for r in read_output(spark, output_dir).collect()] if output_dir.exists() else []
    chart = data_dir / "windows.png"
    if rows:
        write_chart(rows, chart, traffic_start_ms=traffic_start_ms)
        console.print(f"chart: {chart}")
    console.print(f"parquet: {output_dir} ({len(rows)} windows); watermark {WATERMARK_MS // 1000} s")
    if produce:  # a replay of old records has no meaningful produce-to-window latency
        console.print(latency_summary(stats_latencies(spark, bootstrap_servers, STATS_TOPIC)))
    spark.stop()
    return len(rows)


@click.command()
@click.option("--data-dir", type=click.Path(path_type=Path), default=Path("data/demo"), show_default=True)
@click.option(
    "--duration", type=float, default=60.0, show_default=True, help="seconds of traffic before stopping"
)
@click.option("--continuous", is_flag=True, help="run until Ctrl-C instead of --duration")
@click.option("--rate", type=float, default=400.0, show_default=True, help="generated lines per second")
@click.option("--speedup", type=float, default=20.0, show_default=True, help="event seconds per real second")
@click.option("--fresh", is_flag=True, help="delete --data-dir first instead of resuming from it")
@click.option("--storage", is_flag=True, help="run the storage walk-through instead (samsa storage-demo)")
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
        )


@click.command()
@click.option("--bootstrap-servers", "-b", required=True, help="host:port of the broker")
@click.option("--master", default="local[2]", show_default=True, help="Spark master, e.g. spark://host:7077")
@click.option("--data-dir", type=click.Path(path_type=Path), default=Path("data/pipeline"), show_default=True)
@click.option("--available-now", is_flag=True, help="process what is in the topic now, then stop")
@click.option("--duration", type=float, default=None, help="stop after this many seconds")
@click.option("--generate", is_flag=True, help="also produce generated traffic into access-log")
@click.option("--rate", type=float, default=400.0, show_default=True)
@click.option("--speedup", type=float, default=20.0, show_default=True)
def pipeline(
    bootstrap_servers: str,
    master: str,
    data_dir: Path,
    available_now: bool,
    duration: float | None,
    generate: bool,
    rate: float,
    speedup: float,
) -> None:
    """Run the access-log job against an external broker and any Spark master."""
    data_dir.mkdir(parents=True, exist_ok=True)
    run_pipeline(
        bootstrap_servers=bootstrap_servers,
        master=master,
        data_dir=data_dir,
        duration=duration,
        produce=generate,
        rate=rate,
        speedup=speedup,
        available_now=available_now,
    )
