"""Kafka's default for each ``server.properties`` key that a layer below the broker also reads: stated here once.

The broker's key table (``samsa.broker.config``) takes its defaults for these keys from ``SERVER_DEFAULTS``, and
so do the settings each layer reads, which sit below the broker and cannot import it: ``LogConfig`` (a topic's
defaults, derived from the ``log.*`` keys as Kafka derives them), ``CleanerConfig``, ``FetcherConfig``,
``GroupConfig``, ``CoordinatorConfig``, ``ElectionConfig`` and ``LogManager``'s task intervals. Each value is in its key's own unit (hours for
``log.roll.hours``); a layer converts (``segment.ms`` is ``log.roll.hours`` in milliseconds) with the helpers
below. A list-valued key holds a tuple.

Plain data, no imports: every layer may read it.
"""

from __future__ import annotations

from typing import Any, Final

LONG_MAX: Final = 2**63 - 1
INT_MAX: Final = 2**31 - 1
HOUR_MS: Final = 3_600_000
MINUTE_MS: Final = 60_000

SERVER_DEFAULTS: Final[dict[str, Any]] = {
    # the log (topic-level defaults: LogConfig)
    "log.segment.bytes": 1073741824,
    "log.roll.hours": 168,
    "log.roll.jitter.hours": 0,
    "log.index.size.max.bytes": 10485760,
    "log.index.interval.bytes": 4096,
    "log.retention.hours": 168,
    "log.retention.bytes": -1,
    "log.segment.delete.delay.ms": 60000,
    "log.flush.interval.messages": LONG_MAX,
    "log.flush.scheduler.interval.ms": LONG_MAX,
    "message.max.bytes": 1048588,
    "log.message.timestamp.type": "CreateTime",
    "log.cleanup.policy": ("delete",),
    "min.insync.replicas": 1,
    "log.preallocate": False,
    "log.cleaner.delete.retention.ms": 86400000,
    "log.cleaner.max.compaction.lag.ms": LONG_MAX,
    "log.cleaner.min.compaction.lag.ms": 0,
    "log.cleaner.min.cleanable.ratio": 0.5,
    "compression.type": "producer",
    # the log manager's periodic tasks (LogManager)
    "log.retention.check.interval.ms": 300000,
    "log.flush.offset.checkpoint.interval.ms": 60000,
    "log.flush.start.offset.checkpoint.interval.ms": 60000,
    "replica.high.watermark.checkpoint.interval.ms": 5000,
    # the cleaner (CleanerConfig)
    "log.cleaner.enable": True,
    "log.cleaner.backoff.ms": 15000,
    "log.cleaner.dedupe.buffer.size": 134217728,
    "log.cleaner.io.buffer.load.factor": 0.9,
    # a follower's fetchers (FetcherConfig)
    "replica.fetch.max.bytes": 1048576,
    "replica.fetch.response.max.bytes": 10485760,
    "replica.fetch.wait.max.ms": 500,
    "replica.fetch.min.bytes": 1,
    "replica.fetch.backoff.ms": 1000,
    "replica.socket.timeout.ms": 30000,
    # groups (GroupConfig) and the group coordinator (CoordinatorConfig)
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "group.initial.rebalance.delay.ms": 3000,
    "group.max.size": INT_MAX,
    "offset.metadata.max.bytes": 4096,
    "offsets.topic.num.partitions": 50,
    "offsets.topic.segment.bytes": 104857600,
    "offsets.retention.minutes": 10080,
    "offsets.retention.check.interval.ms": 600000,
    "offsets.commit.timeout.ms": 5000,
    # the controller's elections (ElectionConfig)
    "auto.leader.rebalance.enable": True,
    "leader.imbalance.per.broker.percentage": 10,
    "leader.imbalance.check.interval.seconds": 300,
    "unclean.leader.election.enable": False,
}


def default(key: str) -> Any:
    """Kafka's default for ``key``, in the key's own unit; KeyError for a key not in the table."""
    return SERVER_DEFAULTS[key]


def hours_ms(key: str) -> int:
    """The default of an ``*.hours`` key, in milliseconds."""
    return int(SERVER_DEFAULTS[key]) * HOUR_MS


def minutes_ms(key: str) -> int:
    """The default of a ``*.minutes`` key, in milliseconds."""
    return int(SERVER_DEFAULTS[key]) * MINUTE_MS
