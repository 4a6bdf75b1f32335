"""CreateTopics (19): create topics with partition counts and topic configs; validate_only checks only."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.create_topics import (
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)

from .. import topic_admin
from ..context import RequestContext

MAX_PARTITIONS_PER_REQUEST = 10_000
"""Kafka's controller limit: a request that would create more partitions is refused whole (POLICY_VIOLATION),
so one request cannot stall the broker creating billions of partition directories."""


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    if _partitions_requested(ctx, request) > MAX_PARTITIONS_PER_REQUEST:
        message = f"Excessively large number of partitions per request (limit {MAX_PARTITIONS_PER_REQUEST})."
        return CreateTopicsResponse(
            topics=[
                CreatableTopicResult(
                    name=t.name, error_code=ErrorCode.POLICY_VIOLATION, error_message=message
                )
                for t in request.topics
            ]
        )
    results = []
    seen: set[str] = set()
    for topic in request.topics:
        if topic.name in seen:
            results.append(
                CreatableTopicResult(
                    name=topic.name,
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=f"Create topics request from client contains duplicate topic {topic.name}",
                )
            )
            continue
        seen.add(topic.name)
        partitions, replication = topic.num_partitions, topic.replication_factor
        if topic.assignments:
            if partitions != -1 or replication != -1:
                results.append(
                    CreatableTopicResult(
                        name=topic.name,
                        error_code=ErrorCode.INVALID_REQUEST,
                        error_message="Both numPartitions or replicationFactor and replicasAssignments were set.",
                    )
                )
                continue
            partitions = len(topic.assignments)
            replication = len(topic.assignments[0].broker_ids)
        configs = {c.name: c.value for c in topic.configs if c.value is not None}
        outcome = topic_admin.create_topic(
            ctx.broker, topic.name, partitions, replication, configs, validate_only=request.validate_only
        )
        ok = outcome.error is ErrorCode.NONE
        results.append(
            CreatableTopicResult(
                name=topic.name,
                topic_id=topic_admin.topic_id(topic.name),
                error_code=outcome.error,
                error_message=outcome.message,
                num_partitions=len(ctx.broker.replica_manager.partitions_of(topic.name)) if ok else -1,
                replication_factor=1 if ok else -1,
            )
        )
    return CreateTopicsResponse(topics=results)


def _partitions_requested(ctx: RequestContext, request: CreateTopicsRequest) -> int:
    default = int(ctx.broker.config.get("num.partitions"))
    total = 0
    for topic in request.topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += default
        else:
            total += max(topic.num_partitions, 0)
    return total
