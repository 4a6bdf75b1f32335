"""Topic configuration as DescribeConfigs shows it and AlterConfigs changes it.

Each topic key is reported with its source, as Kafka reports it: DYNAMIC_TOPIC_CONFIG for a topic override,
STATIC_BROKER_CONFIG when the broker's ``server.properties`` set the matching ``log.*`` key, DEFAULT_CONFIG
otherwise. Changes are validated as a whole before any is stored, then applied to the topic's open logs at once
(retention, segment size and the rest take effect on the next append or retention pass).

In cluster mode a topic's overrides live in ZooKeeper (``/config/topics/<topic>``): any broker describes them from
there, and a change is written there with a change notification that every broker applies to the logs it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode
from samsa.storage.errors import InvalidConfigError

from .config import BROKER_KEYS, ConfigType

if TYPE_CHECKING:
    from .services import BrokerServices


class ConfigSource(IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ResourceType(IntEnum):
    TOPIC = 2
    BROKER = 4


# DescribeConfigs v3+ config types
CONFIG_TYPES = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
    ConfigType.PASSWORD: 9,
}

BROKER_KEY_FOR_TOPIC_KEY = {key.topic_key: key.name for key in BROKER_KEYS if key.topic_key}
BROKER_KEY_FOR_TOPIC_KEY.update(
    {
        "segment.ms": "log.roll.ms",
        "retention.ms": "log.retention.ms",
        "segment.jitter.ms": "log.roll.jitter.ms",
    }
)


async def topic_overrides(services: BrokerServices, topic: str) -> dict[str, str] | None:
    """The topic's own overrides; None when there is no such topic."""
    store = services.metadata_store
    if not store.partitions_of(topic):
        return None
    return await store.topic_overrides(topic)


def effective_config(services: BrokerServices, overrides: Mapping[str, str]) -> dict[str, str]:
    """Every topic-level key's value for a topic with these overrides."""
    manager = services.log_manager
    config = manager.default_config.with_overrides(overrides) if overrides else manager.default_config
    return config.to_properties()


def describe_topic(
    services: BrokerServices, overrides: Mapping[str, str]
) -> list[tuple[str, str | None, ConfigSource]]:
    """(key, value, source) for every topic-level key of a topic with these overrides, sorted by key."""
    rows: list[tuple[str, str | None, ConfigSource]] = []
    for key, value in sorted(effective_config(services, overrides).items()):
        if key in overrides:
            source = ConfigSource.DYNAMIC_TOPIC_CONFIG
        elif services.config.is_explicit(BROKER_KEY_FOR_TOPIC_KEY.get(key, "")):
            source = ConfigSource.STATIC_BROKER_CONFIG
        else:
            source = ConfigSource.DEFAULT_CONFIG
        rows.append((key, value, source))
    return rows


def describe_broker(services: BrokerServices) -> list[tuple[str, str | None, ConfigSource]]:
    rows: list[tuple[str, str | None, ConfigSource]] = []
    for key in BROKER_KEYS:
        source = (
            ConfigSource.STATIC_BROKER_CONFIG
            if services.config.is_explicit(key.name)
            else ConfigSource.DEFAULT_CONFIG
        )
        rows.append((key.name, key.render(services.config.get(key.name)), source))
    return rows


async def replace_topic_overrides(
    services: BrokerServices, topic: str, overrides: Mapping[str, str], *, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    if await topic_overrides(services, topic) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist."
    manager = services.log_manager
    try:
        manager.default_config.with_overrides(overrides)
    except InvalidConfigError as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)
    if validate_only:
        return ErrorCode.NONE, None
    await services.metadata_store.set_topic_overrides(topic, dict(overrides))
    return ErrorCode.NONE, None
