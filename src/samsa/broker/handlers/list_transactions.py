"""ListTransactions (66): the transactional ids this broker coordinates, filtered by state names, producer ids
and (v1, KIP-994) the minimum time a transaction has been open (kafka-transactions.sh list, find-hanging).
Unknown state names come back in ``unknown_state_filters`` and match nothing."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
    TransactionState,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.transaction.state import TransactionState as State

from ..context import RequestContext


async def handle(ctx: RequestContext, request: ListTransactionsRequest) -> ListTransactionsResponse:
    coordinator = ctx.services.transaction_coordinator
    if coordinator is None:
        return ListTransactionsResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    unknown = coordinator.unknown_state_filters(request.state_filters)
    if unknown and len(unknown) == len(request.state_filters):
        return ListTransactionsResponse(unknown_state_filters=unknown)
    known = [s for s in request.state_filters if s not in unknown]
    now = ctx.services.clock.milliseconds()
    listed = [
        meta
        for meta in coordinator.list_transactions(known, request.producer_id_filters)
        if (
            request.duration_filter < 0
            or (meta.state is State.ONGOING and now - meta.start_ms >= request.duration_filter)
        )
        and ctx.may(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, meta.transactional_id)
    ]
    return ListTransactionsResponse(
        unknown_state_filters=unknown,
        transaction_states=[
            TransactionState(meta.transactional_id, meta.producer_id, meta.state.kafka_name)
            for meta in listed
        ],
    )
