"""LeaveGroup (13): members leave at once instead of waiting out their session; v3+ names several members,
by member id and/or ``group.instance.id``, and answers each."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberResponse
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    coordinator = ctx.services.group_coordinator
    status = coordinator.group_status(request.group_id)
    if status is not ErrorCode.NONE:
        return LeaveGroupResponse(error_code=status)
    if ctx.api_version < 3:
        error, errors = coordinator.leave_group(request.group_id, [(request.member_id, None)])
        return LeaveGroupResponse(error_code=error if error is not ErrorCode.NONE else errors[0])
    leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    error, errors = coordinator.leave_group(request.group_id, leaving)
    if error is not ErrorCode.NONE:
        return LeaveGroupResponse(error_code=error)
    return LeaveGroupResponse(
        error_code=ErrorCode.NONE,
        members=[
            MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=member_error)
            for (member_id, instance_id), member_error in zip(leaving, errors, strict=True)
        ],
    )
