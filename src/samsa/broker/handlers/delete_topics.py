"""DeleteTopics (20): delete topics by name; their directories are renamed ``-delete`` and removed later."""

from __future__ import annotations

from samsa.protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

from .. import topic_admin
from ..context import RequestContext


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    results = []
    for name in request.topic_names:
        outcome = topic_admin.delete_topic(ctx.broker, name)
        results.append(
            DeletableTopicResult(name=name, error_code=outcome.error, error_message=outcome.message)
        )
    return DeleteTopicsResponse(responses=results)
