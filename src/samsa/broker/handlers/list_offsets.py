"""ListOffsets (2): earliest (-2), latest (-1), max timestamp (-3) or the first offset at or after a timestamp."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage import FetchIsolation
from samsa.storage.topic import TopicPartition

from ..context import RequestContext

LOWEST_SPECIAL_TIMESTAMP = -5  # LATEST_TIERED


async def handle(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    isolation = (
        FetchIsolation.TXN_COMMITTED if request.isolation_level == 1 else FetchIsolation.HIGH_WATERMARK
    )
    topics = []
    for topic in request.topics:
        partitions = []
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
            partitions = [
                ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
                )
                for p in topic.partitions
            ]
            topics.append(ListOffsetsTopicResponse(topic.name, partitions))
            continue
        for p in topic.partitions:
            # below the special values (-1..-5) Kafka searches as for any timestamp: from the first record
            timestamp = p.timestamp if p.timestamp >= LOWEST_SPECIAL_TIMESTAMP else 0
            result = ctx.services.replica_manager.list_offset(
                TopicPartition(topic.name, p.partition_index), timestamp, isolation
            )
            partitions.append(
                ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=result.error,
                    timestamp=result.timestamp,
                    offset=result.offset,
                    leader_epoch=result.leader_epoch,
                )
            )
        topics.append(ListOffsetsTopicResponse(topic.name, partitions))
    return ListOffsetsResponse(topics=topics)
