"""AddPartitionsToTxn (24): a producer adds partitions to its open transaction, or (v4+, KIP-890) a broker asks
whether partitions are in one (``verify_only``).

v0-v3 carry one transaction (the client form); v4+ a list of them, each answered on its own. Every partition of
a transaction gets the same answer (Kafka's), except the verify-only form, answered per partition. Nothing is
written for a refused request. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
)
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    if ctx.api_version >= 4 and not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return AddPartitionsToTxnResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)  # brokers' form
    if ctx.api_version < 4:
        results = await _one(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            request.v3_and_below_topics,
            False,
        )
        return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=results)
    answers = [
        AddPartitionsToTxnResult(
            transactional_id=txn.transactional_id,
            topic_results=await _one(
                ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics, txn.verify_only
            ),
        )
        for txn in request.transactions
    ]
    return AddPartitionsToTxnResponse(results_by_transaction=answers)


async def _one(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: list[AddPartitionsToTxnTopic],
    verify_only: bool,
) -> list[AddPartitionsToTxnTopicResult]:
    partitions = [(topic.name, index) for topic in topics for index in topic.partitions]
    coordinator = ctx.services.transaction_coordinator
    denied = _denied(ctx, transactional_id, topics)
    if denied is not None:
        errors = denied
    elif coordinator is None:
        errors = dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    elif verify_only:
        errors = coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
    else:
        store = ctx.services.metadata_store
        unknown = [tp for tp in partitions if not 0 <= tp[1] < len(store.partitions_of(tp[0]))]
        if unknown:  # Kafka: the unknown ones UNKNOWN_TOPIC_OR_PARTITION, the rest OPERATION_NOT_ATTEMPTED
            errors = {
                tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in partitions
            }
        else:
            error = await coordinator.add_partitions(
                transactional_id, producer_id, producer_epoch, partitions, ctx.api_version >= 2
            )
            errors = dict.fromkeys(partitions, error)
    by_topic: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append(AddPartitionsToTxnPartitionResult(index, int(error)))
    return [AddPartitionsToTxnTopicResult(name, results) for name, results in by_topic.items()]


def _denied(
    ctx: RequestContext, transactional_id: str, topics: list[AddPartitionsToTxnTopic]
) -> dict[tuple[str, int], ErrorCode] | None:
    """Kafka's checks: Write on the transactional id (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    Write on each topic (the denied ones TOPIC_AUTHORIZATION_FAILED, the rest OPERATION_NOT_ATTEMPTED)."""
    partitions = [(topic.name, index) for topic in topics for index in topic.partitions]
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    refused = {t.name for t in topics if not ctx.authorize(AclOperation.WRITE, ResourceType.TOPIC, t.name)}
    if not refused:
        return None
    return {
        tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] in refused else ErrorCode.OPERATION_NOT_ATTEMPTED
        for tp in partitions
    }
