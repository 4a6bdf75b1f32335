"""DeleteAcls (31): remove the bindings each filter matches, and list them per filter. Needs Alter on the
cluster; without an authorizer SECURITY_DISABLED; a filter with an UNKNOWN element INVALID_REQUEST."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.delete_acls import (
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from samsa.security.acl import AclBindingFilter, AclOperation
from samsa.security.authorizer import AclStoreError

from ..context import RequestContext
from ._acl_codes import acl_filter


async def handle(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return _all(request, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return _all(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    filters: list[AclBindingFilter] = [
        acl_filter(
            f.resource_type_filter,
            f.resource_name_filter,
            f.pattern_type_filter,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )
        for f in request.filters
    ]
    valid = [f for f in filters if f.invalid_reason() is None]
    try:
        removed = iter(authorizer.delete(valid))
    except AclStoreError as exc:
        return _all(request, ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
    results = []
    for f in filters:
        reason = f.invalid_reason()
        if reason is not None:
            results.append(DeleteAclsFilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=reason))
            continue
        results.append(
            DeleteAclsFilterResult(
                error_code=ErrorCode.NONE,
                error_message=None,
                matching_acls=[
                    DeleteAclsMatchingAcl(
                        error_code=ErrorCode.NONE,
                        error_message=None,
                        resource_type=b.pattern.resource_type,
                        resource_name=b.pattern.name,
                        pattern_type=b.pattern.pattern_type,
                        principal=b.entry.principal,
                        host=b.entry.host,
                        operation=b.entry.operation,
                        permission_type=b.entry.permission,
                    )
                    for b in next(removed)
                ],
            )
        )
    return DeleteAclsResponse(filter_results=results)


def _all(request: DeleteAclsRequest, error: ErrorCode, message: str | None) -> DeleteAclsResponse:
    return DeleteAclsResponse(
        filter_results=[
            DeleteAclsFilterResult(error_code=error, error_message=message) for _ in request.filters
        ]
    )
