"""IncrementalAlterConfigs (44): SET (0), DELETE (1), APPEND (2) and SUBTRACT (3) on a topic's overrides; SET and
DELETE of a broker's dynamic configs (the topic defaults and the replication throttle rates: ``dynamic_config``).
AlterConfigs on the topic, or on the cluster for a broker, is needed (``_config_acls``)."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from samsa.security.acl import AclOperation

from ..broker_configs import store_broker_config, stored_broker_config
from ..context import RequestContext
from ..dynamic_config import DEFAULT_BROKER
from ..topic_configs import ResourceType, effective_config, replace_topic_overrides, topic_overrides
from ._config_acls import config_access

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LIST_KEYS = frozenset(
    {"cleanup.policy", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)


async def handle(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    responses = []
    for resource in request.resources:
        code: ErrorCode
        message: str | None
        denied = config_access(
            ctx, AclOperation.ALTER_CONFIGS, resource.resource_type, resource.resource_name
        )
        if denied is not ErrorCode.NONE:
            code, message = denied, "Authorization failed."
        else:
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
    """SET or DELETE of a broker's dynamic configs (``dynamic_config``: the topic defaults and the replication
    throttle rates) for the broker named (an id, or empty for every broker), checked as a whole, then kept and
    applied."""
    services = ctx.services
    if broker and not broker.isdigit():
        return ErrorCode.INVALID_REQUEST, f"{broker!r} is not a broker id"
    if broker and services.zk_support is None and int(broker) != services.node_id:
        return ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {services.node_id}"
    entity = broker or DEFAULT_BROKER
    config = await stored_broker_config(services, entity)
    for change in configs:
        if change.config_operation == SET:
            if change.value is None:
                return ErrorCode.INVALID_CONFIG, f"a null value is not allowed for {change.name} with SET"
            config[change.name] = change.value
        elif change.config_operation == DELETE:
            config.pop(change.name, None)
        elif change.config_operation in (APPEND, SUBTRACT):
            return ErrorCode.INVALID_REQUEST, f"{change.name} is not a list configuration"
        else:
            return ErrorCode.INVALID_REQUEST, f"unknown config operation {change.config_operation}"
    problem = services.dynamic_config.validate(entity, config)
    if problem is not None:
        return problem
    if not validate_only:
        await store_broker_config(services, entity, config)
    return ErrorCode.NONE, None
