"""CreatePartitions (37): grow a topic's partition count; asking for fewer or as many is INVALID_PARTITIONS."""

from __future__ import annotations

from samsa.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)

from .. import topic_admin
from ..context import RequestContext

API_KEY = 37
VERSIONS = (0, 3)
IMPLEMENTED = VERSIONS


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    results = []
    for topic in request.topics:
        outcome = topic_admin.add_partitions(
            ctx.broker, topic.name, topic.count, validate_only=request.validate_only
        )
        results.append(CreatePartitionsTopicResult(topic.name, outcome.error, outcome.message))
    return CreatePartitionsResponse(results=results)
