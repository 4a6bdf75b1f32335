"""DescribeCluster (60): the cluster id, the controller and the brokers."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    store = ctx.services.metadata_store
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        endpoint_type=request.endpoint_type,
        cluster_id=store.cluster_id(),
        controller_id=store.controller_id(),
        brokers=[
            DescribeClusterBroker(n.broker_id, n.host, n.port, n.rack)
            for n in store.alive_brokers(ctx.connection.listener)
        ],
    )
