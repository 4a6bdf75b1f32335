"""Heartbeat (12): a member is alive; the answer tells it whether a rebalance is under way."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return HeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not ctx.services.group_coordinator.coordinates(request.group_id):
        return HeartbeatResponse(error_code=ErrorCode.NOT_COORDINATOR)
    error = ctx.services.group_coordinator.heartbeat(
        request.group_id, request.member_id, request.generation_id, request.group_instance_id
    )
    return HeartbeatResponse(error_code=error)
