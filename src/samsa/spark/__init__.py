"""Samsa as a Spark data source, through PySpark's Python Data Source API (PySpark >= 4.1).

    spark.read.format("samsa").option("kafka.bootstrap.servers", "127.0.0.1:9092").option("subscribe", "t").load()
    spark.read.format("samsa-segments").load("/path/to/log/dir")
    df.write.format("samsa").mode("append").option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("topic", "t").save()

A batch write needs ``.mode("append")``: Spark refuses the default mode (ErrorIfExists) for any Python data source
with ``UNSUPPORTED_DATA_SOURCE_SAVE_MODE`` before Samsa's code runs (``samsa.spark.sink``).

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

__all__ = ["register", "use_this_interpreter"]

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register ``samsa`` and ``samsa-segments`` on ``spark`` and enable Python filter pushdown.

    Their Python workers run this interpreter (the one Samsa is installed in) unless ``PYSPARK_PYTHON`` names
    another: without it PySpark starts ``python3`` from ``PATH``, which cannot import Samsa outside an activated
    virtualenv.
    """
    from .segments import SegmentsDataSource
    from .source import SamsaDataSource

    use_this_interpreter(spark)
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(SamsaDataSource)
    spark.dataSource.register(SegmentsDataSource)


def use_this_interpreter(spark: Any) -> None:
    """Make the Python functions registered on ``spark`` from now on run in ``sys.executable``'s workers, unless
    ``PYSPARK_PYTHON`` says otherwise (PySpark reads it once, when the SparkContext starts)."""
    import os
    import sys

    if "PYSPARK_PYTHON" not in os.environ:
        spark.sparkContext.pythonExec = sys.executable
