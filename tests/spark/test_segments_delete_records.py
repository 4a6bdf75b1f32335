"""format("samsa-segments") after DeleteRecords returns what a consumer of the broker gets (librdkafka as oracle).

The records below the new log start offsets stay in the segment files (DeleteRecords cuts inside a segment); only
``log-start-offset-checkpoint`` says they are gone, and the offline reader must honour it.
"""

from __future__ import annotations

import time

from pyspark.sql import SparkSession

from samsa.client import SyncClient, TopicPartition
from samsa.embedded import Broker
from samsa.storage.log_dir_reader import LogDirReader
from samsa.storage.topic import TopicPartition as StorageTopicPartition

from ..clients.harness import ck_consume
from .brokerdata import produce

TOPIC = "trimmed"
PER_PARTITION = 40
DELETE_BEFORE = {0: 13, 1: 30}  # both inside a batch of 10 and inside the first segment


def test_segments_after_delete_records_match_a_consumer(spark: SparkSession) -> None:
    # the broker writes log-start-offset-checkpoint every 100 ms instead of every minute
    with Broker(config={"log.flush.start.offset.checkpoint.interval.ms": "100"}) as broker:
        broker.create_topic(TOPIC, partitions=2)
        produce(broker.bootstrap_servers, TOPIC, 2, PER_PARTITION)
        with SyncClient(broker.bootstrap_servers) as client:
            low = client.delete_records({TopicPartition(TOPIC, p): o for p, o in DELETE_BEFORE.items()})
        assert {tp.partition: offset for tp, offset in low.items()} == DELETE_BEFORE
        reader = LogDirReader(broker.log_dir)
        wanted = {StorageTopicPartition(TOPIC, p): o for p, o in DELETE_BEFORE.items()}
        deadline = time.monotonic() + 20
        while {tp: reader.log_start_offsets().get(tp) for tp in wanted} != wanted:
            assert time.monotonic() < deadline, "the broker did not checkpoint the log start offsets"
            time.sleep(0.1)
        assert all(len(reader.segments(tp)) == 1 for tp in wanted)  # the deleted records are still on disk

        consumed = sorted(
            (c.partition, c.offset, c.key, c.value)
            for p, start in DELETE_BEFORE.items()
            for c in ck_consume(broker.bootstrap_servers, TOPIC, PER_PARTITION - start, partition=p)
        )
        offline = sorted(
            (r["partition"], r["offset"], r["key"], r["value"])
            for r in spark.read.format("samsa-segments")
            .option("subscribe", TOPIC)
            .load(str(broker.log_dir))
            .collect()
        )
        filtered = (
            spark.read.format("samsa-segments")
            .load(str(broker.log_dir))
            .where(f"topic = '{TOPIC}' AND offset >= 5")
            .count()
        )
    assert [o for p, o, _, _ in consumed if p == 0][:1] == [13] and len(consumed) == 2 * PER_PARTITION - 43
    assert offline == consumed
    assert filtered == len(consumed)
