"""A Spark job run in its own process by test_spark_connector.py: Spark's own Kafka connector against Samsa.

Its own process because the connector's jars must be on the JVM's class path when the session starts, and the Spark
suite (tests/spark/) shares one session without them. Prints one JSON object on its last line of stdout.

    python spark_connector_job.py BOOTSTRAP TOPIC JARS_DIR CHECKPOINT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

RECORDS = 30
PARTITIONS = 3


def main(bootstrap: str, topic: str, jars: Path, checkpoint: Path) -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("samsa-spark-kafka-connector")
        .config("spark.jars", ",".join(str(jar) for jar in sorted(jars.glob("*.jar"))))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    options = {"kafka.bootstrap.servers": bootstrap}
    rows = [(f"k{i}", f"v{i}", i % PARTITIONS) for i in range(RECORDS)]
    (
        spark.createDataFrame(rows, "key string, value string, partition int")
        .withColumn(
            "headers", F.array(F.struct(F.lit("h").alias("key"), F.col("key").cast("binary").alias("value")))
        )
        .write.format("kafka")
        .options(**options)
        .option("topic", topic)
        .save()
    )
    starting = json.dumps({topic: {"0": 2, "1": -2, "2": -2}})
    ending = json.dumps({topic: {"0": 5, "1": -1, "2": -1}})
    batch = (
        spark.read.format("kafka")
        .options(**options)
        .option("subscribe", topic)
        .option("startingOffsets", starting)
        .option("endingOffsets", ending)
        .option("includeHeaders", "true")
        .option("minPartitions", "6")
        .load()
    )
    read = [
        {
            "key": row.key.decode(),
            "value": row.value.decode(),
            "partition": row.partition,
            "offset": row.offset,
            "headers": [[h.key, h.value.decode()] for h in row.headers],
        }
        for row in batch.collect()
    ]
    spark_partitions = batch.rdd.getNumPartitions()
    stream_batches = []
    for _ in range(2):  # the second run restarts from the checkpoint: no batch, nothing read again
        query = (
            spark.readStream.format("kafka")
            .options(**options)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "10")
            .load()
            .select("key", "value", "partition", "offset")
            .writeStream.format("parquet")
            .option("path", str(checkpoint / "out"))
            .option("checkpointLocation", str(checkpoint / "state"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        stream_batches.append([p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0])
        query.stop()
    streamed = spark.read.parquet(str(checkpoint / "out")).select("partition", "offset").collect()
    print(
        json.dumps(
            {
                "read": read,
                "spark_partitions": spark_partitions,
                "stream_batches": stream_batches,
                "streamed": sorted([row.partition, row.offset] for row in streamed),
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
