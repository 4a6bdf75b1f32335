"""Metadata (3): brokers, the controller, and every requested topic with its partitions' leaders and ISRs.

Topics asked for by name that do not exist are created first when the request and ``auto.create.topics.enable``
both allow it (as Kafka does), else answered with UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from samsa.storage.topic import TopicPartition, is_internal

from ..context import RequestContext
from ..topic_admin import auto_create_topic, topic_id


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    broker = ctx.broker
    host, port = broker.advertised()
    rack = broker.config.get("broker.rack")
    if request.topics is None:
        names = sorted(broker.replica_manager.topics())
    else:
        names = [t.name for t in request.topics if t.name is not None]
    # v0 asks for every topic with an empty list; v1+ with null
    if ctx.api_version == 0 and request.topics == []:
        names = sorted(broker.replica_manager.topics())
    allow_create = request.allow_auto_topic_creation if ctx.api_version >= 4 else True
    topics = [_describe(ctx, name, allow_create and request.topics is not None) for name in names]
    return MetadataResponse(
        brokers=[MetadataResponseBroker(broker.node_id, host, port, rack)],
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        topics=topics,
    )


def _describe(ctx: RequestContext, name: str, allow_create: bool) -> MetadataResponseTopic:
    broker = ctx.broker
    partitions = broker.replica_manager.partitions_of(name)
    if not partitions and allow_create:
        created = auto_create_topic(broker, name)
        if created.error is not ErrorCode.NONE:
            return MetadataResponseTopic(error_code=created.error, name=name, topic_id=topic_id(name))
        partitions = broker.replica_manager.partitions_of(name)
    if not partitions:
        return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=name,
        topic_id=topic_id(name),
        is_internal=is_internal(name),
        partitions=[_partition(ctx, tp) for tp in partitions],
    )


def _partition(ctx: RequestContext, tp: TopicPartition) -> MetadataResponsePartition:
    partition = ctx.broker.replica_manager.partition(tp)
    if partition is None:
        return MetadataResponsePartition(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE, partition_index=tp.partition, leader_id=-1
        )
    return MetadataResponsePartition(
        error_code=ErrorCode.NONE,
        partition_index=tp.partition,
        leader_id=partition.leader_id,
        leader_epoch=partition.leader_epoch,
        replica_nodes=list(partition.replicas),
        isr_nodes=sorted(partition.isr),
    )
