"""``TopicPartition``: a topic name and a partition number, defined once for every layer (records and clock aside,
each package uses it: storage names directories by it, the protocol client keys results by it, Spark plans by it)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A topic and a partition number: immutable, hashable, ordered by (topic, partition), unpackable as a pair.

    ``str`` gives ``<topic>-<partition>``, the name of the partition's directory in a log dir.
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


new_topic_partition: Callable[[tuple[str, int]], TopicPartition] = functools.partial(
    tuple.__new__, TopicPartition
)
"""A ``TopicPartition`` from a (topic, partition) pair, without a named tuple's Python-level ``__new__`` (a third of
the cost): for the request paths that make one per partition of every request."""
