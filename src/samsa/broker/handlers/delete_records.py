"""DeleteRecords (21): advance partitions' log start offsets; -1 means up to the high watermark."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import TopicPartition

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    topics = []
    for topic in request.topics:
        partitions = []
        allowed = ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, topic.name)
        for p in topic.partitions:
            code, low = (
                ctx.services.replica_manager.delete_records(
                    TopicPartition(topic.name, p.partition_index), p.offset
                )
                if allowed
                else (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)
            )
            partitions.append(DeleteRecordsPartitionResult(p.partition_index, low, code))
        topics.append(DeleteRecordsTopicResult(topic.name, partitions))
    return DeleteRecordsResponse(topics=topics)
