"""AlterPartitionReassignments (45): start, replace or cancel moves of partitions' replicas (KIP-455).

Served by the controller (:mod:`samsa.cluster.reassignment`); any other broker, and a single broker without
ZooKeeper, answers NOT_CONTROLLER. Alter on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED). The answer means
the moves have started, not that they are done.
"""

from __future__ import annotations

from samsa.cluster.zk_client import ControllerMovedError
from samsa.protocol import ErrorCode
from samsa.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
)
from samsa.security.acl import AclOperation

from ..context import RequestContext


async def handle(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return AlterPartitionReassignmentsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Authorization failed."
        )
    controller = ctx.active_controller
    if controller is None:
        return AlterPartitionReassignmentsResponse(
            error_code=ErrorCode.NOT_CONTROLLER, error_message="This broker is not the controller."
        )
    reassignments = controller.reassignments
    try:
        return await controller.run_event(
            "alter_partition_reassignments", lambda: reassignments.alter(request)
        )
    except ControllerMovedError:  # fenced off midway: the client asks the next controller
        return AlterPartitionReassignmentsResponse(
            error_code=ErrorCode.NOT_CONTROLLER, error_message="This broker is no longer the controller."
        )
