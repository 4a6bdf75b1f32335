"""OffsetCommit (8): store a group's consumed positions (with metadata) in __consumer_offsets.

Every partition gets its own error code; a group-level refusal (unknown member, stale generation, a rebalance
completing) is repeated on every partition. A commit is answered once the ISR of the group's ``__consumer_offsets``
partition has it, and only then shows in OffsetFetch (``samsa.coordinator.coordinator``). v0 carries no generation
(a standalone commit); v1 a per-partition commit timestamp; v2-4 a retention time (an explicit expiry); v6+ the
leader epoch of the committed offset.
"""

from __future__ import annotations

from samsa.coordinator import OffsetAndMetadata
from samsa.protocol import ErrorCode
from samsa.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import TopicPartition

from ..context import RequestContext


def _readable(ctx: RequestContext, topic: str) -> bool:
    return ctx.authorize(AclOperation.READ, ResourceType.TOPIC, topic)


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    now = ctx.services.clock.milliseconds()
    version = ctx.api_version
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    for topic in request.topics:
        for p in topic.partitions:
            commit_ts = p.commit_timestamp if version == 1 and p.commit_timestamp >= 0 else now
            retention = request.retention_time_ms if 2 <= version <= 4 else -1
            offsets[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch if version >= 6 else -1,
                metadata=p.committed_metadata or "",
                commit_timestamp=commit_ts,
                expire_timestamp=commit_ts + retention if retention >= 0 else -1,
            )
    # Kafka's checks: Read on the group, then Read on each topic (an unreadable one answers
    # TOPIC_AUTHORIZATION_FAILED), then the group's status for the others, then the commit
    denied = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in offsets if not _readable(ctx, tp.topic)}
    allowed = {tp: o for tp, o in offsets.items() if tp not in denied}
    if request.group_id is None:
        errors = dict.fromkeys(offsets, ErrorCode.INVALID_GROUP_ID)
    elif not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        errors = dict.fromkeys(offsets, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    else:
        errors = {**await _commit(ctx, request, request.group_id, allowed), **denied}
    topics: list[OffsetCommitResponseTopic] = []
    for topic in request.topics:
        partitions = [
            OffsetCommitResponsePartition(
                p.partition_index, errors.get(TopicPartition(topic.name, p.partition_index), ErrorCode.NONE)
            )
            for p in topic.partitions
        ]
        topics.append(OffsetCommitResponseTopic(topic.name, partitions))
    return OffsetCommitResponse(topics=topics)


async def _commit(
    ctx: RequestContext,
    request: OffsetCommitRequest,
    group_id: str,
    offsets: dict[TopicPartition, OffsetAndMetadata],
) -> dict[TopicPartition, ErrorCode]:
    """The group's status on every partition when it is not NONE (loading, not this broker's), else the commit's
    errors."""
    coordinator = ctx.services.group_coordinator
    status = coordinator.group_status(group_id)
    if status is not ErrorCode.NONE:
        return dict.fromkeys(offsets, status)
    version = ctx.api_version
    return await coordinator.commit_offsets(
        group_id,
        request.member_id if version >= 1 else "",
        request.generation_id_or_member_epoch if version >= 1 else -1,
        request.group_instance_id,
        offsets,
    )
