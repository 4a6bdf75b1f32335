"""InitProducerId (22): hand a producer its id and epoch.

Without a transactional id Kafka always answers with a fresh producer id at epoch 0, whatever id and epoch the
request carries (a producer that wants a new epoch for the same id bumps it itself and starts its sequences at 0;
the partition's producer state accepts that). Ids come from ``ProducerIdManager``: unique for this broker across
restarts, so they never collide with producer ids still in the logs; in cluster mode from ZooKeeper's
``/latest_producer_id_block``, unique across the cluster, a block fetched ahead (COORDINATOR_LOAD_IN_PROGRESS, which
producers retry, when none is left and ZooKeeper does not answer). Sequence checking per partition (duplicates,
gaps, stale epochs) is ``samsa.storage.producer_state``. Transactional ids are refused until transactions exist.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

from ..context import RequestContext
from ..producer_ids import ProducerIdsUnavailableError


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is None and not ctx.authorize_idempotent_write():
        return InitProducerIdResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if request.transactional_id is not None:
        return InitProducerIdResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    try:
        producer_id = await ctx.services.metadata_store.next_producer_id()
    except ProducerIdsUnavailableError:  # ZooKeeper away and the block used up: the producer retries
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)
