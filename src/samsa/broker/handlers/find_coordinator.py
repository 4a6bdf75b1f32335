"""FindCoordinator (10): name the broker that coordinates a group.

The leader of the group's ``__consumer_offsets`` partition (``abs(hashCode(key)) % partitions``) as the metadata
store knows it: alone, this broker; in cluster mode, from the metadata cache, COORDINATOR_NOT_AVAILABLE while that
partition has no live leader. Creates ``__consumer_offsets`` on first use, as Kafka does (in a cluster with
``offsets.topic.replication.factor`` replicas: more than the live brokers leaves it uncreated, as in Kafka). v4+ asks for several keys at once. Key type 0 is a
group, 1 a transactional id (answered the same way; transactions themselves are refused elsewhere).
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from samsa.topic_partition import TopicPartition

from ..context import RequestContext
from ..metadata_store import leader_of

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    keys = request.coordinator_keys if ctx.api_version >= 4 else [request.key]
    answers = [await _find(ctx, request.key_type, key) for key in keys]
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


def _invalid(key_type: int, key: str) -> Coordinator | None:
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _error(key, ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}")
    if key_type == GROUP_KEY_TYPE and not key:
        return _error(key, ErrorCode.INVALID_REQUEST, "The group id must not be empty.")
    return None


async def _find(ctx: RequestContext, key_type: int, key: str) -> Coordinator:
    from samsa.coordinator.offsets_topic import partition_for

    invalid = _invalid(key_type, key)
    if invalid is not None:
        return invalid
    store = ctx.services.metadata_store
    error = await store.ensure_offsets_topic()
    partitions = store.partitions_of(CONSUMER_OFFSETS_TOPIC)
    if error is not ErrorCode.NONE or not partitions:
        return _error(
            key, error if error is not ErrorCode.NONE else ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        )
    tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, partition_for(key, len(partitions)))
    node = leader_of(store, tp, ctx.connection.listener)
    if node is None:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    return Coordinator(
        key=key, node_id=node.broker_id, host=node.host, port=node.port, error_code=ErrorCode.NONE
    )


def _error(key: str, error: ErrorCode, message: str | None) -> Coordinator:
    return Coordinator(key=key, node_id=-1, host="", port=-1, error_code=error, error_message=message)
