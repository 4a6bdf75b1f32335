"""DeleteTopics (20): delete topics by name; their directories are renamed ``-delete`` and removed later.

In cluster mode the topic is marked in ZooKeeper (``/admin/delete_topics``) and the controller deletes it on every
replica; the answer comes once this broker's metadata no longer has the topic, or REQUEST_TIMED_OUT after the
request's timeout (the deletion still completes).
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    store = ctx.services.metadata_store
    results = []
    for name in request.topic_names:
        if not ctx.authorize(AclOperation.DELETE, ResourceType.TOPIC, name):
            results.append(DeletableTopicResult(name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        outcome = await store.delete_topic(name, request.timeout_ms)
        results.append(
            DeletableTopicResult(name=name, error_code=outcome.error, error_message=outcome.message)
        )
    return DeleteTopicsResponse(responses=results)
