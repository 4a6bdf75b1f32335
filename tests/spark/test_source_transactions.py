"""format("samsa") over transactional data: ``kafka.isolation.level=read_committed`` reads only committed records
(aborted ones dropped, markers skipped) and stops at the last stable offset while a transaction is open; the
default stays Spark's read_uncommitted. Batch and streaming."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from samsa.embedded import Broker

TOPIC = "txn-orders"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        b.create_topic(TOPIC, partitions=2)
        yield b


def _txn_producer(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"spark-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(15)
    return producer


def _round(producer: Producer, values: list[bytes], commit: bool) -> None:
    producer.begin_transaction()
    for i, value in enumerate(values):
        producer.produce(TOPIC, value=value, partition=i % 2)
    producer.flush(15)
    if commit:
        producer.commit_transaction(15)
    else:
        producer.abort_transaction(15)


def _values(spark: SparkSession, broker: Broker, **options: str) -> list[bytes]:
    reader = spark.read.format("samsa").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    reader = reader.option("subscribe", TOPIC)
    for key, value in options.items():
        reader = reader.option(key, value)
    return sorted(bytes(r["value"]) for r in reader.load().collect())


def test_read_committed_batch_and_stream(spark: SparkSession, broker: Broker, tmp_path: Path) -> None:
    producer = _txn_producer(broker.bootstrap_servers)
    _round(producer, [b"c1", b"c2", b"c3"], commit=True)
    _round(producer, [b"a1", b"a2", b"a3", b"a4"], commit=False)
    _round(producer, [b"c4", b"c5"], commit=True)
    opened = _txn_producer(broker.bootstrap_servers)
    opened.begin_transaction()
    opened.produce(TOPIC, value=b"open", partition=0)
    opened.flush(15)
    _round(producer, [b"c6", b"c7"], commit=True)  # committed, but on partition 0 behind the open one
    committed = sorted([b"c1", b"c2", b"c3", b"c4", b"c5", b"c6", b"c7"])

    everything = _values(spark, broker)  # Spark's default: read_uncommitted, to the high watermark
    assert everything == sorted([*committed, b"a1", b"a2", b"a3", b"a4", b"open"])
    held = _values(spark, broker, **{"kafka.isolation.level": "read_committed"})
    # partition 0 stops at the open transaction's first offset; partition 1 has no open transaction
    assert b"open" not in held and not any(v.startswith(b"a") for v in held)
    assert set(held) < set(committed) and b"c7" in held  # c7 went to partition 1
    with pytest.raises(Exception, match=r"kafka\.isolation\.level"):
        _values(spark, broker, **{"kafka.isolation.level": "serializable"})

    opened.commit_transaction(15)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the markers follow EndTxn's answer
        if len(_values(spark, broker, **{"kafka.isolation.level": "read_committed"})) == len(committed) + 1:
            break
        time.sleep(0.2)
    assert _values(spark, broker, **{"kafka.isolation.level": "read_committed"}) == sorted(
        [*committed, b"open"]
    )

    stream = (
        spark.readStream.format("samsa")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    query = (
        stream.writeStream.format("memory")
        .queryName("txn_stream")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    streamed = sorted(bytes(r["value"]) for r in spark.sql("select value from txn_stream").collect())
    assert streamed == sorted([*committed, b"open"])
