"""JoinGroup (11): join or rejoin a classic group; the answer waits until the rebalance completes.

v4+ first answers a new member with MEMBER_ID_REQUIRED and the member id to rejoin with (KIP-394); v5+ carries a
``group.instance.id`` (static membership, KIP-345); v0 has no rebalance timeout (the session timeout stands in).
"""

from __future__ import annotations

from samsa.coordinator import JoinRequest
from samsa.protocol import ErrorCode
from samsa.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return JoinGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    version = ctx.api_version
    status = ctx.services.group_coordinator.group_status(request.group_id)
    if status is not ErrorCode.NONE:
        return JoinGroupResponse(
            error_code=status,
            member_id=request.member_id,
            protocol_name=None if version >= 7 else "",
        )
    join = JoinRequest(
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        client_id=ctx.header.client_id or "",
        client_host="/" + ctx.connection.client_host,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=version >= 4,
    )
    result = await ctx.services.group_coordinator.join_group(request.group_id, join)
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""
    return JoinGroupResponse(
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader,
        skip_assignment=result.skip_assignment and version >= 9,
        member_id=result.member_id,
        members=[
            JoinGroupResponseMember(m.member_id, m.group_instance_id, m.metadata) for m in result.members
        ],
    )
