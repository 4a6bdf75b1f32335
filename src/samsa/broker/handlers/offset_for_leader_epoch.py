"""OffsetForLeaderEpoch (23): where a leader epoch ends in the leader's log (KIP-101/279).

Clients ask it to check their position after a leader change (a position past the end of its epoch means the log
was truncated under them); followers may ask it too. Answered by the leader with Kafka's ``endOffsetFor``: the
largest epoch at or below the one asked and the offset where the next epoch starts (the log end for the latest);
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when the caller's current leader epoch is older / newer than ours.
"""

from __future__ import annotations

from samsa.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from samsa.topic_partition import TopicPartition

from ..context import RequestContext


async def handle(ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    manager = ctx.services.replica_manager
    topics = []
    for topic in request.topics:
        answers = []
        for p in topic.partitions:
            error, epoch, end_offset = manager.offset_for_leader_epoch(
                TopicPartition(topic.topic, p.partition), p.current_leader_epoch, p.leader_epoch
            )
            answers.append(EpochEndOffset(error, p.partition, epoch, end_offset))
        topics.append(OffsetForLeaderTopicResult(topic.topic, answers))
    return OffsetForLeaderEpochResponse(topics=topics)
