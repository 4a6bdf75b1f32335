"""DescribeProducers (61): the active producers of partitions this broker leads, from each log's producer state
(kafka-transactions.sh describe-producers, find-hanging): id, epoch, last sequence and timestamp, the coordinator
epoch of its last marker, and the first offset of its open transaction (-1: none). A partition led elsewhere is
NOT_LEADER_OR_FOLLOWER; a topic the principal may not read, TOPIC_AUTHORIZATION_FAILED (Kafka checks Read)."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import TopicPartition

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DescribeProducersRequest) -> DescribeProducersResponse:
    topics = []
    for topic in request.topics:
        if not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, topic.name):
            partitions = [
                PartitionResponse(p, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic.partition_indexes
            ]
        else:
            partitions = [_partition(ctx, TopicPartition(topic.name, p)) for p in topic.partition_indexes]
        topics.append(TopicResponse(topic.name, partitions))
    return DescribeProducersResponse(topics=topics)


def _partition(ctx: RequestContext, tp: TopicPartition) -> PartitionResponse:
    found = ctx.services.replica_manager.leader_partition(tp)
    if isinstance(found, ErrorCode):
        return PartitionResponse(tp.partition, found)
    producers = [
        ProducerState(
            producer_id=pid,
            producer_epoch=entry.producer_epoch,
            last_sequence=entry.last_seq,
            last_timestamp=entry.last_timestamp,
            coordinator_epoch=entry.coordinator_epoch,
            current_txn_start_offset=entry.current_txn_first_offset,
        )
        for pid, entry in sorted(found.log.producer_state.producers.items())
    ]
    return PartitionResponse(tp.partition, ErrorCode.NONE, active_producers=producers)
