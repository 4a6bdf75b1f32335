"""DescribeClientQuotas (48): the client quotas whose entities match the request's filter
(``samsa.broker.quotas.describe``), as kafka-configs --entity-type users|clients --describe asks for them;
DescribeConfigs on the cluster is needed."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    EntityData,
    EntryData,
    ValueData,
)
from samsa.security.acl import AclOperation

from ..broker_configs import stored_quotas
from ..context import RequestContext
from ..quotas import ENTITY_TYPES, describe

MATCH_TYPES = (0, 1, 2)  # exact name, the default, any name


async def handle(ctx: RequestContext, request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE_CONFIGS):
        return DescribeClientQuotasResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message="Authorization failed.",
            entries=None,
        )
    for component in request.components:
        if component.entity_type not in ENTITY_TYPES:
            return _error(f"Custom entity type '{component.entity_type}' not supported")
        if component.match_type not in MATCH_TYPES:
            return _error(f"Unknown match type {component.match_type}")
    quotas = await stored_quotas(ctx.services)
    components = [(c.entity_type, c.match_type, c.match) for c in request.components]
    entries = [
        EntryData(
            entity=[EntityData(kind, name) for kind, name in entity],
            values=[ValueData(key, value) for key, value in sorted(values.items())],
        )
        for entity, values in describe(quotas, components, request.strict)
    ]
    return DescribeClientQuotasResponse(error_code=ErrorCode.NONE, error_message=None, entries=entries)


def _error(message: str) -> DescribeClientQuotasResponse:
    return DescribeClientQuotasResponse(
        error_code=ErrorCode.INVALID_REQUEST, error_message=message, entries=None
    )
