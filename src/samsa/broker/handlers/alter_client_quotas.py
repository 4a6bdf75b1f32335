"""AlterClientQuotas (49): set or remove client quotas (``samsa.broker.quotas``), each entry checked as Kafka checks
it (entity types user and client-id, at most one of each; a quota key of those; byte and mutation rates positive
whole numbers, the request percentage positive), kept and applied at once; an entry that fails changes nothing.
AlterConfigs on the cluster is needed, else every entry answers CLUSTER_AUTHORIZATION_FAILED."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasRequestEntryData,
    AlterClientQuotasResponse,
    AlterClientQuotasResponseEntityData,
    AlterClientQuotasResponseEntryData,
)
from samsa.security.acl import AclOperation

from ..broker_configs import store_quota, stored_quotas
from ..context import RequestContext
from ..quotas import ENTITY_TYPES, QUOTA_KEYS, REQUEST_PERCENTAGE, Entity


async def handle(ctx: RequestContext, request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    results = []
    allowed = ctx.authorize_cluster(AclOperation.ALTER_CONFIGS)
    for entry in request.entries:
        code, message = (
            await _alter(ctx, entry, request.validate_only)
            if allowed
            else (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Authorization failed.")
        )
        results.append(
            AlterClientQuotasResponseEntryData(
                error_code=code,
                error_message=message,
                entity=[
                    AlterClientQuotasResponseEntityData(e.entity_type, e.entity_name) for e in entry.entity
                ],
            )
        )
    return AlterClientQuotasResponse(entries=results)


async def _alter(
    ctx: RequestContext, entry: AlterClientQuotasRequestEntryData, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    kinds = [e.entity_type for e in entry.entity]
    for kind in kinds:
        if kind not in ENTITY_TYPES:
            message = (
                "ip quotas are not supported"
                if kind == "ip"
                else f"Unhandled client quota entity type: {kind}"
            )
            return ErrorCode.INVALID_REQUEST, message
    if not kinds or len(set(kinds)) != len(kinds):
        return ErrorCode.INVALID_REQUEST, f"Invalid quota entity combination: {', '.join(kinds) or 'none'}"
    entity: Entity = tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity))
    quotas = await stored_quotas(ctx.services)
    values = dict(quotas.get(entity, {}))
    for op in entry.ops:
        if op.key not in QUOTA_KEYS:
            return ErrorCode.INVALID_REQUEST, f"Invalid configuration key {op.key}"
        if op.remove:
            values.pop(op.key, None)
            continue
        if op.value <= 0:
            return ErrorCode.INVALID_REQUEST, f"Quota {op.key} must be positive, not {op.value:g}"
        if op.key != REQUEST_PERCENTAGE and op.value != int(op.value):
            return ErrorCode.INVALID_REQUEST, f"{op.key} cannot be a fractional value."
        values[op.key] = op.value
    if not validate_only:
        await store_quota(ctx.services, entity, values)
    return ErrorCode.NONE, None
