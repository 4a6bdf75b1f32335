"""Found by PySpark's ``pyspark_*`` data source discovery: makes ``format("samsa")`` work with no registration."""

from samsa.spark.source import SamsaDataSource as DefaultSource

__all__ = ["DefaultSource"]
