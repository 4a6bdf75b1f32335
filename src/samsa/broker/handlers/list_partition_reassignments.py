"""ListPartitionReassignments (46): the partitions being moved, with their replicas, adding and removing replicas.

Served by the controller (:mod:`samsa.cluster.reassignment`); any other broker, and a single broker without
ZooKeeper, answers NOT_CONTROLLER.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

from ..context import RequestContext


async def handle(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    controller = ctx.active_controller
    if controller is None:
        return ListPartitionReassignmentsResponse(
            error_code=ErrorCode.NOT_CONTROLLER, error_message="This broker is not the controller."
        )
    reassignments = controller.reassignments

    async def listed() -> ListPartitionReassignmentsResponse:
        return reassignments.listed(request)

    return await controller.run_event("list_partition_reassignments", listed)
