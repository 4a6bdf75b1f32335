"""DescribeCluster (60): the cluster id, the controller and the brokers, and on request the cluster operations the
principal may do (every supported one when authorization is off, as Kafka answers)."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from samsa.security.acl import AclOperation, ResourceType

from ..context import CLUSTER_NAME, OPERATIONS_NOT_ASKED, RequestContext


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    store = ctx.services.metadata_store
    operations = OPERATIONS_NOT_ASKED
    if request.include_cluster_authorized_operations:  # Kafka lists none to a principal that may not Describe
        may_describe = ctx.authorize_cluster(AclOperation.DESCRIBE)
        operations = ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME) if may_describe else 0
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        endpoint_type=request.endpoint_type,
        cluster_id=store.cluster_id(),
        controller_id=store.controller_id(),
        brokers=[
            DescribeClusterBroker(n.broker_id, n.host, n.port, n.rack)
            for n in store.alive_brokers(ctx.connection.listener)
        ],
        cluster_authorized_operations=operations,
    )
