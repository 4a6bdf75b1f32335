"""SyncGroup (14): the leader hands out the assignment; every member waits for its own share.

While the group's ``__consumer_offsets`` partition loads, the answer is REBALANCE_IN_PROGRESS, as Kafka's coordinator
gives it: the rebalance's state is lost with the move, and the member rejoins without looking the coordinator up
again (older clients do not expect COORDINATOR_LOAD_IN_PROGRESS here)."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    status = ctx.services.group_coordinator.group_status(request.group_id)
    if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        return SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    if status is not ErrorCode.NONE:
        return SyncGroupResponse(error_code=status)
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
