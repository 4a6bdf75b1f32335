"""Where a broker's dynamic configs are kept, for the handlers that describe and alter them and the broker's
start: ZooKeeper's ``/config/brokers/<id|<default>>`` in cluster mode, the log directories on a single broker
(``dynamic_config`` has the rules). Event-loop thread only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .dynamic_config import DEFAULT_BROKER

if TYPE_CHECKING:
    from .services import BrokerServices

__all__ = ["load_dynamic_config", "store_broker_config", "stored_broker_config"]


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
