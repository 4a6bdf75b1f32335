"""format("samsa") as a sink, batch and streaming: what is written reads back the same, keys partition like Kafka."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import samsa.spark
import samsa.spark.sink
from samsa.client.partitioner import partition_for_key
from samsa.embedded import Broker


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


def read_back(spark: SparkSession, broker: Broker, topic: str) -> list[tuple]:
    df = (
        spark.read.format("samsa")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )
    out = []
    for r in df.collect():
        headers = tuple((h["key"], h["value"]) for h in r["headers"]) if r["headers"] else ()
        out.append((r["partition"], r["key"], r["value"], headers))
    return sorted(out, key=repr)


def test_batch_round_trip(spark: SparkSession, broker: Broker) -> None:
    broker.create_topic("sink-batch", partitions=3)
    data = [
        (
            "sink-batch",
            f"k{i}" if i % 4 else None,
            f"v{i}",
            1 if i % 5 == 0 else None,
            [("h", bytearray(b"x"))] if i % 2 else None,
        )
        for i in range(60)
    ]
    df = spark.createDataFrame(
        data,
        "topic string, key string, value string, partition int, headers array<struct<key:string,value:binary>>",
    )
    df.write.format("samsa").mode("append").option("kafka.bootstrap.servers", broker.bootstrap_servers).save()
    got = read_back(spark, broker, "sink-batch")
    want = []
    for _, key, value, partition, headers in data:
        if partition is None:
            partition = partition_for_key(key.encode(), 3) if key is not None else None
        want.append(
            (
                partition,
                None if key is None else key.encode(),
                value.encode(),
                tuple((k, bytes(v)) for k, v in headers or ()),
            )
        )
    # null keys are spread round robin: compare them without their partition
    assert sorted([g for g in got if g[1] is not None], key=repr) == sorted(
        [w for w in want if w[1] is not None], key=repr
    )
    assert sorted(g[1:] for g in got if g[1] is None) == sorted(w[1:] for w in want if w[1] is None)
    assert {g[0] for g in got if g[1] is None} == {0, 1, 2}


def test_topic_option_overrides_and_value_required(spark: SparkSession, broker: Broker) -> None:
    broker.create_topic("sink-option", partitions=1)
    df = spark.createDataFrame([("elsewhere", b"a"), ("elsewhere", b"b")], "topic string, value binary")
    writer = (
        df.write.format("samsa").mode("append").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    )
    writer.option("topic", "sink-option").save()
    assert [g[2] for g in read_back(spark, broker, "sink-option")] == [b"a", b"b"]
    no_value = spark.createDataFrame([("t", b"a")], "topic string, payload binary")
    with pytest.raises(Exception, match="needs a 'value' column"):
        no_value.write.format("samsa").mode("append").option(
            "kafka.bootstrap.servers", broker.bootstrap_servers
        ).save()


def test_missing_topic_is_created_by_the_broker_or_named_in_one_line(
    spark: SparkSession, broker: Broker
) -> None:
    df = spark.createDataFrame([("k", b"v")], "key string, value binary")
    df.write.format("samsa").mode("append").option(
        "kafka.bootstrap.servers", broker.bootstrap_servers
    ).option("topic", "sink-created").save()  # auto.create.topics.enable is on by default, as in Kafka
    assert [g[1:3] for g in read_back(spark, broker, "sink-created")] == [(b"k", b"v")]
    with Broker(config={"auto.create.topics.enable": "false"}) as strict:
        address = strict.bootstrap_servers
        writer = df.write.format("samsa").mode("append").option("kafka.bootstrap.servers", address)
        with pytest.raises(Exception) as info:
            writer.option("topic", "sink-nowhere").save()
    line = (
        f"sink: cannot write to topic 'sink-nowhere' on {address}: "
        "it does not exist and the broker does not create topics"
    )
    assert line in str(info.value)
    shown = str(info.value).splitlines()
    found = next(n for n, text in enumerate(shown) if line in text)
    assert found - shown.index("Traceback (most recent call last):") <= 3, (
        "the message is under a short traceback"
    )


def test_default_save_mode_is_refused_by_spark_so_the_docs_say_append(
    spark: SparkSession, broker: Broker
) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    writer = df.write.format("samsa").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        writer.option("topic", "sink-default-mode").save()  # before the source is asked (PySpark 4.3)
    assert samsa.spark.__doc__ is not None and samsa.spark.sink.__doc__ is not None
    assert '.mode("append")' in samsa.spark.__doc__ and '.mode("append")' in samsa.spark.sink.__doc__


def test_streaming_round_trip(spark: SparkSession, broker: Broker, tmp_path: Path) -> None:
    broker.create_topic("sink-in", partitions=2)
    broker.create_topic("sink-out", partitions=2)
    rows = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(40)], "key string, value string")
    rows.write.format("samsa").mode("append").option(
        "kafka.bootstrap.servers", broker.bootstrap_servers
    ).option("topic", "sink-in").save()
    stream = (
        spark.readStream.format("samsa")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", "sink-in")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "15")
        .load()
        .select("key", F.upper(F.col("value").cast("string")).alias("value"))
    )
    query = (
        stream.writeStream.format("samsa")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("topic", "sink-out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    got = sorted((g[1], g[2]) for g in read_back(spark, broker, "sink-out"))
    assert got == sorted((f"k{i}".encode(), f"V{i}".encode()) for i in range(40))
    assert all(g[0] == partition_for_key(g[1], 2) for g in read_back(spark, broker, "sink-out"))
