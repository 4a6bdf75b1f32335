"""DescribeAcls (29): the bindings a filter matches, grouped per resource pattern. Needs Describe on the cluster;
without an authorizer SECURITY_DISABLED; a filter with an UNKNOWN element INVALID_REQUEST."""

from __future__ import annotations

from itertools import groupby

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_acls import (
    AclDescription,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from samsa.security.acl import AclOperation

from ..context import RequestContext
from ._acl_codes import acl_filter


async def handle(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    authorizer = ctx.services.authorizer
    if authorizer is None:
        return DescribeAclsResponse(
            error_code=ErrorCode.SECURITY_DISABLED, error_message="No Authorizer is configured on the broker"
        )
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None)
    r = request
    flt = acl_filter(
        r.resource_type_filter,
        r.resource_name_filter,
        r.pattern_type_filter,
        r.principal_filter,
        r.host_filter,
        r.operation,
        r.permission_type,
    )
    reason = flt.invalid_reason()
    if reason is not None:
        return DescribeAclsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=reason)
    resources = [
        DescribeAclsResource(
            resource_type=pattern.resource_type,
            resource_name=pattern.name,
            pattern_type=pattern.pattern_type,
            acls=[
                AclDescription(
                    principal=b.entry.principal,
                    host=b.entry.host,
                    operation=b.entry.operation,
                    permission_type=b.entry.permission,
                )
                for b in bindings
            ],
        )
        for pattern, bindings in groupby(authorizer.describe(flt), key=lambda b: b.pattern)
    ]
    return DescribeAclsResponse(error_code=ErrorCode.NONE, error_message=None, resources=resources)
