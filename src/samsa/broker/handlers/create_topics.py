"""CreateTopics (19): create topics with partition counts and topic configs; validate_only checks only."""

from __future__ import annotations

from samsa.new_topic import NewTopic
from samsa.protocol import ErrorCode
from samsa.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from samsa.security.acl import AclOperation, ResourceType

from ..context import CLUSTER_NAME, RequestContext

MAX_PARTITIONS_PER_REQUEST = 10_000
"""Kafka's controller limit: a request that would create more partitions is refused whole (POLICY_VIOLATION),
so one request cannot stall the broker creating billions of partition directories."""


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    if _partitions_requested(ctx, request) > MAX_PARTITIONS_PER_REQUEST:
        message = f"Excessively large number of partitions per request (limit {MAX_PARTITIONS_PER_REQUEST})."
        return CreateTopicsResponse(
            topics=[_refused(t.name, ErrorCode.POLICY_VIOLATION, message) for t in request.topics]
        )
    results = []
    seen: set[str] = set()
    for topic in request.topics:
        if topic.name in seen:
            message = f"Create topics request from client contains duplicate topic {topic.name}"
            results.append(_refused(topic.name, ErrorCode.INVALID_REQUEST, message))
            continue
        seen.add(topic.name)
        if not _may_create(ctx, topic.name):
            results.append(
                _refused(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            )
            continue
        results.append(await _create(ctx, request, topic))
    return CreateTopicsResponse(topics=results)


def _may_create(ctx: RequestContext, name: str) -> bool:
    """Create on the cluster, else on the topic (Kafka's order: the cluster check logs no denial)."""
    return ctx.may(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME) or ctx.authorize(
        AclOperation.CREATE, ResourceType.TOPIC, name
    )


async def _create(
    ctx: RequestContext, request: CreateTopicsRequest, topic: CreatableTopic
) -> CreatableTopicResult:
    """One topic of the request: its partitions and replication from the counts or from explicit assignments."""
    partitions, replication = topic.num_partitions, topic.replication_factor
    if topic.assignments:
        if partitions != -1 or replication != -1:
            message = "Both numPartitions or replicationFactor and replicasAssignments were set."
            return _refused(topic.name, ErrorCode.INVALID_REQUEST, message)
        partitions = len(topic.assignments)
        replication = len(topic.assignments[0].broker_ids)
    configs = {c.name: c.value for c in topic.configs if c.value is not None}
    placement = {a.partition_index: list(a.broker_ids) for a in topic.assignments} or None
    store = ctx.services.metadata_store
    outcome = await store.create_topic(
        NewTopic(topic.name, partitions, replication, configs, placement),
        validate_only=request.validate_only,
        timeout_ms=request.timeout_ms,
    )
    known = store.partitions_of(topic.name) if outcome.ok else []
    return CreatableTopicResult(
        name=topic.name,
        topic_id=store.topic_id(topic.name),
        error_code=outcome.error,
        error_message=outcome.message,
        num_partitions=len(known) if known else -1,
        replication_factor=len(known[0].replicas) if known else -1,
    )


def _refused(name: str, code: ErrorCode, message: str) -> CreatableTopicResult:
    return CreatableTopicResult(name=name, error_code=code, error_message=message)


def _partitions_requested(ctx: RequestContext, request: CreateTopicsRequest) -> int:
    default = int(ctx.services.config.get("num.partitions"))
    total = 0
    for topic in request.topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += default
        else:
            total += max(topic.num_partitions, 0)
    return total
