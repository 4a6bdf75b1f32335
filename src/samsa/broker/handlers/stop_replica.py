"""StopReplica (5): the controller tells this broker to stop a replica, and to delete it with ``delete_partition``
(a deleted topic, a replica moved away). Cluster mode only.

Fenced as LeaderAndIsr; per partition the leader epoch must be -1 or -2 (no check, a topic being deleted) or at
least the one this broker holds, else FENCED_LEADER_EPOCH. The fetcher stops, waiting requests are answered, and
with delete the log directory is renamed for deletion.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.stop_replica import (
    StopReplicaPartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
)
from samsa.security.acl import AclOperation
from samsa.storage import StorageError
from samsa.topic_partition import TopicPartition

from ..context import RequestContext


async def handle(ctx: RequestContext, request: StopReplicaRequest) -> StopReplicaResponse:
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return StopReplicaResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    zk_support, fenced = ctx.fence_controller_request(request.controller_epoch, request.broker_epoch)
    if zk_support is None or fenced is not ErrorCode.NONE:
        return StopReplicaResponse(error_code=fenced)
    manager = ctx.services.replica_manager
    errors = []
    for topic in request.topic_states:
        for state in topic.partition_states:
            tp = TopicPartition(topic.topic_name, state.partition_index)
            partition = manager.partition(tp)
            error = ErrorCode.NONE
            if partition is not None and 0 <= state.leader_epoch < partition.leader_epoch:
                error = ErrorCode.FENCED_LEADER_EPOCH
            else:
                try:
                    manager.stop_replica(tp, state.delete_partition)
                    zk_support.replica_stopped(tp, state.delete_partition)
                except (StorageError, OSError) as exc:
                    error = ErrorCode.KAFKA_STORAGE_ERROR
                    zk_support.log_storage_failure(tp, exc)
            errors.append(StopReplicaPartitionError(tp.topic, tp.partition, error))
    return StopReplicaResponse(error_code=ErrorCode.NONE, partition_errors=errors)
