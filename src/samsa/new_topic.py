"""``NewTopic``: a topic to create, defined once for the client that asks and the broker that decides (as Kafka's
``NewTopic`` serves its admin client and its CreateTopics request alike)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create: -1 partitions or replication factor take the broker's defaults (``num.partitions``,
    ``default.replication.factor``); ``assignments`` (partition -> broker ids, the first the preferred leader)
    replaces the broker's own placement where given."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    assignments: Mapping[int, Sequence[int]] | None = None
