"""AlterPartition (56): a leader asks the controller to change a partition's ISR (cluster mode).

Served by the controller; any other broker answers NOT_CONTROLLER so the leader retries with the new controller.
Only a principal with ClusterAction on the cluster (a broker) may send it.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from samsa.security.acl import AclOperation

from ..context import RequestContext


async def handle(ctx: RequestContext, request: AlterPartitionRequest) -> AlterPartitionResponse:
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return AlterPartitionResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    controller = ctx.active_controller
    if controller is None:
        return AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER)
    return await controller.alter_partition(request)
