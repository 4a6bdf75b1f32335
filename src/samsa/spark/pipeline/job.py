"""The access-log job in Spark Structured Streaming: parse, window, aggregate, write.

    access-log (samsa) ──parse──► good lines ──1-minute windows, watermark──► stats ──► Parquet (one dir per batch)
                          │                                                         └─► access-stats (samsa, JSON)
                          └─► unparsable lines ──► access-log-dlq (samsa, header "error")

Two streaming queries over the same topic, each with its own checkpoint under ``checkpoint_dir``. Parquet output
is written by ``foreachBatch`` into ``batch_id=<n>`` directories with overwrite, so a batch Spark replays after a
restart replaces its own earlier output: nothing is counted twice, and the checkpoint means nothing is lost.
The ``access-stats`` topic is at least once, like every Kafka sink.

``PipelineConfig.connector`` picks the data source for the topics: ``samsa`` (this package's) or ``kafka`` (Spark's
own connector, whose jars the session must have: ``connector.spark_conf``); the options and columns are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from .accesslog import LINE_PATTERN, SPARK_TIME_FORMAT, TOP_PATHS

SOURCE_TOPIC = "access-log"
STATS_TOPIC = "access-stats"
DEAD_LETTER_TOPIC = "access-log-dlq"
WATERMARK = "30 seconds"
WATERMARK_MS = 30_000
STATS_COLUMNS = [
    "window_start",
    "window_end",
    "requests",
    "status_2xx",
    "status_3xx",
    "status_4xx",
    "status_5xx",
    "error_rate",
    "bytes_p95",
    "top_paths",
    "distinct_clients",
    "last_produced",
]


def _group(n: int) -> Column:
    return F.regexp_extract(F.col("line"), LINE_PATTERN, n)


def parse(raw: DataFrame) -> DataFrame:
    """``value`` to typed columns plus ``ok``/``error``; all on the JVM (no Python UDF on the hot path)."""
    lines = raw.select(F.col("value").cast("string").alias("line"), F.col("timestamp").alias("produced"))
    matched = F.col("line").rlike(LINE_PATTERN)
    event_time = F.try_to_timestamp(_group(3), F.lit(SPARK_TIME_FORMAT))
    sent = _group(8)
    return lines.select(
        "line",
        "produced",
        _group(1).alias("client"),
        event_time.alias("event_time"),
        F.split(_group(5), r"\?").getItem(0).alias("path"),
        _group(7).try_cast("int").alias("status"),
        F.when(sent == "-", F.lit(0).cast("long")).otherwise(sent.try_cast("long")).alias("bytes_sent"),
        F.when(~matched, F.lit("line does not match the nginx combined format"))
        .when(event_time.isNull(), F.concat(F.lit("unparsable time: "), _group(3)))
        .alias("error"),
    )


def _top_paths(paths: str) -> Column:
    ranked = (
        f"array_sort(transform(array_distinct({paths}), p -> named_struct('n', size(filter({paths}, x -> x = p)), "
        "'p', p)), (a, b) -> CASE WHEN a.n > b.n THEN -1 WHEN a.n < b.n THEN 1 WHEN a.p < b.p THEN -1 "
        "WHEN a.p > b.p THEN 1 ELSE 0 END)"
    )
    return F.expr(f"slice(transform({ranked}, s -> s.p), 1, {TOP_PATHS})")


def window_stats(parsed: DataFrame, watermark: str = WATERMARK) -> DataFrame:
    """Per-minute stats of the good lines: requests, status classes, error rate, p95 bytes, top paths, clients."""
    good = parsed.where(F.col("error").isNull()).withWatermark("event_time", watermark)
    klass = (F.col("status") / 100).cast("int")
    agg = good.groupBy(F.window("event_time", "1 minute").alias("w")).agg(
        F.count(F.lit(1)).alias("requests"),
        *[F.sum(F.when(klass == k, 1).otherwise(0)).alias(f"status_{k}xx") for k in (2, 3, 4, 5)],
        F.percentile_approx("bytes_sent", 0.95).alias("bytes_p95"),
        F.collect_list("path").alias("paths"),
        F.approx_count_distinct("client").alias("distinct_clients"),
        F.max("produced").alias("last_produced"),
    )
    return agg.select(
        F.col("w.start").alias("window_start"),
        F.col("w.end").alias("window_end"),
        "requests",
        "status_2xx",
        "status_3xx",
        "status_4xx",
        "status_5xx",
        ((F.col("status_4xx") + F.col("status_5xx")) / F.col("requests")).alias("error_rate"),
        "bytes_p95",
        _top_paths("paths").alias("top_paths"),
        "distinct_clients",
        "last_produced",
    )


@dataclass
class PipelineConfig:
    bootstrap_servers: str
    output_dir: Path
    checkpoint_dir: Path
    source_topic: str = SOURCE_TOPIC
    stats_topic: str = STATS_TOPIC
    dead_letter_topic: str = DEAD_LETTER_TOPIC
    watermark: str = WATERMARK
    trigger_seconds: float = 2.0
    available_now: bool = False
    max_offsets_per_trigger: int | None = None
    starting_offsets: str = "earliest"
    connector: str = "samsa"  # the Spark format of the topics: samsa, or Spark's own kafka
    exactly_once: bool = False  # the dead-letter stream through the samsa sink's exactly-once mode
    on_batch: Callable[[int, list[dict[str, Any]]], None] | None = None
    extra: dict[str, str] = field(default_factory=dict)


def _source(spark: SparkSession, cfg: PipelineConfig) -> DataFrame:
    reader = (
        spark.readStream.format(cfg.connector)
        .option("kafka.bootstrap.servers", cfg.bootstrap_servers)
        .option("subscribe", cfg.source_topic)
        .option("startingOffsets", cfg.starting_offsets)
    )
    if cfg.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(cfg.max_offsets_per_trigger))
    return reader.load()


def _trigger(writer: Any, cfg: PipelineConfig) -> Any:
    if cfg.available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=f"{cfg.trigger_seconds} seconds")


def start(spark: SparkSession, cfg: PipelineConfig) -> list[Any]:
    """Start the stats query and the dead-letter query; returns both StreamingQuery objects."""
    parsed = parse(_source(spark, cfg))
    stats = window_stats(parsed, cfg.watermark)
    parquet_dir = str(cfg.output_dir)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        batch = batch.persist()
        try:
            batch.write.mode("overwrite").parquet(f"{parquet_dir}/batch_id={batch_id}")
            (
                batch.select(
                    F.date_format("window_start", "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("key"),
                    F.to_json(F.struct(*[F.col(c) for c in STATS_COLUMNS])).alias("value"),
                )
                .write.format(cfg.connector)
                .mode("append")
                .option("kafka.bootstrap.servers", cfg.bootstrap_servers)
                .option("topic", cfg.stats_topic)
                .save()
            )
            if cfg.on_batch is not None:
                cfg.on_batch(batch_id, [row.asDict() for row in batch.collect()])
        finally:
            batch.unpersist()

    stats_query = _trigger(
        stats.writeStream.outputMode("append")
        .foreachBatch(write_batch)
        .option("checkpointLocation", str(cfg.checkpoint_dir / "stats"))
        .queryName("access-stats"),
        cfg,
    ).start()
    dead = parsed.where(F.col("error").isNotNull()).select(
        F.col("line").alias("value"),
        F.array(F.struct(F.lit("error").alias("key"), F.col("error").cast("binary").alias("value"))).alias(
            "headers"
        ),
    )
    dead_writer = (
        dead.writeStream.format(cfg.connector)
        .option("kafka.bootstrap.servers", cfg.bootstrap_servers)
        .option("topic", cfg.dead_letter_topic)
        .option("checkpointLocation", str(cfg.checkpoint_dir / "dead-letter"))
        .queryName("access-log-dlq")
    )
    if cfg.exactly_once:
        dead_writer = dead_writer.option("deliveryGuarantee", "exactly-once").option(
            "transactionalIdPrefix", f"access-log-dlq-{cfg.dead_letter_topic}"
        )
    dead_query = _trigger(dead_writer, cfg).start()
    return [stats_query, dead_query]


def read_output(spark: SparkSession, output_dir: Path) -> DataFrame:
    """Every window written so far (the ``batch_id`` partition column dropped)."""
    return spark.read.parquet(str(output_dir)).drop("batch_id")
