"""format("samsa-segments"): a log directory read with no broker, filters answered from the indexes."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from samsa.spark.segments import Bounds, plan_segment, scan_log_dir

from .logdata import START_MS, Row, write_log_dir

TOPIC = "clicks"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Row]]:
    root = tmp_path_factory.mktemp("logs")
    rows = write_log_dir(root, TOPIC, 3, 80)
    return root, rows


def collect(df) -> list[tuple]:  # type: ignore[no-untyped-def]
    out = []
    for r in df.collect():
        headers = tuple((h["key"], h["value"]) for h in r["headers"]) if r["headers"] else ()
        ts_ms = int(r["timestamp"].timestamp() * 1000)
        out.append((r["key"], r["value"], r["topic"], r["partition"], r["offset"], ts_ms, headers))
    return sorted(out, key=lambda t: (t[3], t[4]))


def expected(rows: list[Row]) -> list[tuple]:
    return sorted(
        ((r.key, r.value, r.topic, r.partition, r.offset, r.timestamp_ms, r.headers) for r in rows),
        key=lambda t: (t[3], t[4]),
    )


def test_reads_every_record_with_headers(spark: SparkSession, log_dir: tuple[Path, list[Row]]) -> None:
    root, rows = log_dir
    df = spark.read.format("samsa-segments").option("includeHeaders", "true").load(str(root))
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert collect(df) == expected(rows)
    assert {r.timestampType for r in df.select("timestampType").distinct().collect()} == {0}


def test_one_task_per_segment_and_large_segments_split(
    spark: SparkSession, log_dir: tuple[Path, list[Row]]
) -> None:
    root, rows = log_dir
    segments = scan_log_dir(root, None)
    assert len(segments) > 6
    df = spark.read.format("samsa-segments").load(str(root))
    assert df.rdd.getNumPartitions() == len(segments)
    split = spark.read.format("samsa-segments").option("maxSplitBytes", "2048").load(str(root))
    assert split.rdd.getNumPartitions() > 2 * len(segments)
    assert split.count() == len(rows)
    assert sorted(r.offset for r in split.where("partition = 2").select("offset").collect()) == sorted(
        r.offset for r in rows if r.partition == 2
    )


def test_partition_and_offset_filters(
    spark: SparkSession, log_dir: tuple[Path, list[Row]], tmp_path: Path
) -> None:
    root, rows = log_dir
    trace = tmp_path / "trace.txt"
    df = (
        spark.read.format("samsa-segments")
        .option("includeHeaders", "true")
        .option("traceFile", str(trace))
        .load(str(root))
        .where("partition = 1 AND offset >= 200 AND offset < 217")
    )
    assert collect(df) == expected([r for r in rows if r.partition == 1 and 200 <= r.offset < 217])
    opened = trace.read_text().splitlines()
    assert len(opened) == 1 and f"{TOPIC}-1" in opened[0]
    assert int(opened[0].split("\t")[1]) > 0  # started inside the segment, from the .index


def test_timestamp_filter_opens_fewer_segments(
    spark: SparkSession, log_dir: tuple[Path, list[Row]], tmp_path: Path
) -> None:
    root, rows = log_dir
    full_trace, ts_trace = tmp_path / "full.txt", tmp_path / "ts.txt"
    everything = spark.read.format("samsa-segments").option("traceFile", str(full_trace)).load(str(root))
    assert everything.count() == len(rows)
    cutoff_ms = START_MS + 70 * 1000
    cutoff = datetime.fromtimestamp(cutoff_ms / 1000, timezone.utc)
    late = (
        spark.read.format("samsa-segments")
        .option("traceFile", str(ts_trace))
        .load(str(root))
        .where(f"timestamp >= '{cutoff.strftime('%Y-%m-%d %H:%M:%S')}'")
    )
    got = sorted((r.partition, r.offset) for r in late.select("partition", "offset").collect())
    assert got == sorted((r.partition, r.offset) for r in rows if r.timestamp_ms >= cutoff_ms)
    opened_full = {line.split("\t")[0] for line in full_trace.read_text().splitlines()}
    opened_ts = {line.split("\t")[0] for line in ts_trace.read_text().splitlines()}
    assert opened_ts < opened_full
    assert len(opened_ts) <= len(opened_full) // 2


def test_planning_prunes_with_the_indexes(log_dir: tuple[Path, list[Row]]) -> None:
    root, rows = log_dir
    segments = scan_log_dir(root, None)
    last_offset = max(r.offset for r in rows if r.partition == 0)
    bounds = Bounds(partitions={0}, min_offset=last_offset)
    slices = [s for seg in segments for s in plan_segment(seg, bounds, 1 << 30)]
    assert len(slices) == 1 and slices[0].partition == 0 and slices[0].start_position > 0


def test_not_a_directory_names_the_option(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="option 'path'"):
        spark.read.format("samsa-segments").load(str(tmp_path / "missing")).count()
