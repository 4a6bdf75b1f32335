"""DeleteGroups (42): remove empty groups and their committed offsets (tombstones in __consumer_offsets).

A group with members answers NON_EMPTY_GROUP; an unknown one GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    allowed = [g for g in request.groups_names if ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, g)]
    results = dict.fromkeys(request.groups_names, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    results.update(ctx.services.group_coordinator.delete_groups(allowed))
    return DeleteGroupsResponse(
        results=[DeletableGroupResult(group_id=g, error_code=results[g]) for g in request.groups_names]
    )
