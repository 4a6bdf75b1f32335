"""OffsetForLeaderEpoch (23): where a leader epoch ends in the leader's log (KIP-101/279).

Clients ask it to check their position after a leader change (a position past the end of its epoch means the log
was truncated under them); followers may ask it too. Answered by the leader with Kafka's ``endOffsetFor``: the
largest epoch at or below the one asked and the offset where the next epoch starts (the log end for the latest);
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when the caller's current leader epoch is older / newer than ours. A
principal with ClusterAction on the cluster (a follower) may ask about every topic; any other needs Describe on
the topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.topic_partition import TopicPartition

from ..context import CLUSTER_NAME, RequestContext


async def handle(ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    manager = ctx.services.replica_manager
    topics = []
    # a broker (ClusterAction) may ask about any topic; a client needs Describe on each (KIP-320)
    every = ctx.may(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    for topic in request.topics:
        if not every and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.topic):
            denied = [
                EpochEndOffset(ErrorCode.TOPIC_AUTHORIZATION_FAILED, p.partition, -1, -1)
                for p in topic.partitions
            ]
            topics.append(OffsetForLeaderTopicResult(topic.topic, denied))
            continue
        answers = []
        for p in topic.partitions:
            error, epoch, end_offset = manager.offset_for_leader_epoch(
                TopicPartition(topic.topic, p.partition), p.current_leader_epoch, p.leader_epoch
            )
            answers.append(EpochEndOffset(error, p.partition, epoch, end_offset))
        topics.append(OffsetForLeaderTopicResult(topic.topic, answers))
    return OffsetForLeaderEpochResponse(topics=topics)
