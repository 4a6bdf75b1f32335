"""CreateAcls (30): add ACL bindings. Needs Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED); without an
authorizer every creation answers SECURITY_DISABLED, as Kafka does; an invalid binding answers INVALID_REQUEST
with the reason, the others are created."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.create_acls import AclCreationResult, CreateAclsRequest, CreateAclsResponse
from samsa.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from samsa.security.authorizer import AclStoreError

from ..context import RequestContext
from ._acl_codes import enum_or_unknown


async def handle(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return _all(request, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return _all(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    bindings = [
        AclBinding(
            ResourcePattern(
                enum_or_unknown(ResourceType, c.resource_type),
                c.resource_name,
                enum_or_unknown(PatternType, c.resource_pattern_type),
            ),
            AccessControlEntry(
                c.principal,
                c.host,
                enum_or_unknown(AclOperation, c.operation),
                enum_or_unknown(AclPermissionType, c.permission_type),
            ),
        )
        for c in request.creations
    ]
    try:
        reasons = authorizer.create(bindings)
    except AclStoreError as exc:
        return _all(request, ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
    return CreateAclsResponse(
        results=[
            AclCreationResult(error_code=ErrorCode.NONE)
            if reason is None
            else AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=reason)
            for reason in reasons
        ]
    )


def _all(request: CreateAclsRequest, error: ErrorCode, message: str | None) -> CreateAclsResponse:
    return CreateAclsResponse(
        results=[AclCreationResult(error_code=error, error_message=message) for _ in request.creations]
    )
