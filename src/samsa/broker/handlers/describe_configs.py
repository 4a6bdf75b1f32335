"""DescribeConfigs (32): topic and broker configuration with defaults and sources.

Synonyms, when asked for, list where a value may come from by precedence, as Kafka lists them: a topic key's
override (DYNAMIC_TOPIC_CONFIG), then the broker key it defaults to, as ``server.properties`` set it
(STATIC_BROKER_CONFIG) and as Kafka's default (DEFAULT_CONFIG). A broker's dynamic configs (cluster mode: the
replication throttle rates in ZooKeeper) are reported with their DYNAMIC_BROKER_CONFIG or
DYNAMIC_DEFAULT_BROKER_CONFIG source; the default broker entity (an empty name) reports those alone."""

from __future__ import annotations

from collections.abc import Mapping

from samsa.cluster.replication_quota import DEFAULT_BROKER
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
from ..services import BrokerServices
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
        is_broker = resource.resource_type == ResourceType.BROKER
        defaults = await _dynamic_broker_config(ctx.services, DEFAULT_BROKER) if is_broker else {}
        configs = [
            _config(
                ctx.services,
                resource.resource_type,
                (name, value, source),
                defaults,
                request.include_synonyms,
            )
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


Row = tuple[str, str | None, ConfigSource]
Rows = list[Row]
DYNAMIC_SOURCES = (
    ConfigSource.DYNAMIC_TOPIC_CONFIG,
    ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
)


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
        return await _dynamic_broker_rows(ctx.services, name) + describe_broker(ctx.services)
    return _error(kind, name, ErrorCode.INVALID_REQUEST, f"Unsupported resource type {kind}")


async def _dynamic_broker_rows(services: BrokerServices, name: str) -> Rows:
    """The dynamic configs of broker ``name`` (an id, or "" for the cluster default) that ZooKeeper holds."""
    own = await _dynamic_broker_config(services, name) if name else {}
    default = await _dynamic_broker_config(services, DEFAULT_BROKER)
    rows: Rows = [(k, v, ConfigSource.DYNAMIC_BROKER_CONFIG) for k, v in sorted(own.items())]
    rows += [
        (k, v, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) for k, v in sorted(default.items()) if k not in own
    ]
    return rows


async def _dynamic_broker_config(services: BrokerServices, entity: str) -> dict[str, str]:
    """The dynamic configs ZooKeeper holds for a broker id or ``<default>``; none on a single broker."""
    zk_support = services.zk_support
    return {} if zk_support is None else await zk_support.broker_config(entity)


def _synonyms(
    services: BrokerServices, resource_type: int, row: Row, dynamic_defaults: Mapping[str, str]
) -> list[DescribeConfigsSynonym]:
    """Where the value of the row's key may come from, by precedence, from its source down."""
    name, value, source = row
    synonyms = []
    if source in DYNAMIC_SOURCES:
        synonyms.append(DescribeConfigsSynonym(name, value, int(source)))
    if source is ConfigSource.DYNAMIC_BROKER_CONFIG and name in dynamic_defaults:
        default_source = int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        synonyms.append(DescribeConfigsSynonym(name, dynamic_defaults[name], default_source))
    broker_name = BROKER_KEY_FOR_TOPIC_KEY.get(name, name) if resource_type == ResourceType.TOPIC else name
    broker_key = KEYS_BY_NAME.get(broker_name)
    if broker_key is None:
        return synonyms
    if services.config.is_explicit(broker_name):
        static = broker_key.render(services.config.get(broker_name))
        synonyms.append(DescribeConfigsSynonym(broker_name, static, int(ConfigSource.STATIC_BROKER_CONFIG)))
    default = broker_key.render(broker_key.default)
    if default is not None:
        synonyms.append(DescribeConfigsSynonym(broker_name, default, int(ConfigSource.DEFAULT_CONFIG)))
    return synonyms


def _config(
    services: BrokerServices,
    resource_type: int,
    row: Row,
    dynamic_defaults: Mapping[str, str],
    include_synonyms: bool,
) -> DescribeConfigsResourceResult:
    name, value, source = row
    broker_key = KEYS_BY_NAME.get(BROKER_KEY_FOR_TOPIC_KEY.get(name, name))
    synonyms = _synonyms(services, resource_type, row, dynamic_defaults) if include_synonyms else []
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


def _error(resource_type: int, name: str, code: ErrorCode, message: str) -> DescribeConfigsResult:
    return DescribeConfigsResult(
        error_code=code, error_message=message, resource_type=resource_type, resource_name=name
    )
