"""``LogConfig``: the topic-level settings a ``Log`` obeys, under Kafka's topic-config names.

    key                       field                    default        rule
    segment.bytes             segment_bytes            1073741824     >= 14
    segment.ms                segment_ms               604800000      >= 1
    segment.jitter.ms         segment_jitter_ms        0              >= 0
    segment.index.bytes       segment_index_bytes      10485760       >= 8 (one offset-index entry)
    index.interval.bytes      index_interval_bytes     4096           >= 0
    retention.ms              retention_ms             604800000      >= -1 (-1: unlimited)
    retention.bytes           retention_bytes          -1             any long (< 0: unlimited)
    file.delete.delay.ms      file_delete_delay_ms     60000          >= 0
    flush.messages            flush_messages           Long.MAX       >= 1
    flush.ms                  flush_ms                 Long.MAX       >= 0
    max.message.bytes         max_message_bytes        1048588        >= 0
    message.timestamp.type    message_timestamp_type   CreateTime     CreateTime | LogAppendTime
    cleanup.policy            cleanup_policy           delete         comma list of delete, compact
    min.insync.replicas       min_insync_replicas      1              >= 1
    preallocate               preallocate              false          true | false
    delete.retention.ms       delete_retention_ms      86400000       >= 0
    max.compaction.lag.ms     max_compaction_lag_ms    Long.MAX       >= 1
    min.compaction.lag.ms     min_compaction_lag_ms    0              >= 0
    min.cleanable.dirty.ratio min_cleanable_dirty_ratio 0.5           in [0, 1]
    compression.type          compression_type         producer       producer|uncompressed|gzip|snappy|lz4|zstd

A compressed batch a leader must inflate (a compacted topic's key check, a legacy wrapper's offset count) may
inflate to ``max_inflated_bytes``: ``INFLATION_FACTOR`` (16) times max.message.bytes, 16 MiB by default; past
that it is refused as too large, having inflated no more than that (Kafka has no such bound; a 480 KB gzip batch
can inflate to 100 MB).

Other Kafka topic keys (``OTHER_TOPIC_KEYS``) are accepted and kept as strings in ``others`` so a client's
CreateTopics with them round-trips; any other key is an ``InvalidConfigError`` naming the key.

Immutable and safe to share between threads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from samsa.server_defaults import default, hours_ms

from .errors import InvalidConfigError

if TYPE_CHECKING:
    import random

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
INFLATION_FACTOR = 16

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
DELETE = "delete"
COMPACT = "compact"
COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")

OTHER_TOPIC_KEYS = frozenset(
    {
        "unclean.leader.election.enable",
        "message.timestamp.difference.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms",
        "message.downconversion.enable",
        "message.format.version",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "local.retention.ms",
        "local.retention.bytes",
        "remote.storage.enable",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
    }
)


def _long(key: str, raw: str | int, minimum: int) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise InvalidConfigError(key, raw, "not an integer") from None
    if not -(2**63) <= value <= LONG_MAX:
        raise InvalidConfigError(key, raw, "outside the range of a long")
    if value < minimum:
        raise InvalidConfigError(key, raw, f"must be at least {minimum}")
    return value


def _int(key: str, raw: str | int, minimum: int) -> int:
    value = _long(key, raw, minimum)
    if value > INT_MAX:
        raise InvalidConfigError(key, raw, f"must be at most {INT_MAX}")
    return value


def _bool(key: str, raw: str | int) -> bool:
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidConfigError(key, raw, "must be true or false")
    return text == "true"


def _ratio(key: str, raw: str | int) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InvalidConfigError(key, raw, "not a number") from None
    if not 0.0 <= value <= 1.0:
        raise InvalidConfigError(key, raw, "must be between 0 and 1")
    return value


def _choice(key: str, raw: str | int, choices: tuple[str, ...]) -> str:
    text = str(raw).strip()
    if text not in choices:
        raise InvalidConfigError(key, raw, f"must be one of {', '.join(choices)}")
    return text


def _policy(key: str, raw: str | int) -> tuple[str, ...]:
    items = tuple(part.strip().lower() for part in str(raw).split(",") if part.strip())
    if not items or any(item not in (DELETE, COMPACT) for item in items):
        raise InvalidConfigError(key, raw, "must be a comma-separated list of delete and compact")
    return tuple(sorted(set(items), key=items.index))


_Parser = Callable[[str, "str | int"], object]

_PARSERS: dict[str, tuple[str, _Parser]] = {
    "segment.bytes": ("segment_bytes", lambda k, v: _int(k, v, 14)),
    "segment.ms": ("segment_ms", lambda k, v: _long(k, v, 1)),
    "segment.jitter.ms": ("segment_jitter_ms", lambda k, v: _long(k, v, 0)),
    "segment.index.bytes": ("segment_index_bytes", lambda k, v: _int(k, v, 8)),
    "index.interval.bytes": ("index_interval_bytes", lambda k, v: _int(k, v, 0)),
    "retention.ms": ("retention_ms", lambda k, v: _long(k, v, -1)),
    "retention.bytes": ("retention_bytes", lambda k, v: _long(k, v, -(2**63))),
    "file.delete.delay.ms": ("file_delete_delay_ms", lambda k, v: _long(k, v, 0)),
    "flush.messages": ("flush_messages", lambda k, v: _long(k, v, 1)),
    "flush.ms": ("flush_ms", lambda k, v: _long(k, v, 0)),
    "max.message.bytes": ("max_message_bytes", lambda k, v: _int(k, v, 0)),
    "message.timestamp.type": (
        "message_timestamp_type",
        lambda k, v: _choice(k, v, (CREATE_TIME, LOG_APPEND_TIME)),
    ),
    "cleanup.policy": ("cleanup_policy", _policy),
    "min.insync.replicas": ("min_insync_replicas", lambda k, v: _int(k, v, 1)),
    "preallocate": ("preallocate", _bool),
    "delete.retention.ms": ("delete_retention_ms", lambda k, v: _long(k, v, 0)),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", lambda k, v: _long(k, v, 1)),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", lambda k, v: _long(k, v, 0)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "compression.type": ("compression_type", lambda k, v: _choice(k, v, COMPRESSION_TYPES)),
}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A topic's log settings; field names are the Kafka keys with ``_`` for ``.`` (table in the module doc).
    Each default is the broker key's that sets it (``samsa.server_defaults``), as Kafka derives a topic's."""

    segment_bytes: int = default("log.segment.bytes")
    segment_ms: int = hours_ms("log.roll.hours")
    segment_jitter_ms: int = hours_ms("log.roll.jitter.hours")
    segment_index_bytes: int = default("log.index.size.max.bytes")
    index_interval_bytes: int = default("log.index.interval.bytes")
    retention_ms: int = hours_ms("log.retention.hours")
    retention_bytes: int = default("log.retention.bytes")
    file_delete_delay_ms: int = default("log.segment.delete.delay.ms")
    flush_messages: int = default("log.flush.interval.messages")
    flush_ms: int = default("log.flush.scheduler.interval.ms")
    max_message_bytes: int = default("message.max.bytes")
    message_timestamp_type: str = default("log.message.timestamp.type")
    cleanup_policy: tuple[str, ...] = default("log.cleanup.policy")
    min_insync_replicas: int = default("min.insync.replicas")
    preallocate: bool = default("log.preallocate")
    delete_retention_ms: int = default("log.cleaner.delete.retention.ms")
    max_compaction_lag_ms: int = default("log.cleaner.max.compaction.lag.ms")
    min_compaction_lag_ms: int = default("log.cleaner.min.compaction.lag.ms")
    min_cleanable_dirty_ratio: float = default("log.cleaner.min.cleanable.ratio")
    compression_type: str = default("compression.type")
    others: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def from_properties(cls, properties: Mapping[str, str | int]) -> LogConfig:
        """Kafka's defaults overridden by ``properties`` (topic-config keys); raises InvalidConfigError."""
        return cls().with_overrides(properties)

    def with_overrides(self, properties: Mapping[str, str | int]) -> LogConfig:
        """A copy with ``properties`` applied and validated; raises InvalidConfigError naming key and value."""
        changes: dict[str, object] = {}
        others = dict(self.others)
        for key, raw in properties.items():
            if key in _PARSERS:
                name, parse = _PARSERS[key]
                changes[name] = parse(key, raw)
            elif key in OTHER_TOPIC_KEYS:
                others[key] = str(raw)
            else:
                raise InvalidConfigError(key, raw, "unknown topic configuration")
        changes["others"] = tuple(sorted(others.items()))
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def to_properties(self) -> dict[str, str]:
        """Every key with its value as Kafka writes it (booleans lower-case, lists comma-separated)."""
        out: dict[str, str] = {}
        for key, (name, _) in _PARSERS.items():
            value = getattr(self, name)
            if isinstance(value, bool):
                out[key] = "true" if value else "false"
            elif isinstance(value, tuple):
                out[key] = ",".join(value)
            else:
                out[key] = str(value)
        out.update(self.others)
        return out

    @property
    def is_compacted(self) -> bool:
        return COMPACT in self.cleanup_policy

    @property
    def has_delete(self) -> bool:
        return DELETE in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        """True when the broker stamps batches with its clock (message.timestamp.type=LogAppendTime)."""
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def max_inflated_bytes(self) -> int:
        """How far a compressed batch may inflate when a leader must look inside it (module doc)."""
        return INFLATION_FACTOR * max(self.max_message_bytes, 1)

    @property
    def max_segment_ms(self) -> int:
        """segment.ms, or max.compaction.lag.ms when smaller on a compacted topic (Kafka's maxSegmentMs)."""
        if self.is_compacted and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def random_segment_jitter(self, rng: random.Random) -> int:
        """0 without jitter, else ``abs(randomInt32) % min(segment.jitter.ms, segment.ms)``, drawn per segment."""
        if self.segment_jitter_ms == 0:
            return 0
        return abs(rng.randint(-(2**31), 2**31 - 1)) % min(self.segment_jitter_ms, self.segment_ms)
