"""DescribeGroups (15): state, protocol and members of groups; a Stable group shows each member's subscription
metadata and assignment, other states show members only. An unknown group is described as Dead (no error),
as Kafka's classic coordinator does; a group that may be described but is loading or not this broker's answers its
status (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR) with no state, as Kafka's ``handleDescribeGroup`` does."""

from __future__ import annotations

import dataclasses

from samsa.coordinator import Group, GroupState
from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(
        groups=[
            _with_operations(ctx, request, _described(ctx, g))
            if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g)
            else DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=g)
            for g in request.groups
        ]
    )


def _described(ctx: RequestContext, group_id: str) -> DescribedGroup:
    coordinator = ctx.services.group_coordinator
    status = coordinator.group_status(group_id)
    if status is not ErrorCode.NONE:
        return DescribedGroup(error_code=status, group_id=group_id)
    return _describe(group_id, coordinator.describe_group(group_id))


def _with_operations(
    ctx: RequestContext, request: DescribeGroupsRequest, group: DescribedGroup
) -> DescribedGroup:
    """The group's authorized operations, when the request (v3+) asks for them and the group was described."""
    if not request.include_authorized_operations or group.error_code != ErrorCode.NONE:
        return group
    operations = ctx.authorized_operations(ResourceType.GROUP, group.group_id)
    return dataclasses.replace(group, authorized_operations=operations)


def _describe(group_id: str, group: Group | None) -> DescribedGroup:
    if not group_id:
        return DescribedGroup(error_code=ErrorCode.INVALID_GROUP_ID, group_id=group_id)
    if group is None:
        return DescribedGroup(error_code=ErrorCode.NONE, group_id=group_id, group_state=GroupState.DEAD.value)
    stable = group.state is GroupState.STABLE
    members = [
        DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(group.protocol_name) if stable else b"",
            member_assignment=m.assignment if stable else b"",
        )
        for m in group.members.values()
    ]
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=members,
    )
