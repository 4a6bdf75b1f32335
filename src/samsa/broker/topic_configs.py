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

from .config import BROKER_KEYS, KEYS_BY_NAME, ConfigType

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


Entry = tuple[str, str | None, ConfigSource]
"""(name, value, source): a described config, or one of its synonyms."""

# Kafka's synonym chains: the broker keys a value may come from, the first of a chain winning over the next
BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    name: chain
    for chain in (
        ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
        ("log.roll.ms", "log.roll.hours"),
        ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    )
    for name in chain
}
BROKER_SYNONYMS["log.flush.interval.ms"] = ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")


def broker_synonyms(
    services: BrokerServices, name: str, own: Mapping[str, str], default: Mapping[str, str]
) -> list[Entry]:
    """Where broker key ``name``'s value may come from, by precedence, as Kafka lists them: source by source
    (this broker's dynamic configs ``own``, the cluster default's ``default``, ``server.properties``, Kafka's
    defaults), each over ``name``'s synonym chain, the entries before the first one of ``name`` itself left out."""
    chain = BROKER_SYNONYMS.get(name, (name,))
    entries: list[Entry] = [(k, own[k], ConfigSource.DYNAMIC_BROKER_CONFIG) for k in chain if k in own]
    entries += [(k, default[k], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) for k in chain if k in default]
    for key_name in chain:
        key = KEYS_BY_NAME.get(key_name)
        if key is not None and services.config.is_explicit(key_name):
            entries.append(
                (key_name, key.render(services.config.get(key_name)), ConfigSource.STATIC_BROKER_CONFIG)
            )
    for key_name in chain:
        key = KEYS_BY_NAME.get(key_name)
        if key is not None and key.render(key.default) is not None:
            entries.append((key_name, key.render(key.default), ConfigSource.DEFAULT_CONFIG))
    while entries and entries[0][0] != name:
        entries.pop(0)
    return entries


def describe_topic(services: BrokerServices, overrides: Mapping[str, str]) -> list[tuple[Entry, list[Entry]]]:
    """Every topic-level key of a topic with these overrides, sorted by key: (key, value, source) and its
    synonyms (the override, then the broker key's: ``broker_synonyms``)."""
    dynamic = services.dynamic_config
    rows: list[tuple[Entry, list[Entry]]] = []
    for key, value in sorted(effective_config(services, overrides).items()):
        broker_key = BROKER_KEY_FOR_TOPIC_KEY.get(key)
        synonyms = broker_synonyms(services, broker_key, dynamic.own, dynamic.default) if broker_key else []
        if key in overrides:
            synonyms.insert(0, (key, overrides[key], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        rows.append(((key, value, source), synonyms))
    return rows


def describe_broker(
    services: BrokerServices, own: Mapping[str, str], default: Mapping[str, str], *, per_broker: bool
) -> list[tuple[Entry, list[Entry]]]:
    """A broker's keys with the value that applies, its source and synonyms (``broker_synonyms``): every key for
    one broker (``per_broker``), or the cluster default's dynamic keys alone, with only their dynamic default
    synonyms, as Kafka describes the default entity."""
    rows: list[tuple[Entry, list[Entry]]] = []
    names = [key.name for key in BROKER_KEYS] if per_broker else []
    names += sorted((own.keys() | default.keys()) - KEYS_BY_NAME.keys()) if per_broker else sorted(default)
    for name in names:
        synonyms = broker_synonyms(services, name, own if per_broker else {}, default)
        if not per_broker:
            synonyms = [entry for entry in synonyms if entry[2] is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
        key = KEYS_BY_NAME.get(name)
        unset: Entry = (
            name,
            key.render(services.config.get(name)) if key else None,
            ConfigSource.DEFAULT_CONFIG,
        )
        rows.append((synonyms[0] if synonyms else unset, synonyms))
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
