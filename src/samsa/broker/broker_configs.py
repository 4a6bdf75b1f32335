"""Where a broker's dynamic configs and the client quotas are kept, for the handlers that describe and alter them
and the broker's start: ZooKeeper's ``/config/brokers/<id|<default>>``, ``/config/users/...`` and
``/config/clients/...`` in cluster mode (Kafka's znodes, names sanitized as Kafka's ``Sanitizer`` does, URL
encoding), the log directories on a single broker (``dynamic_config`` and ``quotas`` have the rules).
Event-loop thread only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from .dynamic_config import DEFAULT_BROKER
from .quotas import CLIENT_ID, DEFAULT_NAME, USER, Entity, quotas_of

if TYPE_CHECKING:
    from .services import BrokerServices

__all__ = [
    "entity_path",
    "load_dynamic_config",
    "load_quotas",
    "store_broker_config",
    "store_quota",
    "stored_broker_config",
    "stored_quotas",
]


async def stored_broker_config(services: BrokerServices, entity: str) -> dict[str, str]:
    """The dynamic configs kept for ``entity`` (a broker id or ``<default>``): ZooKeeper's in cluster mode, the
    log directories' on a single broker."""
    if services.zk_support is not None:
        return await services.zk_support.broker_config(entity)
    return services.log_manager.dynamic_broker_config(_local_entity(services, entity))


async def store_broker_config(services: BrokerServices, entity: str, config: dict[str, str]) -> None:
    """Keep ``config`` as ``entity``'s dynamic configs and apply it: a cluster's brokers apply it on the change
    notification; a single broker applies it here."""
    if services.zk_support is not None:
        await services.zk_support.set_broker_config(entity, config)
        return
    manager = services.log_manager
    manager.set_dynamic_broker_config(_local_entity(services, entity), config)
    await load_dynamic_config(services)


async def load_dynamic_config(services: BrokerServices) -> None:
    """A single broker takes its stored dynamic configs (at start, and after a change)."""
    default = await stored_broker_config(services, DEFAULT_BROKER)
    own = await stored_broker_config(services, str(services.node_id))
    services.dynamic_config.update(default, own, services.log_manager)


def _local_entity(services: BrokerServices, entity: str) -> str:
    return "default" if entity == DEFAULT_BROKER else str(services.node_id)


def entity_path(entity: Entity) -> str:
    """A quota entity's path under ``/config`` (``users/alice/clients/app``), as Kafka names its znodes."""
    names = dict(entity)
    parts = []
    if USER in names:
        parts.append(f"users/{_sanitized(names[USER])}")
    if CLIENT_ID in names:
        parts.append(f"clients/{_sanitized(names[CLIENT_ID])}")
    return "/".join(parts)


async def stored_quotas(services: BrokerServices) -> dict[Entity, dict[str, float]]:
    """Every client quota as kept: ZooKeeper's in cluster mode, the log directories' on a single broker."""
    if services.zk_support is not None:
        raw = await services.zk_support.quota_configs()
    else:
        raw = services.log_manager.client_quotas()
    return quotas_of(raw)


async def store_quota(services: BrokerServices, entity: Entity, values: Mapping[str, float]) -> None:
    """Keep ``values`` as ``entity``'s quotas (none: it has none) and apply them: a cluster's brokers apply them
    on the change notification; a single broker applies them here."""
    config = {key: _plain(value) for key, value in values.items()}
    if services.zk_support is not None:
        await services.zk_support.set_entity_config(entity_path(entity), config)
        return
    raw = services.log_manager.client_quotas()
    raw[entity_path(entity)] = config
    services.log_manager.set_client_quotas(raw)
    await load_quotas(services)


async def load_quotas(services: BrokerServices) -> None:
    """The broker takes the client quotas as kept (at start, and after a change)."""
    services.quotas.replace(await stored_quotas(services))


def _sanitized(name: str | None) -> str:
    return DEFAULT_NAME if name is None else quote(name, safe="")


def _plain(value: float) -> str:
    """A quota as Kafka writes it in a znode: a whole number without its fraction."""
    return str(int(value)) if value == int(value) else repr(value)
