"""ListGroups (16): every group this broker coordinates; v4+ filters by state, v5+ by type (only "classic").

While a ``__consumer_offsets`` partition loads, the groups loaded so far are listed with COORDINATOR_LOAD_IN_PROGRESS,
as Kafka's ``handleListGroups`` answers; a coordinator not started (or shut down) lists none, with
COORDINATOR_NOT_AVAILABLE."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from samsa.security.acl import AclOperation, ResourceType

from ..context import CLUSTER_NAME, RequestContext

GROUP_TYPE = "classic"


async def handle(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    states = request.states_filter if ctx.api_version >= 4 else []
    types = {t.lower() for t in request.types_filter} if ctx.api_version >= 5 else set()
    if types and GROUP_TYPE not in types:
        return ListGroupsResponse(error_code=ErrorCode.NONE)
    coordinator = ctx.services.group_coordinator
    status = coordinator.list_status()
    if status is ErrorCode.COORDINATOR_NOT_AVAILABLE:
        return ListGroupsResponse(error_code=status)
    groups = sorted(coordinator.list_groups(states), key=lambda g: g.group_id)
    if not ctx.may(
        AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME
    ):  # else the groups it may describe
        groups = [g for g in groups if ctx.may(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
    return ListGroupsResponse(
        error_code=status,
        groups=[
            ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type or "",
                group_state=g.state.value,
                group_type=GROUP_TYPE,
            )
            for g in groups
        ],
    )
