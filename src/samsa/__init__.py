"""Samsa: a Kafka-compatible, partitioned, segmented commit log in Python."""

__version__ = "0.1.0"
