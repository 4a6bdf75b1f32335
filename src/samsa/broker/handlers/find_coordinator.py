"""FindCoordinator (10): name the broker that coordinates a group.

Alone, that is this broker. In cluster mode it is the leader of the group's ``__consumer_offsets`` partition
(``abs(hashCode(key)) % partitions``), from the metadata cache; COORDINATOR_NOT_AVAILABLE while that partition
has no live leader. Creates ``__consumer_offsets`` on first use, as Kafka does (in a cluster with
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

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    keys = request.coordinator_keys if ctx.api_version >= 4 else [request.key]
    if ctx.broker.zk_broker is not None:
        answers = [await _find_in_cluster(ctx, request.key_type, key) for key in keys]
    else:
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


def _invalid(key_type: int, key: str) -> Coordinator | None:
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _error(key, ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}")
    if key_type == GROUP_KEY_TYPE and not key:
        return _error(key, ErrorCode.INVALID_REQUEST, "The group id must not be empty.")
    return None


def _find(ctx: RequestContext, key_type: int, key: str) -> Coordinator:
    invalid = _invalid(key_type, key)
    if invalid is not None:
        return invalid
    broker = ctx.broker
    error = broker.group_coordinator.ensure_offsets_topic()
    if error is not ErrorCode.NONE:
        return _error(key, error, None)
    host, port = broker.advertised()
    return Coordinator(key=key, node_id=broker.node_id, host=host, port=port, error_code=ErrorCode.NONE)


def _error(key: str, error: ErrorCode, message: str | None) -> Coordinator:
    return Coordinator(key=key, node_id=-1, host="", port=-1, error_code=error, error_message=message)


async def _find_in_cluster(ctx: RequestContext, key_type: int, key: str) -> Coordinator:
    from samsa.coordinator.offsets_topic import partition_for

    from ..cluster_admin import create_topic  # cluster mode only

    invalid = _invalid(key_type, key)
    if invalid is not None:
        return invalid
    zk_broker = ctx.broker.zk_broker
    assert zk_broker is not None
    partitions = zk_broker.metadata.partitions_of(CONSUMER_OFFSETS_TOPIC)
    if not partitions:
        config = ctx.broker.config
        await create_topic(
            ctx.broker,
            zk_broker,
            CONSUMER_OFFSETS_TOPIC,
            int(config.get("offsets.topic.num.partitions")),
            int(config.get("offsets.topic.replication.factor")),
            {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config.get("offsets.topic.segment.bytes")),
            },
        )
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, partition_for(key, len(partitions)))
    node = zk_broker.metadata.leader_node(tp)
    address = node.address(ctx.connection.listener) if node is not None else None
    if node is None or address is None:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    return Coordinator(
        key=key, node_id=node.broker_id, host=address[0], port=address[1], error_code=ErrorCode.NONE
    )
