"""Spark's own Kafka connector (spark-sql-kafka-0-10) against a Samsa broker and a 3-broker Samsa cluster on
ZooKeeper: the batch writer with headers, the batch reader with startingOffsets/endingOffsets JSON, includeHeaders and
minPartitions, and the streaming reader with maxOffsetsPerTrigger restarted from its checkpoint.

The connector's jars are fetched by ``tools/kafka/fetch.sh`` into ``.cache/spark-kafka/<version>/``. Maven Central
serves no 4.3 connector for the installed PySpark 4.3.0: the newest served, 4.2.0 (Scala 2.13), is used and works.
The job runs in its own Python process (spark_connector_job.py): one JVM start, about 35 s here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from samsa.cluster.launcher import LocalCluster

from .jars import ROOT, TOPICS, KafkaJars

SPARK_KAFKA_VERSION = "4.2.0"  # fetch.sh has the same
SPARK_KAFKA_JARS = ROOT / ".cache" / "spark-kafka" / SPARK_KAFKA_VERSION
JOB = Path(__file__).with_name("spark_connector_job.py")
TOPIC = "spark-connector"


@pytest.fixture(params=["broker", "cluster"])
def bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The module's Samsa broker, or a 3-broker Samsa cluster on ZooKeeper started for the test (topic rf 3)."""
    if request.param == "broker":
        yield request.getfixturevalue("samsa").bootstrap
        return
    cluster = LocalCluster(tmp_path_factory.mktemp("samsa-cluster"))
    cluster.up(3)
    try:
        yield cluster.bootstrap_servers
    finally:
        cluster.down()


def test_spark_kafka_connector_batch_and_stream(kafka4: KafkaJars, bootstrap: str, tmp_path: Path) -> None:
    if not (SPARK_KAFKA_JARS / ".complete").exists():
        pytest.skip(f"Spark's Kafka connector jars not in {SPARK_KAFKA_JARS} (make kafka-jars)")
    replicas = "3" if "," in bootstrap else "1"
    create = ["--bootstrap-server", bootstrap, "--create", "--topic", TOPIC, "--partitions", "3",
              "--replication-factor", replicas]  # fmt: skip
    subprocess.run(kafka4.command(TOPICS, *create), check=True, capture_output=True, timeout=60)
    done = subprocess.run(
        [
            sys.executable,
            str(JOB),
            bootstrap,
            TOPIC,
            str(SPARK_KAFKA_JARS),
            str(tmp_path / "checkpoint"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])

    read = result["read"]
    # partition 0 from offset 2 to 5 (exclusive), partitions 1 and 2 from earliest (-2) to latest (-1): 3 + 10 + 10
    assert sorted((r["partition"], r["offset"]) for r in read) == [(0, o) for o in range(2, 5)] + [
        (p, o) for p in (1, 2) for o in range(10)
    ]
    for record in read:
        number = int(record["key"][1:])
        assert record["value"] == f"v{number}"
        assert record["partition"] == number % 3
        assert record["headers"] == [["h", record["key"]]]
    assert result["spark_partitions"] >= 6  # minPartitions splits the 3 Kafka partitions' ranges

    first_run, restart = result["stream_batches"]
    assert sum(first_run) == 30 and all(rows <= 10 for rows in first_run) and len(first_run) >= 3
    assert restart == []  # restarted from the checkpoint: nothing read again
    assert result["streamed"] == [[p, o] for p in range(3) for o in range(10)]
