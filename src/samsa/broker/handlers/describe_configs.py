"""DescribeConfigs (32): topic and broker configuration with defaults and sources."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)

from ..config import KEYS_BY_NAME
from ..context import RequestContext
from ..topic_configs import (
    BROKER_KEY_FOR_TOPIC_KEY,
    CONFIG_TYPES,
    ConfigSource,
    ResourceType,
    describe_broker,
    describe_topic,
    topic_overrides,
)


async def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for resource in request.resources:
        rows: list[tuple[str, str | None, ConfigSource]]
        wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        if resource.resource_type == ResourceType.TOPIC:
            overrides = await topic_overrides(ctx.broker, resource.resource_name)
            if overrides is None:
                results.append(
                    _error(
                        resource.resource_type,
                        resource.resource_name,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"Topic {resource.resource_name} does not exist.",
                    )
                )
                continue
            rows = describe_topic(ctx.broker, overrides)
        elif resource.resource_type == ResourceType.BROKER:
            if resource.resource_name not in ("", str(ctx.broker.node_id)):
                results.append(
                    _error(
                        resource.resource_type,
                        resource.resource_name,
                        ErrorCode.INVALID_REQUEST,
                        f"Unexpected broker id, expected {ctx.broker.node_id}",
                    )
                )
                continue
            rows = describe_broker(ctx.broker)
        else:
            results.append(
                _error(
                    resource.resource_type,
                    resource.resource_name,
                    ErrorCode.INVALID_REQUEST,
                    f"Unsupported resource type {resource.resource_type}",
                )
            )
            continue
        configs = []
        for name, value, source in rows:
            if wanted is not None and name not in wanted:
                continue
            broker_key = KEYS_BY_NAME.get(BROKER_KEY_FOR_TOPIC_KEY.get(name, name))
            synonyms = []
            if request.include_synonyms and source is ConfigSource.DYNAMIC_TOPIC_CONFIG:
                synonyms.append(DescribeConfigsSynonym(name, value, int(source)))
            configs.append(
                DescribeConfigsResourceResult(
                    name=name,
                    value=value,
                    read_only=resource.resource_type == ResourceType.BROKER,
                    is_default=source is ConfigSource.DEFAULT_CONFIG,
                    config_source=int(source),
                    is_sensitive=False,
                    synonyms=synonyms,
                    config_type=CONFIG_TYPES.get(broker_key.type, 0) if broker_key else 0,
                )
            )
        results.append(
            DescribeConfigsResult(
                error_code=ErrorCode.NONE,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return DescribeConfigsResponse(results=results)


def _error(resource_type: int, name: str, code: ErrorCode, message: str) -> DescribeConfigsResult:
    return DescribeConfigsResult(
        error_code=code, error_message=message, resource_type=resource_type, resource_name=name
    )
