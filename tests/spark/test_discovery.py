"""format("samsa") and format("samsa-segments") are found with no register() call, in a fresh Spark (PySpark's
discovery of top-level ``pyspark_*`` packages exporting ``DefaultSource``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .logdata import write_log_dir

SCRIPT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    # pushdown is off in this session: the source found by name reads anyway, without pruning
    found = spark.read.format("SAMSA-segments").load(sys.argv[1])
    print("COUNT", found.where("offset >= 0").count())
    try:
        spark.read.format("samsa").load().count()
    except Exception as exc:
        print("SAMSA", "kafka.bootstrap.servers" in str(exc))
    spark.stop()
    """
)


@pytest.mark.slow
def test_found_by_name_without_register(tmp_path: Path) -> None:
    rows = write_log_dir(tmp_path / "logs", "found", 2, 10)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "logs")],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert f"COUNT {len(rows)}" in done.stdout, done.stderr[-3000:]
    assert "SAMSA True" in done.stdout  # the broker source was found too: it asked for its required option
