"""Samsa as a Spark data source, through PySpark's Python Data Source API (PySpark >= 4.1).

    spark.read.format("samsa").option("kafka.bootstrap.servers", "127.0.0.1:9092").option("subscribe", "t").load()
    spark.read.format("samsa-segments").load("/path/to/log/dir")

Both names are found with no registration step when the top-level packages ``pyspark_samsa`` and
``pyspark_samsa_segments`` are importable by Spark's Python workers (PySpark's ``pyspark_*`` discovery, which runs
once per JVM). ``register(spark)`` registers them explicitly and turns on Python filter pushdown, which
``samsa-segments`` uses to skip segments.

Layout: ``options`` (the Kafka connector's option names and offset JSON), ``arrow`` (records to RecordBatches),
``segments`` (the log-directory reader), ``source`` / ``sink`` (through a broker, with ``samsa.client``),
``pipeline`` (the access-log demo job).
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register ``samsa`` and ``samsa-segments`` on ``spark`` and enable Python filter pushdown."""
    from .segments import SegmentsDataSource
    from .source import SamsaDataSource

    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(SamsaDataSource)
    spark.dataSource.register(SegmentsDataSource)
