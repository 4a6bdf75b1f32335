"""``samsa demo --connector kafka``: the flagship pipeline on Spark's own Kafka connector (``format("kafka")``), run
as a user runs it, the cheap way tests/spark/test_demo_run.py runs the default (8 s of traffic); and how the demo
finds the connector's jars.

The run takes about 30 s here (Spark's start, 8 s of traffic, catching up). Its jars come from the checkout's
``.cache/spark-kafka/`` (``make kafka-jars``); the demo fetches them itself when they are missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from samsa.records import iter_batches
from samsa.spark.pipeline import connector
from samsa.spark.pipeline.job import STATS_TOPIC

from .jars import ROOT

CACHED_JARS = ROOT / ".cache" / "spark-kafka" / connector.SPARK_KAFKA_VERSION


def _producer_ids(partition_dir: Path) -> set[int]:
    return {
        batch.producer_id
        for segment in sorted(partition_dir.glob("*.log"))
        for batch in iter_batches(segment.read_bytes())
    }


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_demo_runs_on_sparks_own_kafka_connector(tmp_path: Path) -> None:
    if not (CACHED_JARS / ".complete").exists() and shutil.which("mvn") is None:
        pytest.skip(f"Spark's Kafka connector jars not in {CACHED_JARS} and no Maven to fetch them")
    data = tmp_path / "demo"
    command = ["demo", "--connector", "kafka", "--data-dir", str(data), "--duration", "8"]
    result = subprocess.run(
        [sys.executable, "-m", "samsa.cli", *command], capture_output=True, text=True, timeout=540
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    # Spark's connector read the topic (the samsa source describes itself otherwise) ...
    assert "stats query source: KafkaV2[Subscribe[access-log]]" in out, out
    final = next(line for line in out.splitlines() if line.startswith("done after "))
    produced = re.search(r"produced ([\d,]+) lines", final)
    read = re.search(r"Spark read ([\d,]+) lines", final)
    assert produced and read and produced[1] == read[1] != "0", final
    written = re.search(r"parquet: .*?\((\d+)\s+windows\)", out, re.S)
    assert written and int(written[1]) >= 1, out
    # ... and wrote the windows: the Java producer is idempotent (a producer id), the samsa sink is not
    assert min(_producer_ids(data / "broker" / f"{STATS_TOPIC}-0")) >= 0
    assert (data / "windows.png").read_bytes().startswith(b"\x89PNG")


def test_the_samsa_connector_needs_no_jars() -> None:
    assert connector.spark_conf("samsa") == {}


def test_the_kafka_connector_takes_the_jars_named_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("b.jar", "a.jar", "notes.txt"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv(connector.JARS_ENV, str(tmp_path))
    conf = connector.spark_conf("kafka", say=lambda line: None)
    assert conf == {"spark.jars": f"{tmp_path / 'a.jar'},{tmp_path / 'b.jar'}"}
    monkeypatch.setenv(connector.JARS_ENV, str(tmp_path / "empty"))
    with pytest.raises(connector.ConnectorUnavailable, match="no Spark Kafka connector jars"):
        connector.spark_conf("kafka")


def test_outside_a_checkout_spark_resolves_the_connector_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(connector.JARS_ENV, raising=False)
    monkeypatch.setattr(connector, "checkout_root", lambda: tmp_path)  # an installed package: no fetch script
    said: list[str] = []
    assert connector.spark_conf("kafka", say=said.append) == {
        "spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:" + connector.SPARK_KAFKA_VERSION
    }
    assert said and "Maven Central" in said[0]


def test_in_a_checkout_the_cached_jars_are_used() -> None:
    if not (CACHED_JARS / ".complete").exists():
        pytest.skip("make kafka-jars first")
    env = os.environ.pop(connector.JARS_ENV, None)
    try:
        jars = connector.connector_jars(say=lambda line: None)
    finally:
        if env is not None:
            os.environ[connector.JARS_ENV] = env
    assert jars is not None
    assert any(jar.name.startswith("spark-sql-kafka-0-10_2.13-") for jar in jars)


def test_an_unknown_connector_is_refused() -> None:
    from samsa.cli.pipeline import demo

    result = CliRunner().invoke(demo, ["--connector", "flink"])
    assert result.exit_code == 2
    assert "'flink' is not one of 'samsa', 'kafka'" in result.output
