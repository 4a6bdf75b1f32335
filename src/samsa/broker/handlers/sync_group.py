"""SyncGroup (14): the leader hands out the assignment; every member waits for its own share."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not ctx.services.group_coordinator.coordinates(request.group_id):
        return SyncGroupResponse(error_code=ErrorCode.NOT_COORDINATOR)
    result = await ctx.services.group_coordinator.sync_group(
        request.group_id,
        request.member_id,
        request.generation_id,
        request.group_instance_id,
        {a.member_id: bytes(a.assignment) for a in request.assignments},
        request.protocol_type,
        request.protocol_name,
    )
    return SyncGroupResponse(
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
