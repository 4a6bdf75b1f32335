"""AllocateProducerIds (67): a broker asks the controller for a block of producer ids (cluster mode, KIP-730).

Kafka's ZooKeeper-mode brokers ask it from ``inter.broker.protocol.version`` 3.0 on, instead of writing
``/latest_producer_id_block`` themselves as Samsa's brokers do; the controller takes the block from that znode, so
the ids of both kinds never overlap. Served by the controller; any other broker answers NOT_CONTROLLER, and the
asking broker retries with the controller ``/controller`` names.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.allocate_producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)

from ..context import RequestContext


async def handle(ctx: RequestContext, request: AllocateProducerIdsRequest) -> AllocateProducerIdsResponse:
    controller = ctx.active_controller
    if controller is None:
        return AllocateProducerIdsResponse(error_code=ErrorCode.NOT_CONTROLLER)
    return await controller.allocate_producer_ids(request)
