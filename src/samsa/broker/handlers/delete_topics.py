"""DeleteTopics (20): delete topics by name; their directories are renamed ``-delete`` and removed later.

In cluster mode the topic is marked in ZooKeeper (``/admin/delete_topics``) and the controller deletes it on every
replica; the answer comes once this broker's metadata no longer has the topic, or REQUEST_TIMED_OUT after the
request's timeout (the deletion still completes).
"""

from __future__ import annotations

from samsa.protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

from .. import topic_admin
from ..context import RequestContext


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    if ctx.broker.zk_broker is not None:
        from ..cluster_admin import delete_topic  # cluster mode only

        outcomes = [
            (n, await delete_topic(ctx.broker, ctx.broker.zk_broker, n, request.timeout_ms))
            for n in request.topic_names
        ]
        return DeleteTopicsResponse(
            responses=[
                DeletableTopicResult(name=n, error_code=o.error, error_message=o.message) for n, o in outcomes
            ]
        )
    results = []
    for name in request.topic_names:
        outcome = topic_admin.delete_topic(ctx.broker, name)
        results.append(
            DeletableTopicResult(name=name, error_code=outcome.error, error_message=outcome.message)
        )
    return DeleteTopicsResponse(responses=results)
