"""Metadata (3): brokers, the controller, and every requested topic with its partitions' leaders and ISRs.

Topics asked for by name that do not exist are created first when the request and ``auto.create.topics.enable``
both allow it (as Kafka does), else answered with UNKNOWN_TOPIC_OR_PARTITION. Alone, a broker describes what it
hosts; in cluster mode every broker answers from its metadata cache (what the controller last sent), with the
addresses of the listener the request came in on: a newly created topic is LEADER_NOT_AVAILABLE until the
controller has elected its leaders, a partition whose leader is down LEADER_NOT_AVAILABLE with leader -1.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

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

ZERO_UUID = uuid.UUID(int=0)

if TYPE_CHECKING:
    from samsa.cluster.metadata_cache import PartitionInfo

    from ..zk_broker import ZkBroker


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    broker = ctx.broker
    if broker.zk_broker is not None:
        return await _from_cache(ctx, request, broker.zk_broker)
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


async def _from_cache(ctx: RequestContext, request: MetadataRequest, zk_broker: ZkBroker) -> MetadataResponse:
    cache = zk_broker.metadata
    every = request.topics is None or (ctx.api_version == 0 and request.topics == [])
    names = sorted(cache.topics()) if every else [t.name for t in request.topics or [] if t.name is not None]
    allow_create = (request.allow_auto_topic_creation if ctx.api_version >= 4 else True) and not every
    topics = [await _cached_topic(ctx, zk_broker, name, allow_create) for name in names]
    brokers = []
    for node in cache.alive_brokers():
        address = node.address(ctx.connection.listener)
        if address is not None:
            brokers.append(MetadataResponseBroker(node.broker_id, address[0], address[1], node.rack))
    return MetadataResponse(
        brokers=brokers,
        cluster_id=ctx.broker.cluster_id,
        controller_id=cache.controller_id if cache.controller_id is not None else -1,
        topics=topics,
    )


async def _cached_topic(
    ctx: RequestContext, zk_broker: ZkBroker, name: str, allow_create: bool
) -> MetadataResponseTopic:
    from ..cluster_admin import create_topic  # cluster mode only

    partitions = zk_broker.metadata.partitions_of(name)
    if not partitions:
        if not allow_create or not ctx.broker.config.get("auto.create.topics.enable") or is_internal(name):
            return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
        created = await create_topic(ctx.broker, zk_broker, name, -1, -1, {})
        error = (
            ErrorCode.LEADER_NOT_AVAILABLE
            if created.error in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)
            else created.error
        )
        return MetadataResponseTopic(error_code=error, name=name)
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=name,
        topic_id=zk_broker.metadata.topic_ids.get(name, ZERO_UUID),
        is_internal=is_internal(name),
        partitions=[_cached_partition(info, zk_broker) for info in partitions],
    )


def _cached_partition(info: PartitionInfo, zk_broker: ZkBroker) -> MetadataResponsePartition:
    alive = info.leader in zk_broker.metadata.brokers
    return MetadataResponsePartition(
        error_code=ErrorCode.NONE if alive else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=info.tp.partition,
        leader_id=info.leader if alive else -1,
        leader_epoch=info.leader_epoch,
        replica_nodes=list(info.replicas),
        isr_nodes=list(info.isr),
        offline_replicas=list(info.offline_replicas),
    )
