"""EndTxn (26): commit or abort the producer's transaction. The answer comes once PrepareCommit/PrepareAbort is
in ``__transaction_state``; the markers and CompleteX follow (``samsa.transaction.coordinator``).
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return EndTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coordinator = ctx.services.transaction_coordinator
    if coordinator is None:
        return EndTxnResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = await coordinator.end_transaction(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        request.committed,
        ctx.api_version >= 2,
    )
    return EndTxnResponse(error_code=error)
