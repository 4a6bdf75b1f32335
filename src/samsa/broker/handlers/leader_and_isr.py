"""LeaderAndIsr (4): the controller tells this broker which partitions it leads and which it follows (cluster mode).

Fenced as Kafka does: a broker epoch older than this broker's registration is STALE_BROKER_EPOCH, a controller
epoch older than the newest seen STALE_CONTROLLER_EPOCH, both for the whole request. Per partition, a leader epoch
no newer than the one this broker holds is STALE_CONTROLLER_EPOCH (ignored), a partition this broker is no
replica of UNKNOWN_TOPIC_OR_PARTITION; otherwise the log is created if missing (with the topic's overrides from
ZooKeeper) and the broker becomes leader (no truncation; the new epoch starts at its log end) or follower (its
fetcher starts from its log end). A broker without ``zookeeper.connect`` has no controller and answers
STALE_CONTROLLER_EPOCH.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
from samsa.security.acl import AclOperation

from ..context import RequestContext


async def handle(ctx: RequestContext, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return LeaderAndIsrResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    zk_support, fenced = ctx.fence_controller_request(request.controller_epoch, request.broker_epoch)
    if zk_support is None or fenced is not ErrorCode.NONE:
        return LeaderAndIsrResponse(error_code=fenced)
    return await zk_support.leader_and_isr(request)
