"""format("samsa") through a broker: exact ranges, timestamps, headers, streaming in bounded batches, restart,
failOnDataLoss, and bad options."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from samsa.embedded import Broker

from .brokerdata import BASE_MS, Sent, produce

TOPIC = "orders"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        b.create_topic(TOPIC, partitions=3)
        yield b


@pytest.fixture(scope="module")
def sent(broker: Broker) -> list[Sent]:
    return produce(broker.bootstrap_servers, TOPIC, 3, 40)


def batch(spark: SparkSession, broker: Broker, **options: str) -> DataFrame:
    reader = spark.read.format("samsa").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def rows(df: DataFrame) -> list[tuple]:
    out = []
    for r in df.collect():
        headers = tuple((h["key"], h["value"]) for h in r["headers"]) if r.asDict().get("headers") else ()
        out.append(
            (
                r["partition"],
                r["offset"],
                int(r["timestamp"].timestamp() * 1000),
                r["key"],
                r["value"],
                headers,
            )
        )
    return sorted(out)


def want(items: list[Sent], headers: bool = False) -> list[tuple]:
    return sorted(
        (s.partition, s.offset, s.timestamp_ms, s.key, s.value, s.headers if headers else ()) for s in items
    )


def test_exact_offset_range_with_headers(spark: SparkSession, broker: Broker, sent: list[Sent]) -> None:
    df = batch(
        spark,
        broker,
        subscribe=TOPIC,
        includeHeaders="true",
        startingOffsets=json.dumps({TOPIC: {"0": 5, "1": -2, "2": 30}}),
        endingOffsets=json.dumps({TOPIC: {"0": 17, "1": 3, "2": -1}}),
    )
    assert df.columns[-1] == "headers"
    expected = [
        s
        for s in sent
        if (s.partition == 0 and 5 <= s.offset < 17)
        or (s.partition == 1 and s.offset < 3)
        or (s.partition == 2 and s.offset >= 30)
    ]
    assert rows(df) == want(expected, headers=True)
    assert any(r[5] for r in rows(df))  # headers came back, including a null header value


def test_start_by_timestamp(spark: SparkSession, broker: Broker, sent: list[Sent]) -> None:
    df = batch(spark, broker, subscribe=TOPIC, startingTimestamp=str(BASE_MS + 25_000), minPartitions="6")
    assert df.rdd.getNumPartitions() >= 6
    assert rows(df) == want([s for s in sent if s.timestamp_ms >= BASE_MS + 25_000])
    per_partition = json.dumps({TOPIC: {"0": BASE_MS + 38_000, "1": BASE_MS, "2": BASE_MS + 99_000}})
    df = batch(spark, broker, assign=json.dumps({TOPIC: [0, 1, 2]}), startingOffsetsByTimestamp=per_partition)
    assert rows(df) == want([s for s in sent if (s.partition == 0 and s.offset >= 38) or s.partition == 1])
    df = batch(spark, broker, subscribePattern="ord[e]rs", endingTimestamp=str(BASE_MS + 4_000))
    assert rows(df) == want([s for s in sent if s.timestamp_ms < BASE_MS + 4_000])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"subscribe": "no-such-topic"},
            "option 'subscribe': unknown topic.* --create --topic no-such-topic",
        ),
        ({"subscribe": TOPIC, "startingOffsets": "{not json"}, "option 'startingOffsets': malformed JSON"),
        (
            {"subscribe": TOPIC, "startingOffsets": json.dumps({TOPIC: {"0": 1}})},
            "gives no offset for partition",
        ),
        ({"assign": json.dumps({TOPIC: [7]})}, "option 'assign': unknown partition"),
        ({}, "one of the options 'subscribe'"),
    ],
)
def test_bad_options_name_the_option(
    spark: SparkSession, broker: Broker, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        batch(spark, broker, **options).count()


def test_empty_topic_and_empty_range_read_no_rows(
    spark: SparkSession, broker: Broker, sent: list[Sent]
) -> None:
    broker.create_topic("empty1", partitions=2)
    assert batch(spark, broker, subscribe="empty1").count() == 0
    assert batch(spark, broker, subscribe="empty1", includeHeaders="true").collect() == []
    no_range = json.dumps({TOPIC: {"0": 4, "1": 4, "2": 4}})
    assert (
        batch(spark, broker, subscribe=TOPIC, startingOffsets=no_range, endingOffsets=no_range).count() == 0
    )


NO_BROKER = "no broker answers at kafka.bootstrap.servers=127.0.0.1:1"


def _short(message: str) -> str:
    """The Python traceback Spark quotes: one frame of Samsa's and the error's line, no chained cause."""
    assert "The above exception was the direct cause" not in message
    assert "samsa/client" not in message and "source.py" not in message, message
    return message


def test_unreachable_broker(spark: SparkSession) -> None:
    with pytest.raises(Exception, match=NO_BROKER) as raised:
        spark.read.format("samsa").option("kafka.bootstrap.servers", "127.0.0.1:1").option(
            "subscribe", "t"
        ).load().count()
    _short(str(raised.value))


def test_unreachable_broker_streaming(spark: SparkSession, tmp_path: Path) -> None:
    query = (
        spark.readStream.format("samsa")
        .option("kafka.bootstrap.servers", "127.0.0.1:1")
        .option("subscribe", "t")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    with pytest.raises(StreamingQueryException, match=NO_BROKER) as raised:
        query.awaitTermination(60)
    _short(str(raised.value))


def _stream(spark: SparkSession, broker: Broker, topic: str, out: Path, checkpoint: Path, **options: str):  # type: ignore[no-untyped-def]
    reader = spark.readStream.format("samsa").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    reader = reader.option("subscribe", topic).option("startingOffsets", "earliest")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
    except StreamingQueryException:
        pass  # the caller looks at query.exception()
    return query


def test_stream_bounded_batches_and_restart(spark: SparkSession, broker: Broker, tmp_path: Path) -> None:
    topic = "stream-restart"
    broker.create_topic(topic, partitions=2)
    first = produce(broker.bootstrap_servers, topic, 2, 50)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = _stream(spark, broker, topic, out, checkpoint, maxOffsetsPerTrigger="30")
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 100 and max(sizes) <= 30 and len(sizes) >= 4
    offsets = (checkpoint / "offsets" / "0").read_text().splitlines()[-1]
    assert json.loads(offsets) == {topic: {"0": 15, "1": 15}}
    second = produce(broker.bootstrap_servers, topic, 2, 20, tag="b")
    _stream(spark, broker, topic, out, checkpoint, maxOffsetsPerTrigger="30")
    got = sorted((r.partition, r.offset, r.value) for r in spark.read.parquet(str(out)).collect())
    assert got == sorted((s.partition, s.offset, s.value) for s in first + second)


def test_fail_on_data_loss(spark: SparkSession, broker: Broker, tmp_path: Path) -> None:
    topic = "retention"
    broker.create_topic(topic, partitions=1)
    produce(broker.bootstrap_servers, topic, 1, 30)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    _stream(spark, broker, topic, out, checkpoint)
    later = produce(broker.bootstrap_servers, topic, 1, 30, tag="late")
    broker.advance_log_start_offset(topic, 0, 45)  # offsets 30..44 are gone before the query sees them
    query = _stream(spark, broker, topic, out, checkpoint)
    assert query.exception() is not None and "no longer in the log" in str(query.exception())
    _stream(spark, broker, topic, out, checkpoint, failOnDataLoss="false")
    offsets = sorted(r.offset for r in spark.read.parquet(str(out)).collect())
    assert offsets == list(range(30)) + [s.offset for s in later if s.offset >= 45]


def test_batch_read_after_retention(spark: SparkSession, broker: Broker) -> None:
    topic = "retention-batch"
    broker.create_topic(topic, partitions=1)
    produce(broker.bootstrap_servers, topic, 1, 20)
    broker.advance_log_start_offset(topic, 0, 8)
    start = json.dumps({topic: {"0": 0}})
    with pytest.raises(Exception, match=r"offsets \[0, 8\) are no longer in the log"):
        batch(spark, broker, subscribe=topic, startingOffsets=start).count()
    df = batch(spark, broker, subscribe=topic, startingOffsets=start, failOnDataLoss="false")
    assert sorted(r.offset for r in df.select("offset").collect()) == list(range(8, 20))
    time.sleep(0)


def test_partition_that_disappears(spark: SparkSession, broker: Broker, tmp_path: Path) -> None:
    from samsa.client import SyncClient

    topic = "vanishing"
    broker.create_topic(topic, partitions=2)
    produce(broker.bootstrap_servers, topic, 2, 5)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    _stream(spark, broker, topic, out, checkpoint)
    with SyncClient(broker.bootstrap_servers) as client:
        client.delete_topics([topic])
    query = _stream(spark, broker, topic, out, checkpoint)
    assert query.exception() is not None
    assert "partition(s) ['vanishing-0', 'vanishing-1'] disappeared" in str(query.exception())
    query = _stream(spark, broker, topic, out, checkpoint, failOnDataLoss="false")
    assert query.exception() is None
    assert spark.read.parquet(str(out)).count() == 10


def test_segments_reader_returns_the_same_rows(spark: SparkSession, broker: Broker, sent: list[Sent]) -> None:
    columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    via_broker = batch(spark, broker, subscribe=TOPIC, includeHeaders="true").select(*columns)
    via_files = (
        spark.read.format("samsa-segments")
        .option("subscribe", TOPIC)
        .option("includeHeaders", "true")
        .load(str(broker.log_dir))
        .select(*columns)
    )
    assert via_files.count() == len(sent)
    assert via_broker.exceptAll(via_files).count() == 0 and via_files.exceptAll(via_broker).count() == 0
