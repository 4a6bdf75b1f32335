"""format("samsa-segments"): a log directory read with no broker, filters answered from the indexes."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from samsa.spark.segments import Bounds, plan_segment, read_slice, scan_log_dir

from .logdata import START_MS, Row, write_log_dir

TOPIC = "clicks"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Row]]:
    root = tmp_path_factory.mktemp("logs")
    rows = write_log_dir(root, TOPIC, 3, 80)
    return root, rows


@pytest.fixture(scope="module")
def plain_log_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Row]]:
    """One record per batch, so no headers: every batch takes the column decoder."""
    root = tmp_path_factory.mktemp("plain")
    return root, write_log_dir(root, TOPIC, 2, 300, records_per_batch=1, step_ms=300)


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


def test_empty_log_dir_reads_no_rows(spark: SparkSession, tmp_path: Path) -> None:
    assert spark.read.format("samsa-segments").load(str(tmp_path)).count() == 0


def test_partition_dir_reads_that_partition(spark: SparkSession, log_dir: tuple[Path, list[Row]]) -> None:
    root, rows = log_dir
    df = spark.read.format("samsa-segments").option("includeHeaders", "true").load(str(root / f"{TOPIC}-1"))
    assert collect(df) == expected([r for r in rows if r.partition == 1])
    assert scan_log_dir(root / f"{TOPIC}-1", None) == [
        s for s in scan_log_dir(root, None) if s.partition == 1
    ]


def test_not_a_directory_names_the_option(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="option 'path'"):
        spark.read.format("samsa-segments").load(str(tmp_path / "missing")).count()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lo=st.integers(0, 450),
    span=st.one_of(st.none(), st.integers(0, 100)),
    min_ts=st.integers(0, 90),
    data=st.data(),
)
@pytest.mark.parametrize("logs", ["log_dir", "plain_log_dir"])
def test_read_slice_returns_the_rows_in_bounds(
    request: pytest.FixtureRequest, logs: str, lo: int, span: int | None, min_ts: int, data: st.DataObject
) -> None:
    root, rows = request.getfixturevalue(logs)
    hi = None if span is None else lo + span
    ts = data.draw(st.sampled_from([None, START_MS + min_ts * 1000]))
    include_headers = data.draw(st.booleans())
    got = []
    for segment in scan_log_dir(root, None):
        for part in plan_segment(segment, Bounds(min_offset=lo, max_offset=hi, min_timestamp=ts), 2048):
            for batch in read_slice(part, include_headers):
                d = batch.to_pydict()
                headers = d["headers"] if include_headers else [None] * batch.num_rows
                for k, v, p, o, h in zip(
                    d["key"], d["value"], d["partition"], d["offset"], headers, strict=True
                ):
                    got.append((p, o, k, v, tuple((x["key"], x["value"]) for x in h) if h else ()))
    wanted = {
        (r.partition, r.offset, r.key, r.value, r.headers if include_headers else ())
        for r in rows
        if lo <= r.offset and (hi is None or r.offset < hi)
    }
    assert len(got) == len(set(got))
    if ts is None:
        assert set(got) == wanted
    else:  # the time index prunes whole batches: every row at or after ts, and some before
        assert {g for g in got if g in wanted} == set(got)
        late = {(r.partition, r.offset) for r in rows if r.timestamp_ms >= ts}
        assert {w for w in wanted if (w[0], w[1]) in late} <= set(got)
