"""TxnOffsetCommit (28): a transactional producer commits a group's offsets inside its transaction (KIP-98; the
consumer's generation and member since v3, KIP-447). The transaction coordinator must know the producer's
``__consumer_offsets`` partition (AddOffsetsToTxn first) and its epoch; the group coordinator keeps the offsets
pending until the transaction's marker. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v3."""

from __future__ import annotations

from samsa.coordinator import OffsetAndMetadata
from samsa.protocol import ErrorCode
from samsa.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

from ..context import RequestContext


async def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    offsets = {
        TopicPartition(topic.name, p.partition_index): OffsetAndMetadata(
            p.committed_offset,
            p.committed_leader_epoch,
            p.committed_metadata or "",
            ctx.services.clock.milliseconds(),
        )
        for topic in request.topics
        for p in topic.partitions
    }
    error = ErrorCode.NONE
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    errors: dict[TopicPartition, ErrorCode]
    if error is not ErrorCode.NONE:
        errors = dict.fromkeys(offsets, error)
    else:  # Kafka answers the unreadable topics' partitions TOPIC_AUTHORIZATION_FAILED, and commits the rest
        unreadable = {
            t
            for t in {tp.topic for tp in offsets}
            if not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, t)
        }
        errors = dict.fromkeys(
            (tp for tp in offsets if tp.topic in unreadable), ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        readable = {tp: o for tp, o in offsets.items() if tp.topic not in unreadable}
        if readable:
            errors.update(await _commit(ctx, request, readable))
    by_topic: dict[str, list[TxnOffsetCommitResponsePartition]] = {}
    for tp in offsets:  # in the request's order
        by_topic.setdefault(tp.topic, []).append(
            TxnOffsetCommitResponsePartition(tp.partition, int(errors[tp]))
        )
    return TxnOffsetCommitResponse(topics=[TxnOffsetCommitResponseTopic(n, ps) for n, ps in by_topic.items()])


async def _commit(
    ctx: RequestContext, request: TxnOffsetCommitRequest, offsets: dict[TopicPartition, OffsetAndMetadata]
) -> dict[TopicPartition, ErrorCode]:
    """The group's status on every partition when it is not NONE (loading, not this broker's: Kafka's group
    coordinator asks it first), else the transaction's error, else the commit's errors."""
    groups = ctx.services.group_coordinator
    error = groups.group_status(request.group_id)
    if error is ErrorCode.NONE:
        error = _transaction_error(ctx, request)
    if error is not ErrorCode.NONE:
        return dict.fromkeys(offsets, error)
    return await groups.commit_txn_offsets(
        request.group_id,
        request.producer_id,
        request.member_id,
        request.generation_id,
        request.group_instance_id,
        offsets,
    )


def _transaction_error(ctx: RequestContext, request: TxnOffsetCommitRequest) -> ErrorCode:
    """The producer's epoch and its AddOffsetsToTxn, as the transaction coordinator knows them (this broker
    coordinates both on a broker alone)."""
    coordinator = ctx.services.transaction_coordinator
    if coordinator is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    partition = ctx.services.group_coordinator.partition_for(request.group_id).partition
    error, meta = coordinator.metadata(request.transactional_id)
    if error is ErrorCode.NOT_COORDINATOR:
        return (
            ErrorCode.NONE
        )  # the transaction coordinator is another broker's: the group coordinator decides
    if meta is None:
        return (
            error
            if error is not ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
            else ErrorCode.INVALID_PRODUCER_ID_MAPPING
        )
    if meta.producer_id != request.producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != request.producer_epoch:
        return ErrorCode.PRODUCER_FENCED if ctx.api_version >= 3 else ErrorCode.INVALID_PRODUCER_EPOCH
    if (CONSUMER_OFFSETS_TOPIC, partition) not in meta.partitions:
        return ErrorCode.INVALID_TXN_STATE
    return ErrorCode.NONE
