"""CreatePartitions (37): grow a topic's partition count; asking for fewer or as many is INVALID_PARTITIONS."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)

from .. import topic_admin
from ..context import RequestContext
from .create_topics import MAX_PARTITIONS_PER_REQUEST


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    zk_broker = ctx.broker.zk_broker
    if zk_broker is not None:
        existing = {t.name: len(zk_broker.metadata.partitions_of(t.name)) for t in request.topics}
    else:
        existing = {t.name: len(ctx.broker.replica_manager.partitions_of(t.name)) for t in request.topics}
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
        if zk_broker is not None:
            from ..cluster_admin import add_partitions  # cluster mode only

            outcome = await add_partitions(
                ctx.broker, zk_broker, topic.name, topic.count, validate_only=request.validate_only
            )
        else:
            outcome = topic_admin.add_partitions(
                ctx.broker, topic.name, topic.count, validate_only=request.validate_only
            )
        results.append(CreatePartitionsTopicResult(topic.name, outcome.error, outcome.message))
    return CreatePartitionsResponse(results=results)
