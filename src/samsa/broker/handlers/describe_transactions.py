"""DescribeTransactions (65): the state of transactional ids this broker coordinates (kafka-transactions.sh
describe). An id of another coordinator is NOT_COORDINATOR, an unknown one TRANSACTIONAL_ID_NOT_FOUND."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    TopicData,
    TransactionState,
)
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(
        transaction_states=[_one(ctx, tid) for tid in request.transactional_ids]
    )


def _one(ctx: RequestContext, transactional_id: str) -> TransactionState:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return TransactionState(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, transactional_id)
    coordinator = ctx.services.transaction_coordinator
    if coordinator is None:
        return TransactionState(ErrorCode.COORDINATOR_NOT_AVAILABLE, transactional_id)
    error, meta = coordinator.metadata(transactional_id)
    if meta is None:
        return TransactionState(int(error), transactional_id)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return TransactionState(
        error_code=ErrorCode.NONE,
        transactional_id=transactional_id,
        transaction_state=meta.state.kafka_name,
        transaction_timeout_ms=meta.timeout_ms,
        transaction_start_time_ms=meta.start_ms,
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        topics=[TopicData(topic, partitions) for topic, partitions in by_topic.items()],
    )
