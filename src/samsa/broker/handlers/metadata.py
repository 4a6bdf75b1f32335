"""Metadata (3): brokers, the controller, and every requested topic with its partitions' leaders and ISRs.

Topics asked for by name that do not exist are created first when the request and ``auto.create.topics.enable``
both allow it (as Kafka does), else answered with UNKNOWN_TOPIC_OR_PARTITION. The answer comes from the broker's
metadata store (``metadata_store``): alone, what this broker hosts; in cluster mode what the controller last sent,
with the addresses of the listener the request came in on. A newly created topic is LEADER_NOT_AVAILABLE until
its leaders are elected, a partition whose leader is down LEADER_NOT_AVAILABLE with leader -1. A cluster broker
that has not heard from the controller since it started holds the request until it has (``_catalog_wait_s``), as
Kafka serves no request before it has registered: a provisional answer, each topic LEADER_NOT_AVAILABLE without
partitions, made librdkafka's consumer groups take the topic for gone and rebalance (seen in the nemesis). Past
that wait it answers so: with the brokers ZooKeeper has registered (read at its start and again whenever they
change), never with an empty broker list, a registered broker left out, or UNKNOWN_TOPIC_OR_PARTITION for a topic
that exists. On request (v8+), each topic's and (v8-10) the cluster's
operations the principal may do: every supported one when authorization is off, as Kafka answers.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode
from samsa.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import is_internal

from ..context import CLUSTER_NAME, OPERATIONS_NOT_ASKED, RequestContext

if TYPE_CHECKING:
    from samsa.cluster.metadata_cache import PartitionInfo

    from ..metadata_store import MetadataStore


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    store = ctx.services.metadata_store
    if not store.catalog_known():
        await store.wait_for_catalog(_catalog_wait_s(ctx))
    # every topic: v0 with an empty list, v1+ with null
    every = request.topics is None or (ctx.api_version == 0 and request.topics == [])
    names = sorted(store.topics()) if every else [t.name for t in request.topics or [] if t.name is not None]
    if every:  # a listing shows only the topics the principal may describe, with no denial logged
        names = [n for n in names if ctx.may(AclOperation.DESCRIBE, ResourceType.TOPIC, n)]
    allow_create = (request.allow_auto_topic_creation if ctx.api_version >= 4 else True) and not every
    if store.catalog_known():
        topics = [await _authorized_topic(ctx, store, name, allow_create, every) for name in names]
    else:  # a starting cluster broker, leaders not yet sent (``MetadataStore.catalog_known``)
        topics = [MetadataResponseTopic(error_code=ErrorCode.LEADER_NOT_AVAILABLE, name=n) for n in names]
    if request.include_topic_authorized_operations:
        topics = [_with_operations(ctx, topic) for topic in topics]
    cluster_operations = OPERATIONS_NOT_ASKED
    if request.include_cluster_authorized_operations:
        cluster_operations = ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
    return MetadataResponse(
        brokers=[
            MetadataResponseBroker(n.broker_id, n.host, n.port, n.rack)
            for n in store.alive_brokers(ctx.connection.listener)
        ],
        cluster_id=store.cluster_id(),
        controller_id=store.controller_id(),
        topics=topics,
        cluster_authorized_operations=cluster_operations,
    )


def _catalog_wait_s(ctx: RequestContext) -> float:
    """How long a starting cluster broker holds a Metadata request for the controller's first UpdateMetadata. It
    serves only once registered (``Broker.start``), and the controller reaches a new registration at once, unless
    there is no controller: one is elected within a session (``zookeeper.session.timeout.ms``) of the last one's
    end. Bounded by a client's request timeout (30 s in Java)."""
    session_s = int(ctx.services.config.get("zookeeper.session.timeout.ms")) / 1000
    return min(session_s * 1.5 + 2, 25.0)


def _with_operations(ctx: RequestContext, topic: MetadataResponseTopic) -> MetadataResponseTopic:
    if topic.error_code != ErrorCode.NONE or topic.name is None:
        return topic
    operations = ctx.authorized_operations(ResourceType.TOPIC, topic.name)
    return dataclasses.replace(topic, topic_authorized_operations=operations)


async def _authorized_topic(
    ctx: RequestContext, store: MetadataStore, name: str, allow_create: bool, listed: bool
) -> MetadataResponseTopic:
    """A named topic needs Describe (else TOPIC_AUTHORIZATION_FAILED); its auto-creation needs Create on the
    cluster or the topic (else TOPIC_AUTHORIZATION_FAILED, as Kafka answers)."""
    if ctx.services.authorizer is None:  # authorization off: no check, no extra catalog lookup
        return await _topic(store, name, allow_create)
    if not listed and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        return MetadataResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name)
    if (
        allow_create
        and not store.partitions_of(name)
        and ctx.services.config.get("auto.create.topics.enable")
    ) and not (
        ctx.may(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
        or ctx.authorize(AclOperation.CREATE, ResourceType.TOPIC, name)
    ):
        return MetadataResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name)
    return await _topic(store, name, allow_create)


async def _topic(store: MetadataStore, name: str, allow_create: bool) -> MetadataResponseTopic:
    partitions = store.partitions_of(name)
    if not partitions:
        if not allow_create:
            return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
        created = await store.auto_create_topic(name)
        partitions = store.partitions_of(name) if created.ok else []
        if not partitions:
            error = created.error if not created.ok else ErrorCode.LEADER_NOT_AVAILABLE
            return MetadataResponseTopic(error_code=error, name=name, topic_id=store.topic_id(name))
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=name,
        topic_id=store.topic_id(name),
        is_internal=is_internal(name),
        partitions=[_partition(info, store) for info in partitions],
    )


def _partition(info: PartitionInfo, store: MetadataStore) -> MetadataResponsePartition:
    alive = store.is_alive(info.leader)
    return MetadataResponsePartition(
        error_code=ErrorCode.NONE if alive else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=info.tp.partition,
        leader_id=info.leader if alive else -1,
        leader_epoch=info.leader_epoch,
        replica_nodes=list(info.replicas),
        isr_nodes=list(info.isr),
        offline_replicas=list(info.offline_replicas),
    )
