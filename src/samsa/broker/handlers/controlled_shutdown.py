"""ControlledShutdown (7): a stopping broker asks the controller to move its leaderships away (cluster mode).

Served by the controller (``samsa.cluster.elections``): the answer lists the partitions the broker still leads;
empty means it may stop. A broker that is not the controller (or a single broker) answers
STALE_CONTROLLER_EPOCH, as Kafka does for this API; the stopping broker retries with the controller it then knows.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    RemainingPartition,
)
from samsa.security.acl import AclOperation

from ..context import RequestContext


async def handle(ctx: RequestContext, request: ControlledShutdownRequest) -> ControlledShutdownResponse:
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return ControlledShutdownResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    controller = ctx.active_controller
    if controller is None:
        return ControlledShutdownResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
    error, remaining = await controller.elections.controlled_shutdown(request.broker_id, request.broker_epoch)
    return ControlledShutdownResponse(
        error_code=error,
        remaining_partitions=[RemainingPartition(tp.topic, tp.partition) for tp in remaining],
    )
