"""UpdateMetadata (6): the controller tells this broker the live brokers and partition states (cluster mode).

Fenced as Kafka does: an older controller epoch than the newest seen is STALE_CONTROLLER_EPOCH, a broker epoch
older than this broker's registration STALE_BROKER_EPOCH (-1: any). A broker without ``zookeeper.connect`` has no
controller and answers STALE_CONTROLLER_EPOCH to any.

Each one applied is logged at INFO (as Kafka's state-change log does): which controller sent it, the live brokers it
names, and how many partition states it carries. A partition whose leader is not among those brokers is answered
with leader -1 until the next one.
"""

from __future__ import annotations

import logging

from samsa.cluster.metadata_cache import BrokerNode, PartitionInfo
from samsa.protocol import ErrorCode
from samsa.protocol.messages.update_metadata import (
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from samsa.security.acl import AclOperation
from samsa.topic_partition import TopicPartition

from ..context import RequestContext

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return UpdateMetadataResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    zk_support, fenced = ctx.fence_controller_request(request.controller_epoch, request.broker_epoch)
    if zk_support is None or fenced is not ErrorCode.NONE:
        return UpdateMetadataResponse(error_code=fenced)
    cache = zk_support.metadata
    cache.set_brokers(
        request.controller_id,
        request.controller_epoch,
        [
            BrokerNode(b.id, {e.listener: (e.host, e.port) for e in b.endpoints}, b.rack or None)
            for b in request.live_brokers
        ],
    )
    for state in request.ungrouped_partition_states:
        cache.set_partition(_info(state.topic_name, state))
    for topic in request.topic_states:
        for state in topic.partition_states:
            cache.set_partition(_info(topic.topic_name, state), topic.topic_id)
    log.info(
        "metadata from controller %d (epoch %d): live brokers %s, %d partition states",
        request.controller_id,
        request.controller_epoch,
        sorted(b.id for b in request.live_brokers),
        len(request.ungrouped_partition_states) + sum(len(t.partition_states) for t in request.topic_states),
    )
    return UpdateMetadataResponse(error_code=ErrorCode.NONE)


def _info(topic: str, state: UpdateMetadataPartitionState) -> PartitionInfo:
    return PartitionInfo(
        TopicPartition(topic, state.partition_index),
        state.leader,
        state.leader_epoch,
        tuple(state.replicas),
        tuple(state.isr),
        tuple(state.offline_replicas),
        state.zk_version,
    )
