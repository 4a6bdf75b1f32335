"""FindCoordinator (10): name the broker that coordinates a group.

The leader of the group's ``__consumer_offsets`` partition (``abs(hashCode(key)) % partitions``) as the metadata
store knows it: alone, this broker; in cluster mode, from the metadata cache, COORDINATOR_NOT_AVAILABLE while that
partition has no live leader. Creates ``__consumer_offsets`` on first use, as Kafka does (in a cluster with
``offsets.topic.replication.factor`` replicas: more than the live brokers leaves it uncreated, as in Kafka, and
says why: in the answer's error message, and at ERROR in the log once a minute per broker, not per request). v4+
asks for several keys at once. Key type 0 is a group; key type 1 a transactional id, answered with the leader of
its ``__transaction_state`` partition (created on first use the same way, with the ``transaction.state.log.*``
settings).
"""

from __future__ import annotations

import logging

from samsa.log_throttle import LogThrottle
from samsa.protocol import ErrorCode
from samsa.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.topic_partition import TopicPartition

from ..context import RequestContext
from ..metadata_store import leader_of

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

OFFSETS_TOPIC_LOG_INTERVAL_MS = 60_000
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1

log = logging.getLogger(__name__)
_offsets_topic_unmade = LogThrottle(
    OFFSETS_TOPIC_LOG_INTERVAL_MS
)  # keyed by node id (brokers in one process)


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
    if key_type == TRANSACTION_KEY_TYPE:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return _error(key, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    elif not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return _error(key, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    store = ctx.services.metadata_store
    if key_type == TRANSACTION_KEY_TYPE:
        return await _find_transaction_coordinator(ctx, key)
    error = await store.ensure_offsets_topic()
    partitions = store.partitions_of(CONSUMER_OFFSETS_TOPIC)
    if error is not ErrorCode.NONE or not partitions:
        message = _why_no_offsets_topic(ctx) if ctx.api_version >= 1 else None
        return _error(
            key, error if error is not ErrorCode.NONE else ErrorCode.COORDINATOR_NOT_AVAILABLE, message
        )
    tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, partition_for(key, len(partitions)))
    node = leader_of(store, tp, ctx.connection.listener)
    if node is None:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    return Coordinator(
        key=key, node_id=node.broker_id, host=node.host, port=node.port, error_code=ErrorCode.NONE
    )


async def _find_transaction_coordinator(ctx: RequestContext, transactional_id: str) -> Coordinator:
    from samsa.transaction.log_format import TRANSACTION_STATE_TOPIC, partition_for

    store = ctx.services.metadata_store
    error = await store.ensure_transaction_topic()
    partitions = store.partitions_of(TRANSACTION_STATE_TOPIC)
    if error is not ErrorCode.NONE or not partitions:
        return _error(transactional_id, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    count = int(ctx.services.config.get("transaction.state.log.num.partitions"))
    tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition_for(transactional_id, count))
    node = leader_of(store, tp, ctx.connection.listener)
    if node is None:
        return _error(transactional_id, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    return Coordinator(
        key=transactional_id,
        node_id=node.broker_id,
        host=node.host,
        port=node.port,
        error_code=ErrorCode.NONE,
    )


def _why_no_offsets_topic(ctx: RequestContext) -> str | None:
    """Why ``__consumer_offsets`` cannot be created, when the reason is too few live brokers for
    ``offsets.topic.replication.factor`` in a cluster; logged at ERROR once a minute per broker."""
    services = ctx.services
    store = services.metadata_store
    if services.zk_support is None or not store.catalog_known():
        return None
    live = len(store.alive_brokers(ctx.connection.listener))
    wanted = int(services.config.get("offsets.topic.replication.factor"))
    if live >= wanted:
        return None
    reason = (
        f"Number of alive brokers '{live}' does not meet the required replication factor '{wanted}' for the "
        "offsets topic (configured via 'offsets.topic.replication.factor'). Consumer groups wait until enough "
        "brokers are up; while the cluster is starting this is expected."
    )
    held = _offsets_topic_unmade.due(services.clock.monotonic_ms(), services.node_id)
    if held is not None:
        log.error("%s%s", reason, LogThrottle.held_back(held))
    return reason


def _error(key: str, error: ErrorCode, message: str | None) -> Coordinator:
    return Coordinator(key=key, node_id=-1, host="", port=-1, error_code=error, error_message=message)
