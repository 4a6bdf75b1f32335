"""Found by PySpark's ``pyspark_*`` data source discovery: makes ``format("samsa-segments")`` work unregistered."""

from samsa.spark.segments import SegmentsDataSource as DefaultSource

__all__ = ["DefaultSource"]
