"""DescribeConfigs (32): topic and broker configuration with defaults and sources.

Synonyms, when asked for, list where a value may come from by precedence, as Kafka lists them: a topic key's
override (DYNAMIC_TOPIC_CONFIG), then the broker key it defaults to, as this broker's dynamic config
(DYNAMIC_BROKER_CONFIG) and the cluster default's (DYNAMIC_DEFAULT_BROKER_CONFIG) set it (``dynamic_config``), as
``server.properties`` set it (STATIC_BROKER_CONFIG) and as Kafka's default (DEFAULT_CONFIG). The default broker
entity (an empty name) reports its dynamic configs alone. A topic needs DescribeConfigs on it, a broker
DescribeConfigs on the cluster (``_config_acls``)."""

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
from samsa.security.acl import AclOperation

from ..broker_configs import stored_broker_config
from ..config import KEYS_BY_NAME, ConfigType
from ..context import RequestContext
from ..dynamic_config import DEFAULT_BROKER
from ..topic_configs import (
    BROKER_KEY_FOR_TOPIC_KEY,
    CONFIG_TYPES,
    ConfigSource,
    Entry,
    ResourceType,
    describe_broker,
    describe_topic,
    topic_overrides,
)
from ._config_acls import config_access


async def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for resource in request.resources:
        denied = config_access(
            ctx, AclOperation.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name
        )
        if denied is not ErrorCode.NONE:
            message = "Authorization failed."
            results.append(_error(resource.resource_type, resource.resource_name, denied, message))
            continue
        rows = await _rows(ctx, resource)
        if isinstance(rows, DescribeConfigsResult):
            results.append(rows)
            continue
        wanted = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        configs = [
            _config(resource.resource_type, entry, synonyms if request.include_synonyms else [])
            for entry, synonyms in rows
            if wanted is None or entry[0] in wanted
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


Rows = list[tuple[Entry, list[Entry]]]


async def _rows(ctx: RequestContext, resource: DescribeConfigsResource) -> Rows | DescribeConfigsResult:
    """Every config of the topic or broker ``resource`` names, with its synonyms; the error result when it
    cannot."""
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
        default = await stored_broker_config(ctx.services, DEFAULT_BROKER)
        own = await stored_broker_config(ctx.services, name) if name else {}
        return describe_broker(ctx.services, own, default, per_broker=bool(name))
    return _error(kind, name, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {kind}")


def _config(resource_type: int, entry: Entry, synonyms: list[Entry]) -> DescribeConfigsResourceResult:
    name, value, source = entry
    broker_key = KEYS_BY_NAME.get(BROKER_KEY_FOR_TOPIC_KEY.get(name, name))
    return DescribeConfigsResourceResult(
        name=name,
        value=value,
        read_only=resource_type == ResourceType.BROKER,
        is_default=source is ConfigSource.DEFAULT_CONFIG,
        config_source=int(source),
        is_sensitive=broker_key is not None and broker_key.type is ConfigType.PASSWORD,
        synonyms=[DescribeConfigsSynonym(n, v, int(src)) for n, v, src in synonyms],
        config_type=CONFIG_TYPES.get(broker_key.type, 0) if broker_key else 0,
    )


def _error(resource_type: int, name: str, code: ErrorCode, message: str) -> DescribeConfigsResult:
    return DescribeConfigsResult(
        error_code=code, error_message=message, resource_type=resource_type, resource_name=name
    )
