"""InitProducerId (22): hand a producer its id and epoch.

Non-transactional producers get a fresh producer id (epoch 0) each time; a producer re-initialising with its
current id and epoch (KIP-360) gets the epoch bumped. Ids come from ``ProducerIdManager``: unique for this broker
across restarts. Sequence checking per partition (duplicate and gap detection) is the idempotence work of the
consumer-groups-and-delivery issue; transactional ids are refused until transactions exist.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

from ..context import RequestContext

API_KEY = 22
VERSIONS = (0, 4)
IMPLEMENTED = VERSIONS
MAX_EPOCH = 32767


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        return InitProducerIdResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    ids = ctx.broker.producer_ids
    if request.producer_id >= 0 and request.producer_epoch >= 0 and request.producer_epoch < MAX_EPOCH - 1:
        return InitProducerIdResponse(
            error_code=ErrorCode.NONE,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch + 1,
        )
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=ids.next_id(), producer_epoch=0)
