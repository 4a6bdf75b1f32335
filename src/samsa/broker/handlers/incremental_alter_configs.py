"""IncrementalAlterConfigs (44): SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) on a topic's overrides; SET and
DELETE of a broker's dynamic configs (the replication throttle rates; cluster mode)."""

from __future__ import annotations

from samsa.cluster.replication_quota import DEFAULT_BROKER, DYNAMIC_BROKER_CONFIGS
from samsa.protocol import ErrorCode
from samsa.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

from ..context import RequestContext
from ..topic_configs import ResourceType, effective_config, replace_topic_overrides, topic_overrides

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LIST_KEYS = frozenset(
    {"cleanup.policy", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)


async def handle(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    responses = []
    for resource in request.resources:
        code, message = await _alter(
            ctx, resource.resource_type, resource.resource_name, resource.configs, request.validate_only
        )
        responses.append(
            AlterConfigsResourceResponse(code, message, resource.resource_type, resource.resource_name)
        )
    return IncrementalAlterConfigsResponse(responses=responses)


async def _alter(
    ctx: RequestContext, resource_type: int, topic: str, configs: list[AlterableConfig], validate_only: bool
) -> tuple[ErrorCode, str | None]:
    if resource_type == ResourceType.BROKER:
        return await _alter_broker(ctx, topic, configs, validate_only)
    if resource_type != ResourceType.TOPIC:
        return ErrorCode.INVALID_REQUEST, "only topic and broker configurations can be altered on this broker"
    overrides = await topic_overrides(ctx.services, topic)
    if overrides is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist."
    effective = effective_config(ctx.services, overrides)
    for config in configs:
        if config.config_operation == SET:
            if config.value is None:
                return ErrorCode.INVALID_CONFIG, f"a null value is not allowed for {config.name} with SET"
            overrides[config.name] = config.value
        elif config.config_operation == DELETE:
            overrides.pop(config.name, None)
        elif config.config_operation in (APPEND, SUBTRACT):
            if config.name not in LIST_KEYS:
                return ErrorCode.INVALID_CONFIG, f"{config.name} is not a list configuration"
            current = [v for v in overrides.get(config.name, effective.get(config.name, "")).split(",") if v]
            items = [v for v in (config.value or "").split(",") if v]
            if config.config_operation == APPEND:
                current += [v for v in items if v not in current]
            else:
                current = [v for v in current if v not in items]
            overrides[config.name] = ",".join(current)
        else:
            return ErrorCode.INVALID_REQUEST, f"unknown config operation {config.config_operation}"
    return await replace_topic_overrides(ctx.services, topic, overrides, validate_only=validate_only)


async def _alter_broker(
    ctx: RequestContext, broker: str, configs: list[AlterableConfig], validate_only: bool
) -> tuple[ErrorCode, str | None]:
    """SET or DELETE of a broker's dynamic configs (the replication throttle rates), stored in ZooKeeper for the
    broker named (an id, or empty for every broker)."""
    zk_support = ctx.services.zk_support
    if zk_support is None:
        return ErrorCode.INVALID_REQUEST, "dynamic broker configurations need a cluster (zookeeper.connect)"
    if broker and not broker.isdigit():
        return ErrorCode.INVALID_REQUEST, f"{broker!r} is not a broker id"
    entity = broker or DEFAULT_BROKER
    config = await zk_support.broker_config(entity)
    for change in configs:
        if change.name not in DYNAMIC_BROKER_CONFIGS:
            return ErrorCode.INVALID_REQUEST, f"{change.name} cannot be altered while the broker runs"
        if change.config_operation == SET:
            if change.value is None or not change.value.lstrip("-").isdigit():
                return ErrorCode.INVALID_CONFIG, f"{change.name} must be a number of bytes per second"
            config[change.name] = change.value
        elif change.config_operation == DELETE:
            config.pop(change.name, None)
        else:
            return ErrorCode.INVALID_REQUEST, f"{change.name} is not a list configuration"
    if not validate_only:
        await zk_support.set_broker_config(entity, config)
    return ErrorCode.NONE, None
