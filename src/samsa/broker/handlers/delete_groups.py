"""DeleteGroups (42): remove empty groups and their committed offsets (tombstones in __consumer_offsets).

A group with members answers NON_EMPTY_GROUP; an unknown one GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from samsa.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    results = ctx.services.group_coordinator.delete_groups(request.groups_names)
    return DeleteGroupsResponse(
        results=[DeletableGroupResult(group_id=g, error_code=results[g]) for g in request.groups_names]
    )
