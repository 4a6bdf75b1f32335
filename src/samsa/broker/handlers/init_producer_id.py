"""InitProducerId (22): hand a producer its id and epoch.

Without a transactional id Kafka always answers with a fresh producer id at epoch 0, whatever id and epoch the
request carries (a producer that wants a new epoch for the same id bumps it itself and starts its sequences at 0;
the partition's producer state accepts that). Ids come from ``ProducerIdManager``: unique for this broker across
restarts, so they never collide with producer ids still in the logs; in cluster mode from ZooKeeper's
``/latest_producer_id_block``, unique across the cluster, a block fetched ahead (COORDINATOR_LOAD_IN_PROGRESS, which
producers retry, when none is left and ZooKeeper does not answer). Sequence checking per partition (duplicates,
gaps, stale epochs) is ``samsa.storage.producer_state``. With a transactional id the transaction coordinator
answers (``samsa.transaction``): the id's producer id with its epoch bumped, the previous producer fenced, an open
transaction aborted first (CONCURRENT_TRANSACTIONS until then). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below
v4, as Kafka answers older clients.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext
from ..producer_ids import ProducerIdsUnavailableError


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is None and not ctx.authorize_idempotent_write():
        return InitProducerIdResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if request.transactional_id is not None:
        if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return InitProducerIdResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return await _transactional(ctx, request)
    try:
        producer_id = await ctx.services.metadata_store.next_producer_id()
    except ProducerIdsUnavailableError:  # ZooKeeper away and the block used up: the producer retries
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)


async def _transactional(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    coordinator = ctx.services.transaction_coordinator
    if coordinator is None:
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not request.transactional_id:
        return InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST)
    expected = None
    if ctx.api_version >= 3 and request.producer_id >= 0:
        expected = (request.producer_id, request.producer_epoch)
    try:
        error, producer_id, epoch = await coordinator.init_producer_id(
            request.transactional_id, request.transaction_timeout_ms, expected, ctx.api_version >= 4
        )
    except ProducerIdsUnavailableError:
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    if error is not ErrorCode.NONE:
        return InitProducerIdResponse(error_code=error)
    return InitProducerIdResponse(error_code=error, producer_id=producer_id, producer_epoch=epoch)
