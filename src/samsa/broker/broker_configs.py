"""Where a broker's dynamic configs, the client quotas and the users' SCRAM credentials are kept, for the handlers
that describe and alter them and the broker's start: ZooKeeper's ``/config/brokers/<id|<default>>``,
``/config/users/...`` and ``/config/clients/...`` in cluster mode (Kafka's znodes, names sanitized as Kafka's
``Sanitizer`` does, URL encoding), the log directories on a single broker (``dynamic_config`` and ``quotas`` have
the rules). A user's quotas and SCRAM credentials share its entity config (``/config/users/<user>``:
``{"producer_byte_rate":"1024","SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}``, as
Kafka keeps them); changing one keeps the other. Event-loop thread only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from samsa.security.scram import ScramCredential, credentials_of

from .dynamic_config import DEFAULT_BROKER
from .quotas import CLIENT_ID, DEFAULT_NAME, QUOTA_KEYS, USER, Entity, quotas_of

if TYPE_CHECKING:
    from .services import BrokerServices

__all__ = [
    "entity_path",
    "load_dynamic_config",
    "load_quotas",
    "store_broker_config",
    "store_quota",
    "store_scram_credentials",
    "stored_broker_config",
    "stored_quotas",
    "stored_scram_credentials",
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


async def _entity_configs(services: BrokerServices) -> dict[str, dict[str, str]]:
    """Every user and client entity's configs as kept, by path under ``/config``: ZooKeeper's in cluster mode,
    the log directories' on a single broker."""
    if services.zk_support is not None:
        return await services.zk_support.quota_configs()
    return services.log_manager.client_quotas()


async def _store_entity_config(services: BrokerServices, path: str, config: dict[str, str]) -> None:
    """Keep ``config`` as the entity's whole config; a cluster's brokers apply it on the change notification, a
    single broker here."""
    if services.zk_support is not None:
        await services.zk_support.set_entity_config(path, config)
        return
    raw = services.log_manager.client_quotas()
    raw[path] = config
    services.log_manager.set_client_quotas(raw)
    await load_quotas(services)


async def stored_quotas(services: BrokerServices) -> dict[Entity, dict[str, float]]:
    """Every client quota as kept."""
    return quotas_of(await _entity_configs(services))


async def store_quota(services: BrokerServices, entity: Entity, values: Mapping[str, float]) -> None:
    """Keep ``values`` as ``entity``'s quotas (none: it has none), its other configs (SCRAM credentials) kept,
    and apply them."""
    path = entity_path(entity)
    kept = (await _entity_configs(services)).get(path, {})
    config = {key: value for key, value in kept.items() if key not in QUOTA_KEYS}
    config.update({key: _plain(value) for key, value in values.items()})
    await _store_entity_config(services, path, config)


async def stored_scram_credentials(services: BrokerServices) -> dict[tuple[str, str], ScramCredential]:
    """Every user's SCRAM credentials as kept: (user, mechanism name) -> credential."""
    return credentials_of(await _entity_configs(services))


async def store_scram_credentials(
    services: BrokerServices, user: str, changes: Mapping[str, ScramCredential | None]
) -> None:
    """Set (a credential) or delete (None) ``user``'s credential per mechanism name, the user's quotas kept, and
    apply them (every broker, on the notification in a cluster)."""
    path = entity_path(((USER, user),))
    config = dict((await _entity_configs(services)).get(path, {}))
    for mechanism, credential in changes.items():
        if credential is None:
            config.pop(mechanism, None)
        else:
            config[mechanism] = credential.to_config()
    await _store_entity_config(services, path, config)


async def load_quotas(services: BrokerServices) -> None:
    """The broker takes the client quotas and SCRAM credentials as kept (at start, and after a change)."""
    raw = await _entity_configs(services)
    services.quotas.replace(quotas_of(raw))
    if services.scram_credentials is not None:
        services.scram_credentials.replace(credentials_of(raw))


def _sanitized(name: str | None) -> str:
    return DEFAULT_NAME if name is None else quote(name, safe="")


def _plain(value: float) -> str:
    """A quota as Kafka writes it in a znode: a whole number without its fraction."""
    return str(int(value)) if value == int(value) else repr(value)
