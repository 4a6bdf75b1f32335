"""Heartbeat (12): a member is alive; the answer tells it whether a rebalance is under way.

While the group's ``__consumer_offsets`` partition loads, the answer is NONE, as Kafka's coordinator gives it ("the
group is still loading, so respond just blindly"): the member heartbeats on, and the loaded group knows it."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return HeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    status = ctx.services.group_coordinator.group_status(request.group_id)
    if status is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        return HeartbeatResponse(error_code=ErrorCode.NONE)
    if status is not ErrorCode.NONE:
        return HeartbeatResponse(error_code=status)
    error = ctx.services.group_coordinator.heartbeat(
        request.group_id, request.member_id, request.generation_id, request.group_instance_id
    )
    return HeartbeatResponse(error_code=error)
