"""CreatePartitions (37): grow a topic's partition count, the new partitions on the brokers the request names or
placed by the broker; asking for fewer or as many is INVALID_PARTITIONS, a bad placement
INVALID_REPLICA_ASSIGNMENT; a topic the principal may not Alter TOPIC_AUTHORIZATION_FAILED."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext
from .create_topics import MAX_PARTITIONS_PER_REQUEST


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    store = ctx.services.metadata_store
    existing = {t.name: len(store.partitions_of(t.name)) for t in request.topics}
    added = sum(max(t.count - existing[t.name], 0) for t in request.topics)
    if added > MAX_PARTITIONS_PER_REQUEST:
        message = f"Excessively large number of partitions per request (limit {MAX_PARTITIONS_PER_REQUEST})."
        return CreatePartitionsResponse(
            results=[
                CreatePartitionsTopicResult(t.name, ErrorCode.POLICY_VIOLATION, message)
                for t in request.topics
            ]
        )
    results = []
    for topic in request.topics:
        if not ctx.authorize(AclOperation.ALTER, ResourceType.TOPIC, topic.name):
            message = "The topic authorization is failed."
            results.append(
                CreatePartitionsTopicResult(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, message)
            )
            continue
        assignments = None if topic.assignments is None else [a.broker_ids for a in topic.assignments]
        outcome = await store.create_partitions(
            topic.name, topic.count, assignments, validate_only=request.validate_only
        )
        results.append(CreatePartitionsTopicResult(topic.name, outcome.error, outcome.message))
    return CreatePartitionsResponse(results=results)
