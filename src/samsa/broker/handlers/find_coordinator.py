"""FindCoordinator (10): name the broker that coordinates a group (always this one: the single-broker default).

Creates ``__consumer_offsets`` on first use, as Kafka does. v4+ asks for several keys at once. Key type 0 is a
group, 1 a transactional id (answered the same way; transactions themselves are refused elsewhere).
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

from ..context import RequestContext

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    keys = request.coordinator_keys if ctx.api_version >= 4 else [request.key]
    answers = [_find(ctx, request.key_type, key) for key in keys]
    if ctx.api_version >= 4:
        return FindCoordinatorResponse(coordinators=answers)
    one = answers[0]
    return FindCoordinatorResponse(
        error_code=one.error_code,
        error_message=one.error_message,
        node_id=one.node_id,
        host=one.host,
        port=one.port,
    )


def _find(ctx: RequestContext, key_type: int, key: str) -> Coordinator:
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _error(key, ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}")
    if key_type == GROUP_KEY_TYPE and not key:
        return _error(key, ErrorCode.INVALID_REQUEST, "The group id must not be empty.")
    broker = ctx.broker
    error = broker.group_coordinator.ensure_offsets_topic()
    if error is not ErrorCode.NONE:
        return _error(key, error, None)
    host, port = broker.advertised()
    return Coordinator(key=key, node_id=broker.node_id, host=host, port=port, error_code=ErrorCode.NONE)


def _error(key: str, error: ErrorCode, message: str | None) -> Coordinator:
    return Coordinator(key=key, node_id=-1, host="", port=-1, error_code=error, error_message=message)
