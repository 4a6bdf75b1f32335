"""OffsetDelete (47): remove a group's committed offsets for some partitions (KIP-496).

Refused per partition with GROUP_SUBSCRIBED_TO_TOPIC while a member of the group subscribes to the topic; a group
with members whose subscriptions cannot be read answers NON_EMPTY_GROUP; an unknown group GROUP_ID_NOT_FOUND.
Delete on the group is needed (else GROUP_AUTHORIZATION_FAILED for the request), and Read on each topic (else
TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import TopicPartition

from ..context import RequestContext


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    readable = {
        t.name for t in request.topics if ctx.authorize(AclOperation.READ, ResourceType.TOPIC, t.name)
    }
    wanted = [
        TopicPartition(t.name, p.partition_index)
        for t in request.topics
        if t.name in readable
        for p in t.partitions
    ]
    error, results = ctx.services.group_coordinator.delete_offsets(request.group_id, wanted)
    if error is not ErrorCode.NONE:
        return OffsetDeleteResponse(error_code=error)
    denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return OffsetDeleteResponse(
        error_code=ErrorCode.NONE,
        topics=[
            OffsetDeleteResponseTopic(
                t.name,
                [
                    OffsetDeleteResponsePartition(
                        p.partition_index,
                        results[TopicPartition(t.name, p.partition_index)] if t.name in readable else denied,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )
