"""AddOffsetsToTxn (25): a producer adds a group's ``__consumer_offsets`` partition to its transaction, before
TxnOffsetCommit; the partition is the group coordinator's for the group. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
below v2."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC

from ..context import RequestContext


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    coordinator = ctx.services.transaction_coordinator
    if coordinator is None:
        return AddOffsetsToTxnResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    partition = ctx.services.group_coordinator.partition_for(request.group_id).partition
    error = await coordinator.add_partitions(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [(CONSUMER_OFFSETS_TOPIC, partition)],
        ctx.api_version >= 2,
    )
    return AddOffsetsToTxnResponse(error_code=error)
