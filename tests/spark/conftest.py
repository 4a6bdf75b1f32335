"""One local SparkSession for the whole suite (local[2], UI off, bound to 127.0.0.1), with samsa registered."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from samsa.spark import register

SPARK_TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group every Spark test for one xdist worker (`--dist loadgroup`: one JVM for the suite, not one per worker).
    Under pytest 9 and xdist 3.8 the group takes no effect and `make test` distributes by module (see Makefile)."""
    for item in items:
        if SPARK_TESTS in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise RuntimeError(
            "Spark needs a JDK: `make test` installs openjdk-17-jre-headless when java is missing"
        )
    probe = os.dup(0)  # the lowest free descriptor: what py4j's next socket gets
    os.close(probe)
    if probe >= 1000:  # py4j's callback server select()s its sockets: past 1023 the streaming queries hang
        raise RuntimeError(
            f"this process already holds descriptors up to {probe}: run tests/spark in a pytest run of its own "
            "(as `make test` does)"
        )
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("samsa-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    return tmp_path / "checkpoint"
