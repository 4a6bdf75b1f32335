"""DescribeConfigs (32): topic and broker configuration with defaults and sources.

Synonyms, when asked for, are Kafka's, most specific first: a topic key's own override (DYNAMIC_TOPIC_CONFIG), then
the broker key that sets its default as set in the broker's properties (STATIC_BROKER_CONFIG) and as Kafka's default
when it has one (DEFAULT_CONFIG); for a broker key, the same two. ``kafka-configs --describe`` prints them.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
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
        rows = await _rows(ctx, resource)
        if isinstance(rows, DescribeConfigsResult):
            results.append(rows)
            continue
        wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        configs = [
            _config(ctx, resource.resource_type, name, value, source, request.include_synonyms)
            for name, value, source in rows
            if wanted is None or name in wanted
        ]
        results.append(
            DescribeConfigsResult(
                error_code=ErrorCode.NONE,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return DescribeConfigsResponse(results=results)


Rows = list[tuple[str, str | None, ConfigSource]]


async def _rows(ctx: RequestContext, resource: DescribeConfigsResource) -> Rows | DescribeConfigsResult:
    """Every (name, value, source) of the topic or broker ``resource`` names; the error result when it cannot."""
    kind, name = resource.resource_type, resource.resource_name
    if kind == ResourceType.TOPIC:
        overrides = await topic_overrides(ctx.services, name)
        if overrides is None:
            return _error(kind, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist.")
        return describe_topic(ctx.services, overrides)
    if kind == ResourceType.BROKER:
        if name not in ("", str(ctx.services.node_id)):
            message = f"Unexpected broker id, expected {ctx.services.node_id}"
            return _error(kind, name, ErrorCode.INVALID_REQUEST, message)
        return describe_broker(ctx.services)
    return _error(kind, name, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {kind}")


def _config(
    ctx: RequestContext,
    resource_type: int,
    name: str,
    value: str | None,
    source: ConfigSource,
    include_synonyms: bool,
) -> DescribeConfigsResourceResult:
    broker_key = KEYS_BY_NAME.get(BROKER_KEY_FOR_TOPIC_KEY.get(name, name))
    synonyms = []
    if include_synonyms:
        if source is ConfigSource.DYNAMIC_TOPIC_CONFIG:
            synonyms.append(DescribeConfigsSynonym(name, value, int(source)))
        if broker_key is not None:
            synonyms += _broker_synonyms(ctx, broker_key.name)
    return DescribeConfigsResourceResult(
        name=name,
        value=value,
        read_only=resource_type == ResourceType.BROKER,
        is_default=source is ConfigSource.DEFAULT_CONFIG,
        config_source=int(source),
        is_sensitive=False,
        synonyms=synonyms,
        config_type=CONFIG_TYPES.get(broker_key.type, 0) if broker_key else 0,
    )


def _broker_synonyms(ctx: RequestContext, key_name: str) -> list[DescribeConfigsSynonym]:
    key = KEYS_BY_NAME[key_name]
    synonyms = []
    config = ctx.services.config
    if config.is_explicit(key_name):
        value = key.render(config.get(key_name))
        synonyms.append(DescribeConfigsSynonym(key_name, value, int(ConfigSource.STATIC_BROKER_CONFIG)))
    if key.default is not None:
        default = key.render(key.default)
        synonyms.append(DescribeConfigsSynonym(key_name, default, int(ConfigSource.DEFAULT_CONFIG)))
    return synonyms


def _error(resource_type: int, name: str, code: ErrorCode, message: str) -> DescribeConfigsResult:
    return DescribeConfigsResult(
        error_code=code, error_message=message, resource_type=resource_type, resource_name=name
    )
