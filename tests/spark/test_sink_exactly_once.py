"""The exactly-once mode of the ``samsa`` streaming sink: a query whose driver process dies (kill -9) at random
times, and on purpose right before and right after a micro-batch's decision record, then restarts from its
checkpoint, leaves every input row in the output topic exactly once for read_committed readers."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from pyspark.sql import SparkSession

from samsa.embedded import Broker

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

JOB = Path(__file__).with_name("eos_job.py")
ROWS = 400
CRASH_HOOK = """
import os, signal
_where = os.environ.get("EOS_CRASH")
if _where:
    _when, _batch = _where.split(":")
    try:
        from samsa.spark import sink as _sink
    except Exception:
        _sink = None
    if _sink is not None:
        _record = _sink.SamsaExactlyOnceStreamWriter._record

        def _crashing(self, client, decision):
            if _when == "before" and decision["batch"] == int(_batch):
                os.killpg(int(os.environ["EOS_JOB_PGID"]), signal.SIGKILL)  # driver and JVM, as kill -9
            _record(self, client, decision)
            if _when == "after" and decision["batch"] == int(_batch):
                os.killpg(int(os.environ["EOS_JOB_PGID"]), signal.SIGKILL)

        _sink.SamsaExactlyOnceStreamWriter._record = _crashing
"""


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


def _read(bootstrap: str, topic: str, isolation: str) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "isolation.level": isolation}
    )
    consumer.assign([CkTopicPartition(topic, p, 0) for p in range(2)])
    values: list[bytes] = []
    idle = time.monotonic()
    try:
        while time.monotonic() - idle < 3:
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    values.append(message.value())
                    idle = time.monotonic()
    finally:
        consumer.close()
    return values


def _run(
    args: list[str], kill_after: float | None = None, crash: str | None = None, hooks: Path | None = None
) -> int:
    """Run the job in a process group of its own to its end, or kill -9 the group ``kill_after`` seconds in, or
    let the hook kill it at ``crash`` (``before:N``/``after:N``: batch N's decision record); its exit code."""
    env = dict(os.environ)
    if crash is not None and hooks is not None:
        env["EOS_CRASH"] = crash
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hooks), env.get("PYTHONPATH", "")) if p)
    process = subprocess.Popen(
        [sys.executable, str(JOB), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        if kill_after is not None:
            try:
                process.wait(kill_after)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    if kill_after is None and crash is None and process.returncode != 0:
        raise AssertionError(out[-3000:])
    return int(process.returncode)


def test_driver_crashes_leave_each_row_once(broker: Broker, tmp_path: Path) -> None:
    source, sink = f"eos-in-{uuid.uuid4().hex[:6]}", f"eos-out-{uuid.uuid4().hex[:6]}"
    broker.create_topic(source, partitions=2)
    broker.create_topic(sink, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    inputs = [f"row-{i}".encode() for i in range(ROWS)]
    for i, value in enumerate(inputs):
        producer.produce(source, value=value, partition=i % 2)
    assert producer.flush(30) == 0
    args = [
        broker.bootstrap_servers,
        source,
        sink,
        str(tmp_path / "checkpoint"),
        f"eos-{uuid.uuid4().hex[:6]}",
    ]
    rng = random.Random(20261128)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(CRASH_HOOK)
    assert _run(args, crash="before:1", hooks=hooks) == -signal.SIGKILL
    assert _run(args, crash="after:3", hooks=hooks) == -signal.SIGKILL
    _run(args, kill_after=rng.uniform(12.0, 20.0))  # Spark takes ~10 s to start here: mid-batch or so
    assert _run(args) == 0
    output = _read(broker.bootstrap_servers, sink, "read_committed")
    expected = sorted(v + b"-out" for v in inputs)
    assert sorted(output) == expected, (len(output), len(set(output)), len(set(expected) - set(output)))
    # the attempts the crashes cut short are in the log, aborted: a read_uncommitted reader sees more
    assert len(_read(broker.bootstrap_servers, sink, "read_uncommitted")) > ROWS


def test_exactly_once_options(spark: SparkSession, broker: Broker, tmp_path: Path) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    writer = (
        df.write.format("samsa")
        .mode("append")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", "never")
        .option("deliveryGuarantee", "exactly-once")
        .option("transactionalIdPrefix", "p")
    )
    with pytest.raises(Exception, match="for streaming queries"):
        writer.save()
    stream = spark.readStream.format("rate").load().selectExpr("cast(value as string) as value")
    with pytest.raises(Exception, match="transactionalIdPrefix"):
        (
            stream.writeStream.format("samsa")
            .option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("topic", "never")
            .option("deliveryGuarantee", "exactly-once")
            .option("checkpointLocation", str(tmp_path / "cp"))
            .start()
            .awaitTermination(30)
        )
