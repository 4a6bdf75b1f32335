"""A streaming query for ``test_sink_exactly_once``: input topic -> ``samsa`` sink with deliveryGuarantee=exactly-once,
run as its own driver process so the test can kill it.

    python eos_job.py BOOTSTRAP INPUT OUTPUT CHECKPOINT PREFIX

It reads the input from its checkpoint (earliest the first time), 40 records per micro-batch, writes each value
with ``-out`` appended to OUTPUT, and stops when the input is read (availableNow). The sink's commit runs in a
Python worker of Spark's, not in this process: the test's crashes at chosen points of it come from a
``sitecustomize`` it puts on the job's PYTHONPATH (``test_sink_exactly_once.CRASH_HOOK``).
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import concat, lit

from samsa.spark import register


def main() -> None:
    bootstrap, source, sink, checkpoint, prefix = sys.argv[1:6]
    os.environ["EOS_JOB_PGID"] = str(os.getpgid(0))  # for the test's crash hook in Spark's Python workers
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("eos-job")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    rows = (
        spark.readStream.format("samsa")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .load()
        .select(concat("value", lit(b"-out")).alias("value"))
    )
    query = (
        rows.writeStream.format("samsa")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("deliveryGuarantee", "exactly-once")
        .option("transactionalIdPrefix", prefix)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
