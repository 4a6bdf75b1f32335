"""Dynamic broker configs: the keys Kafka lets an operator change while brokers run (its ``DynamicBrokerConfig``),
for one broker (``--entity-name <id>``) or every broker (``--entity-default``).

Which keys: the topic defaults (every ``log.*`` key a topic config defaults to, ``log.retention.*``,
``log.roll.*``, ``message.max.bytes``, ``min.insync.replicas``, ``compression.type``,
``unclean.leader.election.enable``; Kafka's ``DynamicLogConfig``), the connection limits (``max.connections``,
``max.connections.per.ip`` and its overrides), the log cleaner's tuning (``log.cleaner.threads``, ``.backoff.ms``,
``.dedupe.buffer.size``, ``.io.buffer.load.factor``) and the replication throttle rates
(:mod:`samsa.cluster.replication_quota`). Every other broker key is read-only, as in Kafka (a restart with a new
``server.properties`` changes it).

Precedence, as Kafka applies it: a broker's own dynamic value, then the cluster default's, then
``server.properties``, then Kafka's default. A changed topic default reaches every open log at once (a topic's
own overrides still win); retention runs at once when a retention setting moved, as a topic's change does.

Where they are kept: in cluster mode in ZooKeeper (``/config/brokers/<id>`` and ``/config/brokers/<default>``,
with a ``config_change_`` notification that every broker applies, so Kafka's tools reading ZooKeeper see them); a
single broker keeps them in its log directories beside the topic configs (``LogManager``); ``broker_configs``
reads and writes them for the handlers.

Event-loop thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from samsa.cluster.replication_quota import DEFAULT_BROKER, DYNAMIC_BROKER_CONFIGS
from samsa.protocol import ErrorCode
from samsa.storage.config import LogConfig

from .config import BROKER_KEYS, ConfigError, KafkaConfig

if TYPE_CHECKING:
    from samsa.storage.log_manager import LogManager

__all__ = [
    "DEFAULT_BROKER",
    "DYNAMIC_KEYS",
    "DYNAMIC_LOG_KEYS",
    "DynamicBrokerConfig",
]

DYNAMIC_LOG_KEYS = frozenset(
    {key.name for key in BROKER_KEYS if key.topic_key is not None}
    | {
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
        "log.roll.ms",
        "log.roll.hours",
        "log.roll.jitter.ms",
        "log.roll.jitter.hours",
        "log.flush.interval.ms",
    }
)
"""The broker keys that set topic defaults, changeable while the broker runs."""
DYNAMIC_CONNECTION_KEYS = frozenset(
    {"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides"}
)
"""The connection limits, changeable while the broker runs (new connections meet the new limits)."""
DYNAMIC_CLEANER_KEYS = frozenset(
    {"log.cleaner.threads", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
     "log.cleaner.io.buffer.load.factor"}
)  # fmt: skip
"""The log cleaner's tuning, changeable while the broker runs (the next cleaning pass reads it)."""
DYNAMIC_KEYS = DYNAMIC_LOG_KEYS | DYNAMIC_CONNECTION_KEYS | DYNAMIC_CLEANER_KEYS | DYNAMIC_BROKER_CONFIGS


class DynamicBrokerConfig:
    """This broker's static config with the dynamic values laid over it (module doc)."""

    def __init__(self, static: KafkaConfig) -> None:
        self.static = static
        self.default: dict[str, str] = {}  # the cluster default's dynamic values
        self.own: dict[str, str] = {}  # this broker's own
        self.current = static
        self.listeners: list[Callable[[KafkaConfig], None]] = []  # told the config after each update

    def source_of(self, name: str) -> str | None:
        """``"broker"`` when this broker's own dynamic value sets ``name``, ``"default"`` when the cluster
        default's does, None when neither does."""
        if name in self.own:
            return "broker"
        if name in self.default:
            return "default"
        return None

    def value_of(self, name: str) -> str | None:
        """The dynamic value that applies to ``name`` (own before default), None without one."""
        return self.own.get(name, self.default.get(name))

    def overlaid(self, default: Mapping[str, str], own: Mapping[str, str]) -> KafkaConfig:
        """The static config with these dynamic values over it (ConfigError naming the key for a bad value).
        The throttle rates take no part: the replication side applies them."""
        layered = {k: v for k, v in {**default, **own}.items() if k in DYNAMIC_KEYS - DYNAMIC_BROKER_CONFIGS}
        if not layered:
            return self.static
        return self.static.with_overrides(layered)

    def validate(self, entity: str, config: Mapping[str, str]) -> tuple[ErrorCode, str] | None:
        """Why ``config`` cannot be kept for ``entity`` (an id or ``<default>``), with Kafka's error code:
        INVALID_REQUEST for a key that is not dynamic, INVALID_CONFIG for a bad value; None when it can."""
        for name, value in config.items():
            if name not in DYNAMIC_KEYS:
                reason = f"{name} cannot be altered while the broker runs (change it in server.properties)"
                return ErrorCode.INVALID_REQUEST, reason
            if name in DYNAMIC_BROKER_CONFIGS and not value.lstrip("-").isdigit():
                return ErrorCode.INVALID_CONFIG, f"{name} must be a number of bytes per second"
        default, own = (config, self.own) if entity == DEFAULT_BROKER else (self.default, config)
        try:
            self.overlaid(default, own)
        except ConfigError as exc:
            return ErrorCode.INVALID_CONFIG, str(exc)
        return None

    def update(self, default: Mapping[str, str], own: Mapping[str, str], log_manager: LogManager) -> None:
        """Take these dynamic values: the topic defaults they give go to every open log."""
        current = self.overlaid(default, own)
        self.default, self.own, self.current = dict(default), dict(own), current
        defaults = LogConfig.from_properties(current.topic_defaults())
        if defaults != log_manager.default_config:
            log_manager.update_default_config(defaults)
        for listener in self.listeners:
            listener(current)
