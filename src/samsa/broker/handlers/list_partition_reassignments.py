"""ListPartitionReassignments (46): the partitions being moved, with their replicas, adding and removing replicas.

Served by the controller (:mod:`samsa.cluster.reassignment`); any other broker of a cluster answers
NOT_CONTROLLER. A single broker without ZooKeeper is its own controller and moves no partition: an empty list, as
a single Kafka broker answers (Kafka's admin client sends this request in `kafka-topics --describe`, and retries
NOT_CONTROLLER against the controller id of Metadata, this broker, until its timeout). Describe on the cluster is
needed.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from samsa.security.acl import AclOperation

from ..context import RequestContext


async def handle(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return ListPartitionReassignmentsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Authorization failed."
        )
    if ctx.services.zk_support is None:
        return ListPartitionReassignmentsResponse(error_code=ErrorCode.NONE, topics=[])
    controller = ctx.active_controller
    if controller is None:
        return ListPartitionReassignmentsResponse(
            error_code=ErrorCode.NOT_CONTROLLER, error_message="This broker is not the controller."
        )
    reassignments = controller.reassignments

    async def listed() -> ListPartitionReassignmentsResponse:
        return reassignments.listed(request)

    return await controller.run_event("list_partition_reassignments", listed)
